"""What one member cluster may cost the controller: every member is a bulkhead with its own budget.

The controller holds every member's cache in one process, so a member that answers too much (a page
that ignores ``limit``, endless ``continue`` tokens, a watch line that never ends, a flood of ADDED
events) or too slowly (a body trickled a byte at a time) must be cut off alone, before it takes the
memory or the threads every other member needs. Each member's caches share one ``MemberBudget``:

- a list page larger than ``page_bytes``, or a watch line longer than ``line_bytes`` without its
  newline, is not read further: the stream is dropped;
- a list page, and a whole watch request, must be read to its end within a deadline (``response_seconds``
  for a page; the watch's own ``timeoutSeconds`` plus slack for a watch), not only within a per-read
  timeout that a trickle of bytes keeps resetting;
- what the member's caches hold together is capped in objects (``objects``) and in bytes
  (``store_bytes``, the compact JSON size of each object as kept, after the trim).

A member over a size cap is *unusable*: its caches give up what they hold, it is observed as unknown
with the cap it broke named, and it is listed again only after a long pause (a member that sends too
much once will do so again at once). A member past a deadline is a failing member like an unreachable
one (backed off, retried). The other members are not touched either way.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.errors import ClusterUnreachableError

MIB = 1024 * 1024


@dataclass(frozen=True)
class Caps:
    """The budget of one member. The defaults leave room for the largest clusters Kubernetes supports
    (150,000 pods, 5,000 nodes) while bounding what a hostile member can take to a few hundred MiB:
    at the project's target scale (docs/scale.md: 10,000 pods per member) a member's caches hold about
    10,500 objects and a page of 500 pods is 2-5 MiB."""

    page_bytes: int = 32 * MIB
    line_bytes: int = 4 * MIB
    response_seconds: float = 60.0
    objects: int = 200_000
    store_bytes: int = 256 * MIB

    def max_pages(self, page_size: int) -> int:
        """The most pages one list may take: as many as the object cap fills, and some short ones more
        (a server may answer fewer items than asked); beyond that, ``continue`` tokens are endless."""
        return self.objects // max(page_size, 1) + 100


UNCAPPED = Caps(
    page_bytes=1 << 40, line_bytes=1 << 40, response_seconds=86_400.0, objects=1 << 40, store_bytes=1 << 40
)
"""For the control plane's own objects: our API server, not a member; no caps that could refuse it."""


class BudgetExceededError(ClusterUnreachableError):
    """The member sent more than its budget allows: what it holds is given up, and it is unknown until
    a later list fits."""


class ResponseDeadlineError(ClusterUnreachableError):
    """The member did not finish an answer within its whole-response deadline (a trickle of bytes)."""


def human(size: int) -> str:
    """A byte count as an operator reads it."""
    return f"{size / MIB:.0f} MiB" if size >= MIB else f"{size / 1024:.0f} KiB"


def object_size(obj: Mapping[str, Any]) -> int:
    """The compact JSON size of a kept (trimmed) object: what the byte cap counts."""
    return len(json.dumps(obj, separators=(",", ":"), default=str))


class MemberBudget:
    """The objects and bytes one member's caches hold, by owner (one list/watch each), against its caps.

    ``check`` asks whether an owner may hold so much (with what the others hold now); ``hold`` records
    it once checked; ``release`` forgets an owner. Thread-safe: the member's list/watch loops share it.
    """

    def __init__(self, cluster: str, caps: Caps | None = None) -> None:
        self.cluster = cluster
        self.caps = caps or Caps()
        self._lock = threading.Lock()
        self._held: dict[str, tuple[int, int]] = {}
        self._objects = 0
        self._bytes = 0

    @property
    def held(self) -> tuple[int, int]:
        """(objects, bytes) held now by all of the member's caches."""
        with self._lock:
            return self._objects, self._bytes

    def check(self, owner: str, objects: int, size: int) -> None:
        """Raise BudgetExceededError when ``owner`` holding ``objects`` objects of ``size`` bytes would
        take the member over a cap."""
        with self._lock:
            before = self._held.get(owner, (0, 0))
            total_objects = self._objects - before[0] + objects
            total_bytes = self._bytes - before[1] + size
        if total_objects > self.caps.objects:
            raise BudgetExceededError(
                self.cluster, f"over its cap of {self.caps.objects} objects ({owner}: {objects})"
            )
        if total_bytes > self.caps.store_bytes:
            raise BudgetExceededError(
                self.cluster,
                f"over its cap of {human(self.caps.store_bytes)} of cached objects ({owner}: {human(size)})",
            )

    def hold(self, owner: str, objects: int, size: int) -> None:
        with self._lock:
            before = self._held.get(owner, (0, 0))
            self._held[owner] = (objects, size)
            self._objects += objects - before[0]
            self._bytes += size - before[1]

    def release(self, owner: str) -> None:
        with self._lock:
            objects, size = self._held.pop(owner, (0, 0))
            self._objects -= objects
            self._bytes -= size

    def page_too_large(self, size: int) -> BudgetExceededError:
        return BudgetExceededError(
            self.cluster, f"a list page over its cap of {human(self.caps.page_bytes)} ({human(size)} read)"
        )

    def line_too_long(self) -> BudgetExceededError:
        return BudgetExceededError(
            self.cluster, f"a watch line over its cap of {human(self.caps.line_bytes)} without a newline"
        )
