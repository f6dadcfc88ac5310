"""CronFederatedHPA rules: target mode, replicas, rule names, schedule, time zone, limits, maxDelaySeconds."""

from __future__ import annotations

from typing import Any

import pytest

from fhpa_api.validation import validate
from tests.support.api_builders import API, cron, message_at, paths, with_field

RULE0 = "spec.rules[0]"


def fhpa_rule(**fields: Any) -> dict[str, Any]:
    return cron("fhpa", [{"name": "r", "schedule": "0 8 * * *", **fields}])


def workload_rule(**fields: Any) -> dict[str, Any]:
    return cron("workload", [{"name": "r", "schedule": "0 8 * * *", **fields}])


# --- target mode and replicas --------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj",
    [
        fhpa_rule(targetMinReplicas=1),
        fhpa_rule(targetMaxReplicas=3),
        fhpa_rule(targetMinReplicas=3, targetMaxReplicas=3),
        workload_rule(targetReplicas=0),
        workload_rule(targetReplicas=40),
    ],
)
def test_replicas_accepted(obj: dict[str, Any]) -> None:
    result = validate(obj)
    assert result.ok, result.errors
    assert result.warnings == []


@pytest.mark.parametrize(
    ("obj", "where", "fragment"),
    [
        (fhpa_rule(), RULE0, "targetMinReplicas and/or targetMaxReplicas"),
        (fhpa_rule(targetReplicas=3), RULE0, "targetMinReplicas and/or targetMaxReplicas"),
        (fhpa_rule(targetMinReplicas=0), f"{RULE0}.targetMinReplicas", ">= 1"),
        (fhpa_rule(targetMaxReplicas=0), f"{RULE0}.targetMaxReplicas", ">= 1"),
        (
            fhpa_rule(targetMinReplicas=5, targetMaxReplicas=4),
            f"{RULE0}.targetMaxReplicas",
            ">= targetMinReplicas",
        ),
        (workload_rule(), f"{RULE0}.targetReplicas", "required"),
        (workload_rule(targetMinReplicas=2), f"{RULE0}.targetReplicas", "required"),
        (workload_rule(targetReplicas=-1), f"{RULE0}.targetReplicas", ">= 0"),
        # ignored on a FederatedHPA rule, but the CRD schema refuses it all the same
        (fhpa_rule(targetMinReplicas=2, targetReplicas=-1), f"{RULE0}.targetReplicas", ">= 0"),
        (
            workload_rule(targetReplicas=2**31),
            f"{RULE0}.targetReplicas",
            "int32 field holds at most 2147483647",
        ),
        (
            fhpa_rule(targetMaxReplicas=2**31),
            f"{RULE0}.targetMaxReplicas",
            "int32 field holds at most 2147483647",
        ),
    ],
)
def test_replicas_refused(obj: dict[str, Any], where: str, fragment: str) -> None:
    assert fragment in message_at(validate(obj), where)


def test_target_replicas_on_a_federatedhpa_rule_is_ignored_with_a_warning() -> None:
    result = validate(fhpa_rule(targetMinReplicas=2, targetReplicas=9))
    assert result.ok
    assert any(w.startswith(f"{RULE0}.targetReplicas:") for w in result.warnings)


def test_min_max_on_a_workload_rule_are_ignored_with_a_warning() -> None:
    result = validate(workload_rule(targetReplicas=2, targetMinReplicas=5, targetMaxReplicas=1))
    assert result.ok
    assert len(result.warnings) == 2


def test_our_api_version_with_another_kind_is_refused() -> None:
    obj = with_field(fhpa_rule(targetMinReplicas=1), "spec.scaleTargetRef.kind", "Deployment")
    assert "only kind there is FederatedHPA" in message_at(validate(obj), "spec.scaleTargetRef.kind")


def test_a_federatedhpa_target_without_our_api_version_is_refused() -> None:
    obj = with_field(fhpa_rule(targetMinReplicas=1), "spec.scaleTargetRef.apiVersion", "apps/v1")
    assert API in message_at(validate(obj), "spec.scaleTargetRef.apiVersion")


def test_a_target_without_scale_subresource_is_refused() -> None:
    obj = with_field(workload_rule(targetReplicas=1), "spec.scaleTargetRef.kind", "HorizontalPodAutoscaler")
    assert "scale subresource" in message_at(validate(obj), "spec.scaleTargetRef.kind")


