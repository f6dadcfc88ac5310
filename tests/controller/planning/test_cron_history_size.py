"""H3: a CronFederatedHPA's status stays far below etcd's 1.5 MiB object limit.

The budget (fhpa_api.limits): validation admits rules only while the sum over rules of
successfulHistoryLimit x SUCCESS_ENTRY_MAX_BYTES + failedHistoryLimit x FAILED_ENTRY_MAX_BYTES stays
within HISTORY_BUDGET_BYTES, and the controller cuts every stored failure message to
HISTORY_MESSAGE_MAX_CHARS. These tests build the largest object validation admits, fill every history to
its limits with the largest entries the controller can write, and measure the bytes as the API server
stores them (Go's JSON, which escapes <, > and & as six bytes).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from controller.planning.cron import Outcome, history_message, record_outcome, trim_history
from fhpa_api import limits
from fhpa_api.defaulting import apply_defaults
from fhpa_api.models import (
    CronFederatedHPA,
    CronFederatedHPARule,
    ExecutionHistory,
    FailedExecution,
    SuccessfulExecution,
    to_json,
)
from fhpa_api.validation import validate
from fhpa_api.validation_cron import HISTORY_LIMIT_MAX, RULE_NAME_MAX

ETCD_OBJECT_LIMIT = int(1.5 * 1024 * 1024)
WORST_ZONE = timezone(timedelta(hours=-9, minutes=-30))  # a timestamp with microseconds and an offset
INT32_MAX = 2**31 - 1
# The longest schedule and time zone a rule can have (each within its limit), to make the spec largest.
LONG_SCHEDULE = ",".join(str(m) for m in range(60))


def stored_bytes(value: Any) -> int:
    """The size of ``value`` in the API server's JSON: UTF-8, with Go's HTML escapes (<, >, & -> \\u00XX)
    and U+2028/U+2029 escaped as well."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    extra = 5 * sum(text.count(c) for c in "<>&") + 3 * sum(text.count(c) for c in "\u2028\u2029")
    return len(text.encode()) + extra


def _stamp(index: int) -> datetime:
    return datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=WORST_ZONE) - timedelta(minutes=index)


def worst_success(index: int = 0) -> SuccessfulExecution:
    return SuccessfulExecution(
        schedule_time=_stamp(index),
        execution_time=_stamp(index),
        applied_replicas=INT32_MAX,
        applied_min_replicas=INT32_MAX,
        applied_max_replicas=INT32_MAX,
    )


def worst_failure(index: int = 0) -> FailedExecution:
    """A failure as the controller records it, from a hostile 1 MB message of six-byte characters."""
    return FailedExecution(
        schedule_time=_stamp(index), execution_time=_stamp(index), message=history_message("<" * 1_000_000)
    )


def _valid_schedule() -> str:
    text = LONG_SCHEDULE
    while len(text + " * * * *") > limits.SCHEDULE_MAX_CHARS:
        text = text.rsplit(",", 1)[0]
    return text + " * * * *"


def worst_case_object() -> dict[str, Any]:
    """The CronFederatedHPA with the largest histories validation admits: as many rules at the maximum
    history limits as the budget allows, then the rest of the 64 rules with what is left."""
    rules: list[dict[str, Any]] = []
    remaining = limits.HISTORY_BUDGET_BYTES
    schedule = _valid_schedule()
    smallest = limits.history_bytes(1, 0)  # successfulHistoryLimit is at least 1
    for index in range(limits.RULES_MAX_ITEMS):
        available = remaining - smallest * (limits.RULES_MAX_ITEMS - index - 1)  # keep room for the rest
        succeeded = min(HISTORY_LIMIT_MAX, available // limits.SUCCESS_ENTRY_MAX_BYTES)
        failed = min(
            HISTORY_LIMIT_MAX,
            (available - limits.history_bytes(succeeded, 0)) // limits.FAILED_ENTRY_MAX_BYTES,
        )
        remaining -= limits.history_bytes(succeeded, failed)
        name = f"r{index}".ljust(RULE_NAME_MAX, "x")
        rules.append(
            {
                "name": name,
                "schedule": schedule,
                "timeZone": "America/Argentina/ComodRivadavia",
                "targetMinReplicas": INT32_MAX,
                "targetMaxReplicas": INT32_MAX,
                "successfulHistoryLimit": succeeded,
                "failedHistoryLimit": failed,
                "maxDelaySeconds": 59,
            }
        )
    return apply_defaults(
        {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "CronFederatedHPA",
            "metadata": {"name": "w" * 253, "namespace": "shop"},
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "autoscaling.karmada.io/v1alpha1",
                    "kind": "FederatedHPA",
                    "name": "f" * 253,
                },
                "rules": rules,
            },
        }
    )


