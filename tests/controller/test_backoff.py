"""The exponential backoff shared by the work queue and the list/watch loop."""

from __future__ import annotations

import random

import pytest

from controller.backoff import ExponentialBackoff
from controller.kube.listwatch import watch_backoff


def test_delays_double_from_the_base_up_to_the_cap() -> None:
    backoff = ExponentialBackoff(base=1, maximum=8)
    assert [backoff.delay(n) for n in range(1, 7)] == [1, 2, 4, 8, 8, 8]
    assert backoff.delay(0) == 1  # no failure yet counts as the first


def test_a_huge_failure_count_is_the_cap_not_an_overflow() -> None:
    assert ExponentialBackoff(base=0.5, maximum=30).delay(10_000) == 30


def test_jitter_stays_within_its_fraction() -> None:
    backoff = ExponentialBackoff(base=2, maximum=100, jitter=0.25, rng=random.Random(7))
    samples = [backoff.delay(3) for _ in range(200)]
    assert all(6 <= s <= 10 for s in samples)
    assert len(set(samples)) > 1


def test_bad_backoff_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="base"):
        ExponentialBackoff(base=0)
    with pytest.raises(ValueError, match="jitter"):
        ExponentialBackoff(jitter=1.5)


def test_the_watch_loops_schedule_starts_at_half_a_second_and_is_capped_at_30_with_jitter() -> None:
    backoff = watch_backoff()
    backoff.rng = random.Random(3)
    first = [backoff.delay(1) for _ in range(100)]
    assert all(0.4 <= d <= 0.6 for d in first) and len(set(first)) > 1
    assert all(24 <= backoff.delay(20) <= 36 for _ in range(100))
