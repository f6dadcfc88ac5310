"""At most one run of an action per key per interval, however often it is asked for.

A member whose nodes change many times a second (a flood, or a large fleet's routine churn) asked for a
low-lane pass over every FederatedHPA at each change; passes then followed one another as fast as the
workers could take them. Here the first request runs at once, later ones within the interval are folded
into one run at its end, and requests beyond that are dropped (that run sees their changes too).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable


class Coalescer:
    """Runs ``action`` for a key at most once per ``interval`` seconds; thread-safe."""

    def __init__(self, interval: float = 1.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last: dict[Hashable, float] = {}
        self._pending: dict[Hashable, threading.Timer] = {}

    def request(self, key: Hashable, action: Callable[[], None]) -> None:
        """Run ``action`` now if ``key`` has not run within the interval, else once when it ends."""
        with self._lock:
            if key in self._pending:
                return
            wait = self._last.get(key, float("-inf")) + self.interval - self._monotonic()
            if wait > 0:
                timer = threading.Timer(wait, self._run_pending, args=(key, action))
                timer.daemon = True
                self._pending[key] = timer
                timer.start()
                return
            self._last[key] = self._monotonic()
        action()

    def _run_pending(self, key: Hashable, action: Callable[[], None]) -> None:
        with self._lock:
            if self._pending.get(key) is not threading.current_thread():
                return  # cancelled after the timer fired and before it got the lock
            del self._pending[key]
            self._last[key] = self._monotonic()
        action()

    def cancel(self) -> None:
        """Drop the runs not yet due, and forget what ran (the caller stopped leading, or is shutting
        down): nothing runs for a term that ended, and the next term's first request runs at once."""
        with self._lock:
            for timer in self._pending.values():
                timer.cancel()
            self._pending.clear()
            self._last.clear()
