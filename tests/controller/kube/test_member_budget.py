"""The pieces of a member's budget: the caps' accounting across a member's caches, the deadline reaper,
capped lines, and a list/watch loop that gives its store up when its member goes over."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from controller.kube.bounded_read import Reaper, capped_lines
from controller.kube.listwatch import DROPPED, ListWatch
from controller.kube.member_budget import BudgetExceededError, Caps, MemberBudget, object_size
from tests.controller.kube.test_member_bulkheads import _Lines
from tests.controller.kube.test_member_cache import FAST, StubTransport, named, wait_for


def test_the_caps_count_what_every_cache_of_the_member_holds_each_owner_once() -> None:
    budget = MemberBudget("m1", Caps(objects=10, store_bytes=1000))
    budget.hold("pods", 6, 600)
    budget.hold("pods", 6, 600)  # the same holding again: not counted twice
    budget.check("nodes", 4, 400)
    with pytest.raises(BudgetExceededError, match="over its cap of 10 objects"):
        budget.check("nodes", 5, 10)
    with pytest.raises(BudgetExceededError, match="over its cap of 1 KiB of cached objects"):
        budget.check("nodes", 1, 401)
    budget.check("pods", 10, 1000)  # a list replacing the owner's store counts in its place
    budget.release("pods")
    assert budget.held == (0, 0)


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


class _Flood(StubTransport):
    """Lists three pods, then watches a flood of new ones."""

    def open_watch(self, path: str, query: Mapping[str, Any], read_timeout: float) -> Any:
        if not path.endswith("/pods"):
            return super().open_watch(path, query, read_timeout)
        lines = [
            f'{{"type":"ADDED","object":{{"metadata":{{"name":"f{i}","resourceVersion":"9"}}}}}}'
            for i in range(50)
        ]
        return _Lines(lines)


def test_a_watch_over_the_object_cap_gives_its_store_up_quietly_and_says_why() -> None:
    budget = MemberBudget("m1", Caps(objects=10))
    seen: list[str] = []
    given_up = threading.Event()
    lw = ListWatch(
        _Flood(3, named),
        "/api/v1/pods",
        lambda o: {"metadata": dict(o["metadata"])},
        name="m1/pods",
        handler=lambda kind, *_: seen.append(kind),
        backoff=FAST,
        denied_retry_seconds=60,
        budget=budget,
        on_given_up=given_up.set,
    )
    stop = threading.Event()
    thread = threading.Thread(target=lw.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert given_up.wait(10)
        wait_for(lambda: lw.unusable is not None, "the reason")
        assert "over its cap of 10 objects" in (lw.unusable or "")
        assert len(lw) == 0 and budget.held == (0, 0) and not lw.synced.is_set()
        assert seen.count(DROPPED) == 10  # every object it held, unindexed: none reported as deleted
        assert "DELETED" not in seen
    finally:
        stop.set()
        lw.close()
        thread.join(5)


def test_the_byte_cap_counts_objects_as_kept() -> None:
    assert object_size({"metadata": {"name": "a"}}) == len('{"metadata":{"name":"a"}}')


def test_cancelled_deadlines_far_off_do_not_pile_up() -> None:
    from controller.kube.bounded_read import COMPACT_AT

    reaper = Reaper()
    for _ in range(COMPACT_AT + 10):
        reaper.arm(86_400, lambda: None).cancel()
    assert len(reaper._heap) < COMPACT_AT
