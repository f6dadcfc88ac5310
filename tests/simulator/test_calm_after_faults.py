"""Calm after faults, end to end: the fleets of bench/scenarios/calm/ run the real controller against the
simulated fleet, and each test asserts the churn its fleet used to show is gone (DESIGN §4 Prioritized
scale-down, promise 4's ties).

The same fleets run in bench/policy_compare.py under every assisted policy; here each runs once, under
its own policy, and the figures docs/simulator.md gives for it are checked where they are the point.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from simulator.engine import RunResult, simulate
from simulator.report import summarize
from simulator.scenario import load_scenario

CALM = Path(__file__).resolve().parents[2] / "bench" / "scenarios" / "calm"
pytestmark = pytest.mark.slow


@cache
def run(name: str) -> RunResult:
    return simulate(load_scenario(CALM / f"{name}.yaml"))


def capacity(result: RunResult) -> dict[str, int]:
    return {c.name: c.capacity for c in result.scenario.file.clusters}


def highest_max(result: RunResult, name: str) -> int:
    return max(s.clusters[name].hpa_max or 0 for s in result.steps)


def drains(result: RunResult) -> list[str]:
    return [e.message for e in result.events if e.reason == "DrainedFirst"]


def test_a_returning_top_tier_leaves_the_cloud_warm() -> None:
    """On-prem (room for 40) drops off for 3 minutes every 10 at a steady 5,000 rps. When it answers,
    the per-pod load falls but the demand does not: the cloud is not drained at once (it was cold at
    every next blip), and no max is parked on the full on-prem tier (it reached 178)."""
    result = run("returning-top-tier")
    summary = summarize(result)
    assert summary["violations"] == []
    assert summary["max_reversals"] <= 1
    assert drains(result) == []
    assert highest_max(result, "onprem") <= capacity(result)["onprem"]
    assert summary["served_fraction"] >= 0.975  # 95.8% when the cloud was drained at each return


def test_equal_clouds_are_peers_and_the_full_tier_gets_no_freed_max() -> None:
    """On-prem (40) over four equal clouds at a flat 9,000 rps: the clouds share one priority, so none
    is pinned for another or drained in its favour, and on-prem never holds max it has no room for."""
    result = run("onprem-over-equal-clouds")
    assert summarize(result)["violations"] == []
    assert highest_max(result, "onprem") <= capacity(result)["onprem"]
    clouds = [c for c in capacity(result) if c.startswith("cloud-")]
    pinned = {n for s in result.steps for n in clouds if (s.clusters[n].hpa_min or 0) > 1}
    assert pinned == set()
    assert not any("cloud-" in m.split("back to", 1)[-1] for m in drains(result))


def test_pins_release_on_a_ten_cluster_day() -> None:
    """Seven clouds share priority 1 under three on-prem clusters. After the burst no cluster stays
    pinned: an hour after it, the member HPAs' mins are the assigned ones (F.min 10 on the first
    cluster, 1 elsewhere), and no max is ever parked above a cluster's room."""
    result = run("ten-cluster-day")
    assert summarize(result)["violations"] == []
    rooms = capacity(result)
    assert all(highest_max(result, n) <= room for n, room in rooms.items())
    an_hour_after = [s for s in result.steps if s.t >= (85 + 60) * 60]  # the load is back at 85m
    assert max(sum(c.hpa_min or 0 for c in s.clusters.values()) for s in an_hour_after) <= 10 + len(rooms) - 1


def test_equal_clusters_down_in_turn_keep_their_holders() -> None:
    """Five equal clusters under Aggregated, each down 8 minutes in turn: ties among them keep the
    current holder, so the optimizations after a rejoin no longer refill the first cluster by name (one
    max reversed 8 times within the hour before). What is left is the max no four clusters have room for
    moving out at each failover and back at each rejoin, which §4 allows once in each direction per
    change of the candidate set: no reversal is counted (5 were, before the allowance)."""
    result = run("equal-clusters-down-in-turn")
    summary = summarize(result)
    assert summary["violations"] == []
    assert summary["max_reversals"] == 0 and summary["allowed_moves"] > 0
    assert summary["served_fraction"] >= 0.999
