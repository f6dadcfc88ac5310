"""End to end: a cron rule that pre-scales 30 minutes before a morning rush serves it with less unserved load
than the same fleet and traffic without the rule (examples/scenarios/morning-peak.yaml)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.engine import RunResult, simulate
from simulator.report import summarize
from simulator.samples import StepSample
from simulator.scenario import load_scenario, parse_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "morning-peak.yaml"
pytestmark = pytest.mark.slow


@cache
def with_rule() -> RunResult:
    return simulate(load_scenario(SCENARIO))


@cache
def without_rule() -> RunResult:
    data: dict[str, Any] = yaml.safe_load(SCENARIO.read_text())
    data.pop("cronFederatedHPAs")
    return simulate(parse_scenario(data, f"{SCENARIO} [no cron]"))


def at_minute(result: RunResult, minute: float) -> StepSample:
    return next(s for s in result.steps if s.t >= minute * 60)


def test_pre_scaling_serves_the_rush_with_less_unserved_load() -> None:
    cron, plain = summarize(with_rule()), summarize(without_rule())
    assert plain["unserved_rps_seconds"] > 0  # the rush is too sharp for the HPAs alone
    assert cron["unserved_rps_seconds"] < plain["unserved_rps_seconds"] / 2
    assert cron["served_fraction"] > plain["served_fraction"]
    assert cron["violation_count"] == 0 and plain["violation_count"] == 0


def test_rules_fire_at_their_berlin_times_and_set_min_replicas() -> None:
    result = with_rule()
    fired = [e.at.astimezone(UTC) for e in result.events if e.reason == "ScaleSucceeded"]
    assert fired == [datetime(2026, 11, 23, 7, 30, tzinfo=UTC), datetime(2026, 11, 23, 9, 30, tzinfo=UTC)]
    assert not [e for e in result.events if e.reason == "ScaleFailed"]
    assert at_minute(result, 29).fhpa_min == 4
    assert at_minute(result, 31).fhpa_min == 70  # 08:31 Berlin
    assert at_minute(result, 151).fhpa_min == 4  # released at 10:30 Berlin


def test_capacity_is_running_before_the_rush_only_with_the_rule() -> None:
    before_rush = 58  # minutes after 08:00 Berlin; the rush starts at 08:58
    ready_with = sum(c.ready for c in at_minute(with_rule(), before_rush).clusters.values())
    ready_without = sum(c.ready for c in at_minute(without_rule(), before_rush).clusters.values())
    assert ready_with >= 60
    assert ready_without < 20


def test_a_holiday_excluded_inline_or_by_calendar_does_not_fire() -> None:
    data: dict[str, Any] = yaml.safe_load(SCENARIO.read_text())
    data["duration"] = "2h40m"
    rules = data["cronFederatedHPAs"][0]["spec"]["rules"]
    rules[0]["excludeDates"] = ["2026-11-23"]  # a Monday, in Berlin
    rules[1]["excludeCalendarRef"] = {"name": "holidays"}
    data["configMaps"] = {"holidays": {"dates": "# office closed\n2026-11-20..2026-11-24\n"}}
    result = simulate(parse_scenario(data, f"{SCENARIO} [holiday]"))
    assert not [e for e in result.events if e.reason in ("ScaleSucceeded", "ScaleFailed", "InvalidRule")]
    assert at_minute(result, 31).fhpa_min == 4  # not pre-scaled
