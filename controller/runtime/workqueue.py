"""A work queue of object keys, the shape client-go's workqueue made standard for controllers.

Why not a plain queue.Queue: a burst of watch events for one object must cause one reconcile, not one
per event (dedup); two workers must never reconcile the same object at once (an event arriving while
a key is being processed marks it dirty and it is queued again when the worker calls ``done``); a key
that keeps failing must back off exponentially instead of spinning (``add_rate_limited``); a
reconcile that asks to be called again later (a planner's ``requeue_after``, a cron fire) needs a
delayed add that does not occupy a thread while it waits; and a periodic resync of a thousand keys
must not delay the one key a member event just asked for (``add_low``: a second lane, taken only when
the first is empty; a key in it that is then added normally moves to the first lane). A delayed add
may go to either lane when it falls due: a pass that is routine (a periodic optimization) must not
delay a reaction either.

Everything here is thread-safe. Time comes from an injectable monotonic clock so tests need no sleeps.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from controller.backoff import ExponentialBackoff

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """Raised by ``get`` once the queue is shut down and empty of ready work."""


class WorkQueue(Generic[K]):
    """Deduplicating, delay-capable, per-key rate-limited queue of keys (e.g. ``namespace/name``)."""

    def __init__(
        self,
        *,
        backoff: ExponentialBackoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_depth: Callable[[int], None] | None = None,
    ) -> None:
        self._backoff = backoff or ExponentialBackoff()
        self._clock = clock
        self._on_depth = on_depth
        self._cond = threading.Condition()
        self._ready: deque[K] = deque()
        self._low: deque[K] = deque()  # the resync lane: taken only when _ready is empty
        self._in_low: set[K] = set()  # keys waiting in _low (a key promoted out of it stays there, skipped)
        self._dirty: set[K] = set()  # queued, or to be queued again when its processing ends
        self._processing: set[K] = set()
        self._delayed: list[tuple[float, int, K]] = []  # heap of (due, seq, key)
        self._low_due: set[K] = set()  # keys whose pending delayed add goes to the low lane
        self._due: dict[K, float] = {}  # earliest pending delayed add per key
        self._seq = itertools.count()
        self._failures: dict[K, int] = {}
        self._shutting_down = False

    # -- adding -------------------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue ``key`` now, unless it is already waiting; if it is being processed, once more afterwards."""
        with self._cond:
            if self._shutting_down:
                return
            self._add_locked(key)

    def add_low(self, key: K) -> None:
        """Queue ``key`` behind every normally added key (a resync): dedup as ``add``."""
        with self._cond:
            if not self._shutting_down:
                self._add_low_locked(key)

    def add_after(self, key: K, delay_seconds: float, low: bool = False) -> None:
        """Queue ``key`` once ``delay_seconds`` have passed (``low``: in the resync lane); an earlier
        pending delayed add wins."""
        if delay_seconds <= 0:
            if low:
                self.add_low(key)
            else:
                self.add(key)
            return
        with self._cond:
            if self._shutting_down:
                return
            due = self._clock() + delay_seconds
            if key in self._due and self._due[key] <= due:
                return
            self._due[key] = due
            if low:
                self._low_due.add(key)
            else:
                self._low_due.discard(key)
            heapq.heappush(self._delayed, (due, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after its next exponential backoff step; returns the delay chosen."""
        with self._cond:
            self._failures[key] = self._failures.get(key, 0) + 1
            delay = self._backoff.delay(self._failures[key])
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff: call it when a reconcile succeeds."""
        with self._cond:
            self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    # -- taking -------------------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> K | None:
        """Take the next ready key and mark it processing; None when ``timeout`` passes first.

        Raises ShutDown when the queue is shut down (keys still processing are finished by their workers).
        """
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                self._promote_due_locked()
                if self._shutting_down:
                    raise ShutDown()
                key = self._take_locked()
                if key is not None:
                    self._dirty.discard(key)
                    self._processing.add(key)
                    self._report_depth_locked()
                    return key
                wait = self._seconds_to_next_due_locked()
                if deadline is not None:
                    left = deadline - self._clock()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: K) -> None:
        """End processing of ``key``; if it was added meanwhile, it is queued again now."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty and not self._shutting_down:
                self._ready.append(key)
                self._report_depth_locked()
                self._cond.notify()
            self._cond.notify_all()  # wake wait_idle callers

    # -- lifecycle and introspection ----------------------------------------------------------------

    def shut_down(self) -> None:
        """Stop handing out keys; workers' ``get`` raises ShutDown. Keys in flight may still call ``done``."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no key is being processed (graceful shutdown); False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._processing:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def __len__(self) -> int:
        """Keys ready to be taken now (the queue-depth metric)."""
        with self._cond:
            self._promote_due_locked()
            return len(self._ready) + len(self._in_low)

    def pending_delayed(self) -> int:
        with self._cond:
            return len(self._due)

    def next_due_in(self) -> float | None:
        """Seconds until the earliest delayed add is due (0: due now; None: none is pending)."""
        with self._cond:
            return self._seconds_to_next_due_locked()

    def processing(self) -> set[K]:
        with self._cond:
            return set(self._processing)

    # -- internals ----------------------------------------------------------------------------------

    def _take_locked(self) -> K | None:
        if self._ready:
            return self._ready.popleft()
        while self._low:
            key = self._low.popleft()
            if key in self._in_low:
                self._in_low.discard(key)
                return key
        return None

    def _add_locked(self, key: K) -> None:
        if key in self._in_low:  # waiting in the resync lane: it moves up
            self._in_low.discard(key)
            self._ready.append(key)
            self._report_depth_locked()
            self._cond.notify()
            return
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return  # done() queues it again, so one key never runs twice at once
        self._ready.append(key)
        self._report_depth_locked()
        self._cond.notify()

    def _add_low_locked(self, key: K) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._low.append(key)
        self._in_low.add(key)
        self._report_depth_locked()
        self._cond.notify()

    def _promote_due_locked(self) -> None:
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            due, _, key = heapq.heappop(self._delayed)
            if self._due.get(key) != due:
                continue  # superseded by an earlier add_after for the same key
            del self._due[key]
            if key in self._low_due:
                self._low_due.discard(key)
                self._add_low_locked(key)
            else:
                self._add_locked(key)

    def _seconds_to_next_due_locked(self) -> float | None:
        while self._delayed and self._due.get(self._delayed[0][2]) != self._delayed[0][0]:
            heapq.heappop(self._delayed)  # drop superseded entries
        if not self._delayed:
            return None
        return max(0.0, self._delayed[0][0] - self._clock())

    def _report_depth_locked(self) -> None:
        if self._on_depth is not None:
            self._on_depth(len(self._ready) + len(self._in_low))
