"""TimerQueue: one heap for every rule's deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.runtime.timers import TimerQueue

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def t(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_pop_due_returns_keys_in_deadline_order() -> None:
    q: TimerQueue[str] = TimerQueue()
    q.schedule("c", t(30))
    q.schedule("a", t(10))
    q.schedule("b", t(20))
    assert q.next_time() == t(10)
    assert q.pop_due(t(25)) == ["a", "b"]
    assert q.next_time() == t(30)
    assert len(q) == 1
    assert q.pop_due(t(29)) == []
    assert q.pop_due(t(30)) == ["c"]
    assert q.next_time() is None


def test_reschedule_replaces_the_deadline() -> None:
    q: TimerQueue[str] = TimerQueue()
    q.schedule("a", t(10))
    q.schedule("a", t(50))
    assert q.pop_due(t(20)) == []
    assert q.next_time() == t(50)
    assert q.pop_due(t(50)) == ["a"]


def test_cancel_removes_and_unknown_cancel_is_fine() -> None:
    q: TimerQueue[str] = TimerQueue()
    q.schedule("a", t(10))
    q.cancel("a")
    q.cancel("never")
    assert "a" not in q
    assert q.next_time() is None
    assert q.pop_due(t(100)) == []


def test_deadlines_in_different_zones_are_ordered_by_instant() -> None:
    la = ZoneInfo("America/Los_Angeles")
    q: TimerQueue[str] = TimerQueue()
    first_pass = datetime(2026, 11, 1, 1, 30, tzinfo=la)  # 08:30 UTC
    second_pass = datetime(2026, 11, 1, 1, 10, tzinfo=la, fold=1)  # 09:10 UTC
    q.schedule("late", second_pass)
    q.schedule("early", first_pass)
    assert q.pop_due(datetime(2026, 11, 1, 10, tzinfo=UTC)) == ["early", "late"]


def test_naive_deadline_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        TimerQueue[str]().schedule("a", datetime(2026, 1, 1))


def test_many_reschedules_keep_the_heap_small() -> None:
    q: TimerQueue[int] = TimerQueue()
    for i in range(10_000):
        q.schedule(i % 10, t(i))
    assert len(q) == 10
    assert len(q._heap) < 200
    assert q.pop_due(t(10_000)) == list(range(10))


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["schedule", "cancel", "pop"]), st.integers(0, 8), st.integers(0, 1000)),
        max_size=60,
    )
)
def test_matches_a_plain_dict_model(ops: list[tuple[str, int, int]]) -> None:
    q: TimerQueue[int] = TimerQueue()
    model: dict[int, datetime] = {}
    for op, key, seconds in ops:
        if op == "schedule":
            q.schedule(key, t(seconds))
            model[key] = t(seconds)
        elif op == "cancel":
            q.cancel(key)
            model.pop(key, None)
        else:
            now = t(seconds)
            due = q.pop_due(now)
            expected = sorted((k for k, when in model.items() if when <= now), key=lambda k: model[k])
            assert sorted(due) == sorted(expected)
            assert [model[k] for k in due] == sorted(model[k] for k in due)
            for k in due:
                del model[k]
        assert q.next_time() == (min(model.values()) if model else None)
        assert len(q) == len(model)