@pytest.mark.parametrize(
    ("api_version", "kind", "target_error"),
    [
        (API, "HorizontalPodAutoscaler", "spec.scaleTargetRef.kind"),
        (API, "Deployment", "spec.scaleTargetRef.kind"),
        ("apps/v1", "FederatedHPA", "spec.scaleTargetRef.apiVersion"),
        ("autoscaling.karmada.io/v1beta1", "FederatedHPA", "spec.scaleTargetRef.apiVersion"),
        ("autoscaling.karmada.io/v1beta1", "HorizontalPodAutoscaler", "spec.scaleTargetRef.kind"),
    ],
)
def test_a_refused_target_still_checks_the_rules_as_for_a_federatedhpa(
    api_version: str, kind: str, target_error: str
) -> None:
    """Every error at once: the rule's bad targetMinReplicas is not left for after the target is fixed."""
    obj = fhpa_rule(targetMinReplicas=0, targetMaxReplicas=3)
    obj = with_field(
        with_field(obj, "spec.scaleTargetRef.apiVersion", api_version), "spec.scaleTargetRef.kind", kind
    )
    assert set(paths(validate(obj))) == {target_error, f"{RULE0}.targetMinReplicas"}


def test_a_refused_target_still_requires_min_or_max_on_a_federatedhpa_rule() -> None:
    obj = with_field(fhpa_rule(targetReplicas=3), "spec.scaleTargetRef.kind", "HorizontalPodAutoscaler")
    assert set(paths(validate(obj))) == {"spec.scaleTargetRef.kind", RULE0}


def test_a_refused_target_outside_our_group_still_checks_the_rules_as_for_a_workload() -> None:
    obj = with_field(workload_rule(targetReplicas=-1), "spec.scaleTargetRef.kind", "HorizontalPodAutoscaler")
    assert set(paths(validate(obj))) == {"spec.scaleTargetRef.kind", f"{RULE0}.targetReplicas"}


# --- rules list and names ------------------------------------------------------------------------


def test_at_least_one_rule() -> None:
    assert "at least one rule" in message_at(validate(cron("fhpa", [])), "spec.rules")
    assert "required" in message_at(validate(with_field(cron(), "spec.rules")), "spec.rules")


@pytest.mark.parametrize("name", ["a", "x" * 32, "Scale-Up at 8"])
def test_rule_names_accepted(name: str) -> None:
    assert validate(with_field(fhpa_rule(targetMinReplicas=1), f"{RULE0}.name", name)).ok


@pytest.mark.parametrize(("name", "fragment"), [("", "required"), ("x" * 33, "1 to 32"), (None, "required")])
def test_rule_names_refused(name: Any, fragment: str) -> None:
    obj = with_field(fhpa_rule(targetMinReplicas=1), f"{RULE0}.name", name)
    assert fragment in message_at(validate(obj), f"{RULE0}.name")


def test_duplicate_rule_names_are_refused_at_the_second() -> None:
    rules = [
        {"name": "a", "schedule": "0 8 * * *", "targetMinReplicas": 1},
        {"name": "b", "schedule": "0 9 * * *", "targetMinReplicas": 1},
        {"name": "a", "schedule": "0 10 * * *", "targetMinReplicas": 1},
    ]
    result = validate(cron("fhpa", rules))
    assert paths(result) == ["spec.rules[2].name"]
    assert "unique" in result.errors[0].message


# --- schedule and time zone (through fhpa_api.schedule) ----------------------------------------------


@pytest.mark.parametrize(
    "schedule",
    [
        "*/15 9-17 * * MON-FRI",
        "0 0 1,15 * *",
        "30 7 * JAN-MAR 0",
        "0 12 * * 7",
        "@hourly",
        "@weekly",
        "@midnight",
    ],
)
def test_schedules_accepted(schedule: str) -> None:
    assert validate(fhpa_rule(targetMinReplicas=1, schedule=schedule)).ok


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ("0 0 8 * * *", "field"),  # seconds field
        ("0 8 * * * 2027", "field"),  # year field
        ("CRON_TZ=Asia/Shanghai 0 8 * * *", "timeZone"),
        ("TZ=UTC 0 8 * * *", "timeZone"),
        ("@every 1h", "@every"),
        ("@reboot", "@reboot"),
        ("60 * * * *", "60"),
        ("0 0 32 * *", "32"),
        ("*/0 * * * *", "0"),
        ("0 5-1 * * *", "5-1"),
    ],
)
def test_schedules_refused_with_a_reason(schedule: str, fragment: str) -> None:
    message = message_at(validate(fhpa_rule(targetMinReplicas=1, schedule=schedule)), f"{RULE0}.schedule")
    assert fragment in message


def test_an_empty_schedule_is_required() -> None:
    assert "required" in message_at(
        validate(fhpa_rule(targetMinReplicas=1, schedule="")), f"{RULE0}.schedule"
    )


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/Argentina/Buenos_Aires"])
def test_time_zones_accepted(zone: str) -> None:
    assert validate(fhpa_rule(targetMinReplicas=1, timeZone=zone)).ok


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "europe/paris_x"])
def test_time_zones_refused(zone: str) -> None:
    assert "IANA" in message_at(validate(fhpa_rule(targetMinReplicas=1, timeZone=zone)), f"{RULE0}.timeZone")


