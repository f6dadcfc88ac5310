"""A member's budget: the caps' accounting across a member's caches, and a list/watch loop that gives
its store up when its member goes over."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from controller.errors import ClusterUnreachableError
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


class _FailsThenTooLarge(StubTransport):
    """The first list fails (the member is away), the next answers a page over the cap."""

    def __init__(self) -> None:
        super().__init__(1, named)
        self.calls = 0

    def list_page(self, path: str, query: Mapping[str, Any]) -> Mapping[str, Any]:
        self.calls += 1
        if self.calls == 1:
            raise ClusterUnreachableError("m1", "connection refused")
        raise MemberBudget("m1", Caps(page_bytes=1024)).page_too_large(4096)


def test_a_member_given_up_is_not_retried_early_by_a_probe_that_answers() -> None:
    """A probe's success ends the backoff of failing watches (retry_failing); a member over its budget
    is not failing but unusable, or each probe would have it send its oversize answer again."""
    lw = ListWatch(
        _FailsThenTooLarge(), "/api/v1/pods", dict, name="m1/pods", backoff=FAST, denied_retry_seconds=60
    )
    stop = threading.Event()
    thread = threading.Thread(target=lw.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: lw.unusable is not None, "the page refused")
        assert "list page over its cap of 1 KiB" in (lw.unusable or "")
        assert not lw.failing
    finally:
        stop.set()
        lw.close()
        thread.join(5)
