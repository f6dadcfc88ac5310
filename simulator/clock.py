"""The virtual clock: the simulator's implementation of the Clock port.

Nothing in the simulator or the controller code it drives reads the wall clock, so a run is a pure
function of its scenario: the same file gives the same timeline on every machine.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class VirtualClock:
    """A clock that only moves when the engine advances it."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("the virtual clock needs a timezone-aware start instant")
        self._start = start.astimezone(UTC)
        self._offset_s = 0.0

    @property
    def start(self) -> datetime:
        return self._start

    @property
    def elapsed_seconds(self) -> float:
        """Seconds since the scenario's t=0."""
        return self._offset_s

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._offset_s)

    def at(self, elapsed_seconds: float) -> datetime:
        """The instant ``elapsed_seconds`` after t=0."""
        return self._start + timedelta(seconds=elapsed_seconds)

    def advance_to(self, elapsed_seconds: float) -> None:
        """Move forward to ``elapsed_seconds`` after t=0; time never runs backwards."""
        if elapsed_seconds < self._offset_s:
            raise ValueError(f"the clock cannot go back from {self._offset_s}s to {elapsed_seconds}s")
        self._offset_s = elapsed_seconds
