"""Reading within a budget: the deadline reaper, and watch lines split and capped."""

from __future__ import annotations

import threading

import pytest

from controller.kube.bounded_read import COMPACT_AT, Reaper, capped_lines
from controller.kube.member_budget import BudgetExceededError, Caps, MemberBudget


def test_the_reaper_runs_a_deadline_that_passes_and_never_one_cancelled() -> None:
    reaper = Reaper()
    fired = threading.Event()
    late = reaper.arm(0.05, fired.set)
    cancelled = reaper.arm(0.05, lambda: pytest.fail("a cancelled deadline ran"))
    cancelled.cancel()
    assert fired.wait(5) and late.fired
    assert not cancelled.fired


class _Body:
    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    def read1(self, amt: int) -> bytes:
        return self._pieces.pop(0) if self._pieces else b""


def test_lines_split_across_pieces_and_one_over_the_cap_is_refused() -> None:
    budget = MemberBudget("m1", Caps(line_bytes=8))
    assert list(capped_lines(_Body([b'{"a"', b":1}\n{", b'"b":2}\n']), budget)) == ['{"a":1}', '{"b":2}']
    with pytest.raises(BudgetExceededError, match="watch line over its cap"):
        list(capped_lines(_Body([b"x" * 5, b"x" * 5]), budget))


def test_cancelled_deadlines_far_off_do_not_pile_up() -> None:
    reaper = Reaper()
    for _ in range(COMPACT_AT + 10):
        reaper.arm(86_400, lambda: None).cancel()
    assert len(reaper._heap) < COMPACT_AT
