"""What one review may cost a worker: a cap on JSON containers, and a memory budget shared by its threads.

Parsing JSON costs memory in proportion to the lists and objects in it, not to its bytes: ``[{}]`` repeated
to fill the 3 MiB body limit is 1.5 million dicts, over 100 MiB once parsed. No FederatedHPA or
CronFederatedHPA within its CRD's limits needs more than about 120,000 containers (tested), even
carried twice on UPDATE with its managedFields and a last-applied copy; a body with more is refused before
it is parsed, from a byte count (braces inside strings are counted too, which only errs towards refusing
bodies no valid object produces).

The budget bounds what the threads of one worker hold at once: a request reserves its body's declared
size before it is read and gives it back when answered, so at most one worst-case body is in flight per
worker while small reviews (a few kilobytes) keep flowing beside it. Under gunicorn the worker's poller
applies the same budget before a request takes a thread (`webhook.prefetch`) and refuses what does not
fit at once, so this one only ever waits when the app is served some other way; a request that cannot
get its share within ``wait`` seconds is answered 503.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

MAX_CONTAINERS = 150_000
"""JSON objects and lists in one body, at most (counted as '{' and '[' bytes)."""
BUDGET_BYTES = 4 * 1024 * 1024
"""Body bytes the threads of one worker hold at once: one body at the 3 MiB limit and room for small ones."""
BUDGET_WAIT_SECONDS = 0.5
"""How long a request waits for its share: under the API server's 5 s admission timeout."""


class TooManyContainers(ValueError):
    """The body holds more JSON lists and objects than any valid review needs."""


class OverBudget(RuntimeError):
    """The worker's memory budget stayed spent for the whole wait."""


def check_containers(body: bytes, limit: int = MAX_CONTAINERS) -> None:
    """Raise TooManyContainers if ``body`` may hold more than ``limit`` JSON lists and objects."""
    found = body.count(b"{") + body.count(b"[")
    if found > limit:
        raise TooManyContainers(
            f"the body holds {found} JSON objects and lists; no review within the CRD limits needs "
            f"more than {limit}"
        )


class MemoryBudget:
    """A per-process allowance of body bytes, reserved before a body is read and returned after."""

    def __init__(self, budget: int = BUDGET_BYTES, wait: float = BUDGET_WAIT_SECONDS) -> None:
        self.budget = budget
        self.wait = wait
        self._free = budget
        self._changed = threading.Condition()

    @contextmanager
    def reserve(self, size: int) -> Iterator[None]:
        """Hold ``size`` bytes (at most the whole budget) for the duration; raise OverBudget if they do
        not come free within ``wait`` seconds."""
        share = max(0, min(size, self.budget))
        with self._changed:
            if not self._changed.wait_for(lambda: self._free >= share, timeout=self.wait):
                raise OverBudget(f"the webhook is busy with large reviews (waited {self.wait:g} s)")
            self._free -= share
        try:
            yield
        finally:
            with self._changed:
                self._free += share
                self._changed.notify_all()

    @property
    def free(self) -> int:
        with self._changed:
            return self._free