# --- limits and maxDelaySeconds ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("successfulHistoryLimit", 1),
        ("successfulHistoryLimit", 32),
        ("failedHistoryLimit", 0),
        ("failedHistoryLimit", 32),
        ("suspend", True),
    ],
)
def test_limits_accepted(field: str, value: Any) -> None:
    assert validate(fhpa_rule(targetMinReplicas=1, **{field: value})).ok


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("successfulHistoryLimit", 0, "from 1 to 32"),
        ("successfulHistoryLimit", 33, "from 1 to 32"),
        ("failedHistoryLimit", -1, "from 0 to 32"),
        ("failedHistoryLimit", 33, "from 0 to 32"),
        ("suspend", "no", "true or false"),
    ],
)
def test_limits_refused(field: str, value: Any, fragment: str) -> None:
    assert fragment in message_at(
        validate(fhpa_rule(targetMinReplicas=1, **{field: value})), f"{RULE0}.{field}"
    )


@pytest.mark.parametrize(("schedule", "delay"), [("*/5 * * * *", 299), ("0 8 * * *", 0), ("@hourly", 3599)])
def test_max_delay_below_the_shortest_interval_is_accepted(schedule: str, delay: int) -> None:
    assert validate(fhpa_rule(targetMinReplicas=1, schedule=schedule, maxDelaySeconds=delay)).ok


@pytest.mark.parametrize(
    ("schedule", "delay", "fragment"),
    [("*/5 * * * *", 300, "(300 s)"), ("0,10 8 * * *", 600, "(600 s)"), ("0 8 * * *", -1, ">= 0")],
)
def test_max_delay_refused(schedule: str, delay: int, fragment: str) -> None:
    obj = fhpa_rule(targetMinReplicas=1, schedule=schedule, maxDelaySeconds=delay)
    assert fragment in message_at(validate(obj), f"{RULE0}.maxDelaySeconds")


def test_max_delay_uses_the_rules_time_zone() -> None:
    """'30 1 * * *' in New York: on the autumn DST night 01:30 occurs twice but fires once, so the
    shortest interval stays about a day; the check must not crash and must accept a 1 h delay."""
    obj = fhpa_rule(
        targetMinReplicas=1, schedule="30 1 * * *", timeZone="America/New_York", maxDelaySeconds=3600
    )
    assert validate(obj).ok


def test_every_error_of_every_rule_is_reported() -> None:
    rules = [
        {"name": "a", "schedule": "bad", "targetMinReplicas": 0},
        {
            "name": "b",
            "schedule": "0 8 * * *",
            "timeZone": "Nowhere/City",
            "successfulHistoryLimit": 0,
            "targetMinReplicas": 1,
        },
    ]
    result = validate(cron("fhpa", rules))
    assert set(paths(result)) == {
        "spec.rules[0].schedule",
        "spec.rules[0].targetMinReplicas",
        "spec.rules[1].timeZone",
        "spec.rules[1].successfulHistoryLimit",
    }


@pytest.mark.parametrize(
    ("fields", "path", "says"),
    [
        ({"excludeDates": ["2026-12-24..2026-12-23"]}, "spec.rules[0].excludeDates[0]", "ends before"),
        ({"excludeDates": ["2027-02-29"]}, "spec.rules[0].excludeDates[0]", "not a calendar date"),
        ({"excludeDates": [5]}, "spec.rules[0].excludeDates[0]", "must be a string"),
        ({"excludeDates": ["2026-12-25"] * 401}, "spec.rules[0].excludeDates", "at most 400"),
        ({"excludeCalendarRef": {}}, "spec.rules[0].excludeCalendarRef.name", "is required"),
        ({"excludeCalendarRef": {"name": "Hol_days"}}, "spec.rules[0].excludeCalendarRef.name", ""),
        ({"excludeCalendarRef": {"name": "h", "key": "a/b"}}, "spec.rules[0].excludeCalendarRef.key", "key"),
        ({"excludeCalendarRef": {"name": "h", "kind": "x"}}, "spec.rules[0].excludeCalendarRef.kind", ""),
    ],
)
def test_exclusion_dates_and_the_calendar_reference_are_checked(
    fields: dict[str, Any], path: str, says: str
) -> None:
    assert says in message_at(validate(fhpa_rule(targetMinReplicas=2, **fields)), path)


def test_exclusion_dates_and_a_calendar_reference_are_admitted() -> None:
    fields = {"excludeDates": ["2026-12-25", "2026-12-24..2026-12-26"], "excludeCalendarRef": {"name": "hol"}}
    result = validate(fhpa_rule(targetMinReplicas=2, **fields))
    assert result.ok, result.errors
