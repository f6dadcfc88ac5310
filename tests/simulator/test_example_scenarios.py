"""End to end: every example scenario runs the real controller against the simulated fleet.

Each test asserts the outcome its scenario file promises, and that the run reports no violation.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from controller.planning.external_share import member_value, parse_share
from simulator.baselines import baseline_scenarios, pooled_scenario
from simulator.builtin import builtin_scenario
from simulator.engine import RunResult, simulate
from simulator.report import summarize
from simulator.samples import StepSample
from simulator.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
pytestmark = pytest.mark.slow
EXAMPLES = (
    "burst-spill-prioritized",
    "weighted-regions-static",
    "capacity-dynamic-weighted",
    "capacity-aggregated",
    "failover-cluster",
    "pause-during-outage",
    "control-plane-outage",
    "scale-to-and-from-zero",
    "promise-floor-new-app-scaling-to-zero",
    "promise-unmanaged-aggregated-max-zero",
    "promise-ceiling-flapping-cluster",
    "promise-calm-prioritized-spill-bounce",
    "external-static-weighted",
    "external-dynamic-weighted",
    "external-aggregated",
    "external-prioritized",
    "external-duplicated",
)  # the example scenarios each promise: no violation, near the oracle
BROKEN: dict[str, str] = {}
"""Examples the planner still breaks, as ``name: "planner breaks promise N: <violation detail>; issue 11"``.
Their test is a strict xfail: it fails loudly once the planner keeps the promise, and the entry goes.
Empty since the planner fixes of issue 11 (every promise-*.yaml broke its promise before them)."""


def examples() -> list[object]:
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=BROKEN[name]))
        if name in BROKEN
        else name
        for name in EXAMPLES
    ]


@cache
def run(name: str) -> RunResult:
    return simulate(load_scenario(SCENARIOS / f"{name}.yaml"))


def maxes(step: StepSample) -> dict[str, int | None]:
    return {n: c.hpa_max for n, c in step.clusters.items()}


def mins(step: StepSample) -> dict[str, int | None]:
    return {n: c.hpa_min for n, c in step.clusters.items()}


def minute(result: RunResult, m: float) -> StepSample:
    return next(s for s in result.steps if s.t >= m * 60)


def replica_write_gaps(result: RunResult) -> float:
    """The shortest time between two replica writes to the same cluster (flapping shows as 15 s)."""
    last: dict[str, float] = {}
    shortest = float("inf")
    for step in result.steps:
        for action in step.actions:
            kind, cluster = action.split("/", 1)
            if kind == "scale":
                if cluster in last:
                    shortest = min(shortest, step.t - last[cluster])
                last[cluster] = step.t
    return shortest


def longest_pending_s(result: RunResult, cluster: str) -> float:
    longest = current = 0.0
    for step in result.steps:
        current = current + result.step_seconds if step.clusters[cluster].pending else 0.0
        longest = max(longest, current)
    return longest


def test_every_example_is_covered():
    assert set(EXAMPLES) <= {p.stem for p in SCENARIOS.glob("*.yaml")}
    assert set(BROKEN) <= set(EXAMPLES)
    promises = {p.stem for p in SCENARIOS.glob("promise-*.yaml")}
    assert promises <= set(EXAMPLES)  # every promise scenario runs end to end
    assert {p.split("-")[1] for p in promises} == {"floor", "unmanaged", "ceiling", "calm"}


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_scenario_file_is_valid(path):
    assert load_scenario(path).file.clusters


@pytest.mark.parametrize("name", examples())
def test_no_violations_and_near_the_oracle(name):
    result = run(name)
    summary = summarize(result)
    assert summary["violations"] == []
    assert summary["served_vs_oracle"] >= 0.95, summary["served_vs_oracle"]
    assert replica_write_gaps(result) >= 60, (
        "the controller wrote one cluster's replicas twice within a minute"
    )


def test_burst_fills_idc_before_the_cloud_grows():
    result = run("burst-spill-prioritized")
    cloud_grew = next(
        s for s in result.steps if s.clusters["cloud"].replicas > (s.clusters["cloud"].hpa_min or 0)
    )
    idc_full = next(s for s in result.steps if s.clusters["idc"].replicas >= s.clusters["idc"].capacity)
    assert idc_full.t <= cloud_grew.t
    before = [s for s in result.steps if s.t < idc_full.t]
    assert before and all(s.clusters["cloud"].replicas == 0 for s in before)  # idles at 0 (scalingToZero)
    assert max(s.clusters["cloud"].replicas for s in result.steps) > 20  # and then takes the overflow


def test_after_the_burst_the_cloud_drains_first():
    result = run("burst-spill-prioritized")
    after_peak = [s for s in result.steps if s.t >= 45 * 60]
    for step in after_peak:
        cloud = step.clusters["cloud"]
        if cloud.replicas > (cloud.hpa_min or 0):
            assert step.clusters["idc"].replicas == step.clusters["idc"].capacity, step.t


def test_static_weights_split_the_bounds_and_keep_them_summing_to_the_max():
    result = run("weighted-regions-static")
    first = result.steps[0]
    assert maxes(first) == {"eu-west": 20, "us-east": 10, "ap-south": 10}
    assert mins(first) == {"eu-west": 2, "us-east": 1, "ap-south": 1}
    assert all(sum(m or 0 for m in maxes(s).values()) == 40 for s in result.steps)
    peak = minute(result, 45)
    assert sum(c.replicas for c in peak.clusters.values()) == 40  # the federated max binds at the peak


@pytest.mark.parametrize("name", ["capacity-dynamic-weighted", "capacity-aggregated"])
def test_capacity_driven_bounds_follow_available_pods(name):
    result = run(name)
    assert maxes(result.steps[0]) == {"small": 10, "medium": 40, "large": 50}
    for name in ("small", "medium", "large"):  # a max past capacity is taken back at once
        assert longest_pending_s(result, name) <= 60, name
    assert summarize(result)["served_vs_oracle"] >= 0.99


def test_failover_moves_the_share_and_the_cluster_rejoins():
    result = run("failover-cluster")
    during = minute(result, 25)  # 5 minutes into gamma's outage: past the 60 s grace
    assert during.clusters["gamma"].down
    assert (during.clusters["alpha"].hpa_max or 0) + (during.clusters["beta"].hpa_max or 0) == 60
    after = minute(result, 50)  # back since 40m, past the 120 s hysteresis
    assert not after.clusters["gamma"].down
    assert sum(m or 0 for m in maxes(after).values()) == 60 and (after.clusters["gamma"].hpa_max or 0) > 0
    assert summarize(result)["served_vs_oracle"] >= 0.99


def test_a_paused_fleet_holds_its_bounds_through_an_outage_and_fails_over_on_resume():
    result = run("pause-during-outage")
    paused = [s for s in result.steps if 15 * 60 < s.t < 35 * 60]
    assert any(s.clusters["gamma"].down for s in paused)
    assert all(maxes(s) == {"alpha": 20, "beta": 20, "gamma": 20} for s in paused)  # gamma not failed over
    assert all(c.replicas <= (c.hpa_max or 0) for s in paused for c in s.clusters.values())
    alpha = [s.clusters["alpha"].replicas for s in paused]
    assert alpha[-1] > alpha[0]  # its HPA scaled within the frozen bounds, taking gamma's load
    resumed = minute(result, 36)  # resumed at 35m, gamma down since 20m: failed over at once
    assert resumed.clusters["gamma"].down
    assert (resumed.clusters["alpha"].hpa_max or 0) + (resumed.clusters["beta"].hpa_max or 0) == 60
    reasons = [e.reason for e in result.events]
    assert "Paused" in reasons and "Resumed" in reasons


def test_member_hpas_keep_scaling_while_the_controller_is_down():
    result = run("control-plane-outage")
    outage = [s for s in result.steps if not s.controller_up]
    assert outage and all(not s.actions for s in outage)
    assert len({tuple(maxes(s).items()) for s in outage}) == 1  # bounds frozen at what was last written
    cloud = [s.clusters["cloud"].replicas for s in outage]
    assert cloud[-1] > cloud[0]  # the cloud HPA scaled up on its own
    assert all(c.replicas <= (c.hpa_max or 0) for s in outage for c in s.clusters.values())
    resumed = [s for s in result.steps if s.controller_up and s.t > outage[-1].t]
    assert resumed and summarize(result)["served_vs_oracle"] >= 0.98


def test_a_cluster_goes_to_zero_at_night_and_comes_back_for_the_morning():
    result = run("scale-to-and-from-zero")
    night = [s for s in result.steps if 30 * 60 <= s.t < 55 * 60]
    assert all(s.clusters["west"].replicas == 0 and s.clusters["east"].replicas >= 1 for s in night)
    morning = minute(result, 75)
    assert morning.clusters["west"].replicas > 0
    assert morning.clusters["east"].pending == 0


def test_builtin_prioritized_beats_the_static_split_and_nears_the_oracle():
    scenario = builtin_scenario()
    ours = summarize(simulate(scenario))
    static = next(
        summarize(simulate(s)) for label, s in baseline_scenarios(scenario) if label == "static-split"
    )
    assert ours["violations"] == []
    assert ours["served_vs_oracle"] >= 0.95
    assert ours["served_fraction"] > static["served_fraction"]


EXTERNAL = sorted(p.stem for p in SCENARIOS.glob("external-*.yaml"))


def test_every_policy_has_a_queue_driven_example():
    policies = {load_scenario(SCENARIOS / f"{n}.yaml").federated_hpa.spec.assignment_type for n in EXTERNAL}
    assert policies == {"Duplicated", "StaticWeighted", "DynamicWeighted", "Aggregated", "Prioritized"}
    assert set(EXTERNAL) <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXTERNAL)
def test_a_queue_driven_fleet_runs_within_15_percent_of_one_hpa(name):
    """Issue 16: with each member's target divided by its share of the queue, the fleet's
    replica-seconds are those of one HPA over the pooled fleet reading the same queue, within 15%."""
    result = run(name)
    single = summarize(pooled_scenario(result.scenario).run())
    ratio = summarize(result)["replica_seconds_total"] / single["replica_seconds_total"]
    assert 0.85 <= ratio <= 1.15, ratio
    # every member HPA holds the queue's target divided by its share, as the status row says
    final = result.final
    assert final is not None and final.status is not None
    shares = {row.name: parse_share(row.metric_share) for row in final.status.clusters or []}
    assert sum(s or 0 for s in shares.values()) == 1000
    for row in final.status.clusters or []:
        [held] = row.metric_targets or []
        assert (held.name, held.average_value) == (
            "queue_messages",
            member_value("100", shares[row.name] or 0),
        )
