"""CronFederatedHPA decisions alone: delays, missed-fire messages, bounds changes, a first decision."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from controller.planning.cron import Due, bounds_change, decide_rule, format_delay, missed_message
from fhpa_api.models import CronFederatedHPARule
from tests.support.planning_builders import fhpa as build_fhpa

Z = ZoneInfo("UTC")


def at(hour: int, minute: int = 0, second: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 6, day, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45, "45s"), (134, "2m14s"), (8040, "2h14m"), (8099, "2h14m"), (273600, "3d4h")],
)
def test_format_delay(seconds: float, text: str) -> None:
    assert format_delay(seconds) == text


def test_missed_message_names_delay_and_limit() -> None:
    due = Due(at(9), 8040, 300, True, 0, None)
    assert missed_message(due) == "missed by 2h14m; maxDelaySeconds is 300"
    skipped = Due(at(9), 8040, 300, True, 2, at(7))
    assert missed_message(skipped) == (
        "missed by 2h14m; maxDelaySeconds is 300; "
        "2 earlier scheduled executions were skipped since 2026-06-01T07:00:00Z"
    )
    default = Due(at(9), 90, 60, False, 0, None)
    assert missed_message(default) == "missed by 1m30s; maxDelaySeconds is unset, so the limit is 1m0s"


def test_bounds_change_min_above_max_names_both_numbers() -> None:
    fhpa = build_fhpa(min_replicas=2, max_replicas=10)
    result = bounds_change(fhpa, CronFederatedHPARule(name="r", schedule="@daily", target_min_replicas=12))
    assert isinstance(result, str)
    assert "12" in result and "10" in result and "nothing was changed" in result
    lowered = bounds_change(fhpa, CronFederatedHPARule(name="r", schedule="@daily", target_max_replicas=1))
    assert isinstance(lowered, str) and "targetMaxReplicas 1" in lowered and "minReplicas 2" in lowered


def test_bounds_change_patches_only_what_differs() -> None:
    fhpa = build_fhpa(min_replicas=2, max_replicas=10)
    change = bounds_change(fhpa, CronFederatedHPARule(name="r", schedule="@daily", target_min_replicas=8))
    assert not isinstance(change, str)
    assert (change.min_replicas, change.max_replicas) == (8, None)
    same = bounds_change(fhpa, CronFederatedHPARule(name="r", schedule="@daily", target_min_replicas=2))
    assert not isinstance(same, str) and not same.changes_something
    both = bounds_change(
        fhpa,
        CronFederatedHPARule(name="r", schedule="@daily", target_min_replicas=20, target_max_replicas=40),
    )
    assert not isinstance(both, str) and (both.min_replicas, both.max_replicas) == (20, 40)


def test_decide_rule_new_rule_on_existing_object_starts_now() -> None:
    decision = decide_rule(
        CronFederatedHPARule(name="r", schedule="3 * * * *", target_replicas=1),
        None,
        now=at(9, 3, 10),
        default_zone=Z,
        created_at=None,
    )
    assert decision.due is None and decision.next_execution_time == at(10, 3)
