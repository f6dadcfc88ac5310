"""Which watch events of a member are the echoes of our own writes.

Every member write of ours comes back through the member's watch. Planning the FederatedHPA again for it
learns nothing (the pass that wrote it planned from it) and costs a whole reconcile per write. The echo
often arrives before the write's answer has been read, so it cannot be recognised by comparing it with
what the answer put in the cache; it is recognised by what the write was conditional on instead.

Every member write is conditional on the resourceVersion the plan observed (a create, on absence). While
such a write is in flight, the first watch event on that object whose previous state has that version can
only be the write's own: any other change since that version makes the write fail with 409, and a failed
or refused write replans the object anyway. So that event is not news. Only a watch event: a relist
(after the watch expired) reports each object's difference as one change, which may carry others'
changes made after our write along with it (``ListWatch`` asks ``is_echo`` of watch events alone).

A write that ends without its echo having come leaves nothing behind: the answer is noted in the cache,
and the later echo, equal to it, changes nothing. The answer is noted only over the version the write
was conditional on (``ListWatch.apply_local``): an echo, or a later change, already in the cache stays.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

Key = tuple[str, tuple[str, str]]  # (resource, (namespace, name))


class OwnWrites:
    """The member writes in flight and the resourceVersion each is conditional on. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expected: dict[Key, str | None] = {}

    @contextlib.contextmanager
    def writing(self, resource: str, key: tuple[str, str], resource_version: str | None) -> Iterator[None]:
        """Around a write of ``key`` conditional on ``resource_version`` (None: a create)."""
        with self._lock:
            self._expected[(resource, key)] = resource_version
        try:
            yield
        finally:
            with self._lock:
                self._expected.pop((resource, key), None)

    def is_echo(self, resource: str, key: tuple[str, str], old: Mapping[str, Any] | None) -> bool:
        """Whether a change of ``key`` from ``old`` is our write in flight coming back (once per write)."""
        with self._lock:
            if (resource, key) not in self._expected:
                return False
            before = None if old is None else (old.get("metadata") or {}).get("resourceVersion")
            if before != self._expected[(resource, key)]:
                return False
            del self._expected[(resource, key)]
            return True
