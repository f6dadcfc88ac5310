"""status.nextExecutionTime and status.lastResult (the NEXT and LAST-RESULT columns of
`kubectl get cronfhpa`): the earliest next execution of any rule, the latest execution's outcome."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controller.planning.cron import summary
from fhpa_api.models import ExecutionHistory, FailedExecution, SuccessfulExecution

T0 = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


def ok(minutes: int) -> SuccessfulExecution:
    at = T0 + timedelta(minutes=minutes)
    return SuccessfulExecution(schedule_time=at, execution_time=at, applied_replicas=3)


def failed(minutes: int) -> FailedExecution:
    at = T0 + timedelta(minutes=minutes)
    return FailedExecution(schedule_time=at, execution_time=at, message="the target does not exist")


def test_the_earliest_next_execution_and_the_latest_result_across_rules() -> None:
    histories = [
        ExecutionHistory(
            rule_name="up",
            next_execution_time=T0 + timedelta(hours=5),
            successful_executions=[ok(0), ok(-60)],
        ),
        ExecutionHistory(
            rule_name="down", next_execution_time=T0 + timedelta(hours=2), failed_executions=[failed(30)]
        ),
        ExecutionHistory(rule_name="noon", successful_executions=[ok(10)]),
    ]
    assert summary(histories) == {
        "next_execution_time": T0 + timedelta(hours=2),
        "last_result": "Failed (down)",
    }


def test_a_success_after_a_failure_is_the_last_result() -> None:
    histories = [
        ExecutionHistory(rule_name="up", successful_executions=[ok(40)], failed_executions=[failed(30)])
    ]
    assert summary(histories)["last_result"] == "Succeeded (up)"


def test_of_the_same_instant_the_failure_is_shown() -> None:
    histories = [
        ExecutionHistory(rule_name="a", successful_executions=[ok(5)]),
        ExecutionHistory(rule_name="b", failed_executions=[failed(5)]),
    ]
    assert summary(histories)["last_result"] == "Failed (b)"


def test_nothing_run_and_nothing_scheduled() -> None:
    assert summary([ExecutionHistory(rule_name="up")]) == {"next_execution_time": None, "last_result": None}
    assert summary([]) == {"next_execution_time": None, "last_result": None}
