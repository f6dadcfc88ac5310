"""A controller's handling of one key: the Result back to the queue, failures to its rate limiter."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from controller.backoff import ExponentialBackoff
from controller.errors import ConflictError, PortError
from controller.ports import NotLeaderError
from controller.result import Result
from controller.runtime.controller import Controller, Key
from controller.runtime.metrics import Metrics
from controller.runtime.workqueue import WorkQueue

KEY: Key = ("Thing", "ns", "a")


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


class Answers:
    def __init__(self, answer: Callable[[], Result]) -> None:
        self.answer = answer
        self.seen: list[tuple[str, str]] = []

    def reconcile(self, namespace: str, name: str) -> Result:
        self.seen.append((namespace, name))
        return self.answer()


def take(queue: WorkQueue[Key]) -> Key | None:
    key = queue.get(timeout=0)
    if key is not None:
        queue.done(key)
    return key


def process(answer: Callable[[], Result]) -> tuple[WorkQueue[Key], Clock, Metrics]:
    clock = Clock()
    queue: WorkQueue[Key] = WorkQueue(backoff=ExponentialBackoff(base=1.0, maximum=8.0), clock=clock)
    metrics = Metrics()
    Controller("Thing", Answers(answer), metrics).process(queue, KEY)
    return queue, clock, metrics


def test_a_requeue_after_comes_back_then_and_not_before() -> None:
    queue, clock, metrics = process(lambda: Result(30.0))
    clock.t = 29.9
    assert take(queue) is None
    clock.t = 30.0
    assert take(queue) == KEY
    assert 'fhpa_reconciles_total{kind="Thing",result="success"} 1.0' in metrics.render().decode()


def test_a_routine_requeue_comes_back_in_the_low_lane() -> None:
    queue, clock, _ = process(lambda: Result.after(30.0, routine=True))
    queue.add_low(("Thing", "ns", "resync"))
    clock.t = 30.0
    assert [take(queue), take(queue)] == [("Thing", "ns", "resync"), KEY]


def test_nothing_to_requeue_leaves_the_queue_empty() -> None:
    queue, clock, _ = process(Result)
    clock.t = 1e9
    assert take(queue) is None and queue.pending_delayed() == 0


@pytest.mark.parametrize(
    ("error", "result"), [(ConflictError("moved"), "conflict"), (PortError("down"), "error")]
)
def test_a_failure_is_retried_by_the_rate_limiter(error: Exception, result: str) -> None:
    def fail() -> Result:
        raise error

    queue, clock, metrics = process(fail)
    assert queue.num_requeues(KEY) == 1
    clock.t = 1.0
    assert take(queue) == KEY
    assert f'fhpa_reconciles_total{{kind="Thing",result="{result}"}} 1.0' in metrics.render().decode()


def test_a_lost_lease_abandons_the_key() -> None:
    def lost() -> Result:
        raise NotLeaderError("lease lost")

    queue, clock, metrics = process(lost)
    clock.t = 1e9
    assert take(queue) is None and queue.num_requeues(KEY) == 0
    assert 'result="abandoned"' in metrics.render().decode()
