"""The work queue: dedup, one reconcile per key at a time, delayed adds, rate-limited retries."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.backoff import ExponentialBackoff
from controller.runtime.workqueue import ShutDown, WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_burst_of_adds_for_one_key_is_one_item() -> None:
    q: WorkQueue[str] = WorkQueue()
    for _ in range(5):
        q.add("ns/a")
    q.add("ns/b")
    assert len(q) == 2
    assert q.get(timeout=0) == "ns/a"
    assert q.get(timeout=0) == "ns/b"
    assert q.get(timeout=0) is None


def test_a_key_added_while_processing_is_handed_out_again_only_after_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("ns/a")
    assert q.get(timeout=0) == "ns/a"
    q.add("ns/a")
    q.add("ns/a")
    assert q.get(timeout=0) is None  # never two reconciles of one key at once
    q.done("ns/a")
    assert q.get(timeout=0) == "ns/a"
    q.done("ns/a")
    assert q.get(timeout=0) is None


def test_delayed_add_becomes_ready_when_due_and_earliest_wins() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("ns/a", 10)
    q.add_after("ns/a", 5)
    q.add_after("ns/a", 30)
    assert q.get(timeout=0) is None
    clock.t += 4.9
    assert q.get(timeout=0) is None
    clock.t += 0.2
    assert q.get(timeout=0) == "ns/a"
    q.done("ns/a")
    clock.t += 100
    assert q.get(timeout=0) is None  # the superseded 10 s and 30 s adds do not fire again


def test_rate_limited_retries_back_off_exponentially_and_forget_resets() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(backoff=ExponentialBackoff(base=1, maximum=8), clock=clock)
    delays = [q.add_rate_limited("k") for _ in range(6)]
    assert delays == [1, 2, 4, 8, 8, 8]
    assert q.num_requeues("k") == 6
    q.forget("k")
    assert q.num_requeues("k") == 0
    assert q.add_rate_limited("k") == 1


def test_shut_down_wakes_blocked_workers() -> None:
    q: WorkQueue[str] = WorkQueue()
    raised = threading.Event()

    def worker() -> None:
        try:
            q.get()
        except ShutDown:
            raised.set()

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.05)
    q.shut_down()
    t.join(2)
    assert raised.is_set()
    q.add("late")
    with pytest.raises(ShutDown):
        q.get(timeout=0)


def test_depth_metric_follows_the_ready_items() -> None:
    depths: list[int] = []
    q: WorkQueue[str] = WorkQueue(on_depth=depths.append)
    q.add("a")
    q.add("b")
    q.get(timeout=0)
    assert depths == [1, 2, 1]


def test_many_threads_never_process_one_key_concurrently() -> None:
    q: WorkQueue[int] = WorkQueue()
    active: set[int] = set()
    lock = threading.Lock()
    overlaps: list[int] = []
    processed: list[int] = []

    def worker() -> None:
        while True:
            try:
                key = q.get(timeout=0.3)
            except ShutDown:
                return
            if key is None:
                return
            with lock:
                if key in active:
                    overlaps.append(key)
                active.add(key)
            time.sleep(0.001)
            with lock:
                active.discard(key)
                processed.append(key)
            q.done(key)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(300):
        q.add(i % 5)
    for t in threads:
        t.join(10)
    assert overlaps == []
    assert set(processed) == set(range(5))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "after", "get", "done", "tick"]), st.integers(0, 3), st.integers(0, 5)
        )
    )
)
def test_invariants_hold_for_any_sequence(ops: list[tuple[str, int, int]]) -> None:
    """Property: no key is handed out while processing, no key is queued twice, and nothing added is lost."""
    clock = FakeClock()
    q: WorkQueue[int] = WorkQueue(clock=clock)
    processing: set[int] = set()
    wanted: set[int] = set()  # keys added (now or due) and not handed out since
    for op, key, amount in ops:
        if op == "add":
            q.add(key)
            wanted.add(key)
        elif op == "after":
            q.add_after(key, amount)
            if amount == 0:
                wanted.add(key)
        elif op == "tick":
            clock.t += amount
        elif op == "get":
            got = q.get(timeout=0)
            if got is not None:
                assert got not in processing
                processing.add(got)
                wanted.discard(got)
        elif op == "done" and key in processing:
            q.done(key)
            processing.discard(key)
    # drain: everything wanted comes out eventually, each once while not processing
    for key in list(processing):
        q.done(key)
    clock.t += 10
    seen: list[int] = []
    while (got := q.get(timeout=0)) is not None:
        seen.append(got)
        q.done(got)
    assert len(seen) == len(set(seen))
    assert wanted <= set(seen)


# --- the resync lane ----------------------------------------------------------------------------------


def test_keys_added_low_wait_behind_every_normal_key() -> None:
    q: WorkQueue[str] = WorkQueue()
    for key in ("r1", "r2", "r3"):
        q.add_low(key)
    q.add("event")
    assert len(q) == 4
    assert [q.get(timeout=0), q.get(timeout=0)] == ["event", "r1"]
    q.add("late-event")
    assert [q.get(timeout=0), q.get(timeout=0), q.get(timeout=0)] == ["late-event", "r2", "r3"]


def test_a_low_key_added_normally_moves_up_once_and_is_not_taken_twice() -> None:
    q: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "c"):
        q.add_low(key)
    q.add("c")  # an event for a key already waiting in the resync lane
    q.add_low("c")  # and a resync again: still one entry
    assert len(q) == 3
    taken = [q.get(timeout=0) for _ in range(3)]
    assert taken == ["c", "a", "b"]
    assert q.get(timeout=0) is None


def test_a_low_add_of_a_key_being_processed_requeues_it_once_after_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("k")
    assert q.get(timeout=0) == "k"
    q.add_low("k")
    q.add_low("k")
    assert q.get(timeout=0) is None
    q.done("k")
    assert q.get(timeout=0) == "k"
    q.done("k")
    assert q.get(timeout=0) is None


def test_a_routine_delayed_add_falls_due_into_the_low_lane() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("periodic", 5, low=True)
    q.add_after("due", 5)
    clock.t += 5
    q.add("event")
    assert [q.get(timeout=0), q.get(timeout=0), q.get(timeout=0)] == ["event", "due", "periodic"]
    for key in ("event", "due", "periodic"):
        q.done(key)
    q.add_after("periodic", 0, low=True)  # due at once: the low lane too
    q.add("event2")
    assert [q.get(timeout=0), q.get(timeout=0)] == ["event2", "periodic"]
