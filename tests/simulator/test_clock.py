"""The virtual clock: time moves only when the engine says, forward only, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from simulator.clock import VirtualClock

START = datetime(2026, 11, 23, 1, 0, tzinfo=timezone(timedelta(hours=1)))


def test_the_clock_starts_at_t0_in_utc_and_moves_only_when_advanced() -> None:
    clock = VirtualClock(START)
    assert clock.start == datetime(2026, 11, 23, 0, 0, tzinfo=UTC)
    assert clock.now() == clock.start and clock.elapsed_seconds == 0
    clock.advance_to(90)
    assert clock.now() == clock.start + timedelta(seconds=90)
    assert clock.at(30) == clock.start + timedelta(seconds=30)  # asking does not move it
    assert clock.elapsed_seconds == 90


def test_time_never_runs_backwards() -> None:
    clock = VirtualClock(START)
    clock.advance_to(60)
    clock.advance_to(60)
    with pytest.raises(ValueError, match="cannot go back"):
        clock.advance_to(59)


def test_a_naive_start_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        VirtualClock(datetime(2026, 11, 23))