def full_status(obj: dict[str, Any]) -> dict[str, Any]:
    histories = []
    for rule in obj["spec"]["rules"]:
        histories.append(
            ExecutionHistory(
                rule_name=rule["name"],
                next_execution_time=_stamp(0),
                successful_executions=[worst_success(i) for i in range(rule["successfulHistoryLimit"])],
                failed_executions=[worst_failure(i) for i in range(rule["failedHistoryLimit"])] or None,
            )
        )
    conditions = [
        {
            "type": "Ready",
            "status": "False",
            "lastTransitionTime": "2026-12-31T23:59:59Z",
            "reason": "RuleInvalid",
            "message": "<" * 1024,
        }
    ]
    status = {
        "executionHistories": [to_json(h) for h in histories],
        "conditions": conditions,
        "observedGeneration": 2**62,
    }
    return status


def test_the_entry_size_constants_cover_the_largest_entries_the_controller_writes() -> None:
    assert stored_bytes(to_json(worst_success())) <= limits.SUCCESS_ENTRY_MAX_BYTES
    assert stored_bytes(to_json(worst_failure())) <= limits.FAILED_ENTRY_MAX_BYTES
    assert len(worst_failure().message) == limits.HISTORY_MESSAGE_MAX_CHARS


def test_the_largest_admissible_object_with_full_histories_is_far_below_etcds_limit() -> None:
    obj = worst_case_object()
    assert validate(obj).ok, validate(obj).errors
    assert len(obj["spec"]["rules"]) == limits.RULES_MAX_ITEMS
    obj["status"] = full_status(obj)
    CronFederatedHPA.model_validate(obj)
    histories = stored_bytes(obj["status"]["executionHistories"])
    total = stored_bytes(obj)
    # the histories stay within their budget (plus the per-rule name and next time, ~100 bytes a rule)
    assert histories <= limits.HISTORY_BUDGET_BYTES + 100 * limits.RULES_MAX_ITEMS
    # and the whole object leaves more than half of etcd's limit for metadata (annotations: 256 KiB max)
    assert total < ETCD_OBJECT_LIMIT // 2, total


def test_one_more_history_entry_than_the_budget_is_refused_with_the_numbers() -> None:
    obj = worst_case_object()
    rule = next(r for r in obj["spec"]["rules"] if r["failedHistoryLimit"] < HISTORY_LIMIT_MAX)
    rule["failedHistoryLimit"] += 1
    result = validate(obj)
    assert not result.ok
    message = str(result.errors[0])
    assert message.startswith("spec.rules: the execution histories of these 64 rules could take")
    assert "the limit is 512 KiB" in message


def test_eight_rules_at_the_maximum_history_limits_are_admitted_and_nine_are_not() -> None:
    def rules(count: int) -> list[dict[str, Any]]:
        return [
            {
                "name": f"r{i}",
                "schedule": "0 8 * * *",
                "targetMinReplicas": 2,
                "successfulHistoryLimit": 32,
                "failedHistoryLimit": 32,
            }
            for i in range(count)
        ]

    base = worst_case_object()
    for count, ok in ((8, True), (9, False)):
        obj = copy.deepcopy(base)
        obj["spec"]["rules"] = rules(count)
        assert validate(apply_defaults(obj)).ok is ok, count
    defaults = copy.deepcopy(base)
    defaults["spec"]["rules"] = [
        {"name": f"r{i}", "schedule": "0 8 * * *", "targetMinReplicas": 2} for i in range(64)
    ]
    assert validate(apply_defaults(defaults)).ok  # 64 rules at the default limits (3/3) fit


def test_a_recorded_failure_message_is_cut_to_one_short_printable_line() -> None:
    rule = CronFederatedHPARule(name="r", schedule="0 8 * * *", failed_history_limit=3)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    outcome = Outcome(now, now, False, "the API server said:\n" + "x" * 1_000_000)
    history = record_outcome(ExecutionHistory(rule_name="r"), outcome, rule)
    (entry,) = history.failed_executions or []
    assert len(entry.message) == limits.HISTORY_MESSAGE_MAX_CHARS
    assert entry.message.startswith("the API server said: xxx") and entry.message.endswith("…")
    old = ExecutionHistory(
        rule_name="r",
        failed_executions=[FailedExecution(schedule_time=now, execution_time=now, message="y" * 5000)],
    )
    (trimmed,) = trim_history(old, rule).failed_executions or []
    assert len(trimmed.message) == limits.HISTORY_MESSAGE_MAX_CHARS
