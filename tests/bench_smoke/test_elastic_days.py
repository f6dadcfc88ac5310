"""bench/elastic_compare.py --days: a fleet run day after day repeats its timed lists, and each day is
judged on its own steps. No fleet is run here (that takes minutes); the repetition and the split are."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from elastic_compare import FLEETS, repeated  # noqa: E402

from simulator.scenario import parse_duration, parse_scenario  # noqa: E402


def _times(points: list[dict[str, Any]]) -> list[float]:
    return [parse_duration(p["at"]) for p in points]


def test_two_days_repeat_the_trace_capacity_changes_and_outages_a_day_apart() -> None:
    data = yaml.safe_load((FLEETS / "capacity-lost.yaml").read_text())
    day = parse_duration(data["duration"])
    data["controllerOutages"] = [{"at": "2h", "for": "10m"}]
    two = repeated(data, 2)
    assert parse_duration(two["duration"]) == 2 * day
    one_trace, two_trace = _times(data["load"]["trace"]), _times(two["load"]["trace"])
    # the first day's last point (its end) and the second day's first coincide: one of them stands
    assert two_trace[: len(one_trace)] == one_trace
    assert two_trace[len(one_trace) :] == [t + day for t in one_trace if t + day > one_trace[-1]]
    assert two_trace == sorted(set(two_trace))
    changes = next(c for c in two["clusters"] if c.get("capacityChanges"))["capacityChanges"]
    first = next(c for c in data["clusters"] if c.get("capacityChanges"))["capacityChanges"]
    assert _times(changes) == _times(first) + [t + day for t in _times(first)]
    assert _times(two["controllerOutages"]) == [7200.0, 7200.0 + day]
    parse_scenario(two, "two days")  # a scenario the simulator admits


def test_one_day_is_the_fleet_as_written_and_timed_changes_are_not_repeated() -> None:
    data = yaml.safe_load((FLEETS / "hybrid-quota-cloud.yaml").read_text())
    assert repeated(data, 1) is data
    with pytest.raises(SystemExit, match="not repeated"):
        repeated({**data, "changes": [{"at": "1h", "annotations": {"x": "y"}}]}, 2)
