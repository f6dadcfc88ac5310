"""One timer heap for every cron rule (and anything else keyed), instead of a thread or scheduler per rule.

The reference implementation starts one scheduler per rule; with thousands of rules that is thousands of
goroutines and no ordering between them. Here a single binary heap orders all deadlines; the driver
sleeps until ``next_time()`` and asks ``pop_due(now)`` for what to run. Re-scheduling a key replaces its
deadline; cancelled or replaced entries are dropped lazily when they reach the top, so every operation
is O(log n).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class TimerQueue(Generic[K]):
    """Deadlines by key; one pending deadline per key."""

    def __init__(self) -> None:
        self._heap: list[tuple[datetime, int, K]] = []
        self._live: dict[K, int] = {}  # key -> sequence number of its current heap entry
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def schedule(self, key: K, when: datetime) -> None:
        """Set (or move) ``key``'s deadline to ``when`` (aware datetime)."""
        if when.tzinfo is None:
            raise ValueError(f"timer deadline for {key!r} must be timezone-aware")
        seq = next(self._counter)
        self._live[key] = seq
        # in UTC: Python compares datetimes that share a tzinfo by wall time, which DST makes wrong
        heapq.heappush(self._heap, (when.astimezone(UTC), seq, key))
        if len(self._heap) > 2 * len(self._live) + 64:
            self._compact()

    def cancel(self, key: K) -> None:
        """Forget ``key``'s deadline; unknown keys are fine."""
        self._live.pop(key, None)

    def pop_due(self, now: datetime) -> list[K]:
        """Keys whose deadline is at or before ``now``, earliest first; they are removed from the queue."""
        due: list[K] = []
        while self._heap:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                break
            _, _, key = heapq.heappop(self._heap)
            del self._live[key]
            due.append(key)
        return due

    def next_time(self) -> datetime | None:
        """The earliest pending deadline, or None when nothing is scheduled."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def _compact(self) -> None:
        """Drop replaced and cancelled entries when they outnumber the live ones."""
        self._heap = [entry for entry in self._heap if self._live.get(entry[2]) == entry[1]]
        heapq.heapify(self._heap)

    def _drop_stale(self) -> None:
        while self._heap:
            _, seq, key = self._heap[0]
            if self._live.get(key) == seq:
                return
            heapq.heappop(self._heap)
