"""External metric traces in the simulator (issue 16): the scenario key, the simulated HPA's reading of
External and Object metrics as kube's replica calculator does, its status, and a fleet that scales on
a queue with the per-member targets the controller writes (and N times as much without them)."""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.planning.external_share import ANNOTATION_PER_CLUSTER_METRICS, parse_share
from controller.planning.member_hpa import render_spec, spec_digest
from controller.planning.metric_ratio import metric_ratio
from controller.ports import ClusterIdentity
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA
from simulator.clock import VirtualClock
from simulator.cluster import SimulatedCluster
from simulator.engine import Simulation, simulate
from simulator.native_hpa import NativeHPA, current_metrics, spec_metrics
from simulator.replica_calculator import (
    MetricsUnavailableError,
    PodReadings,
    Tolerances,
    per_pod_metric_replicas,
    usage_ratio_replicas,
)
from simulator.report import summarize
from simulator.scenario import ScenarioError, parse_scenario
from tests.support.writes import apply_hpa

T0 = datetime(2026, 11, 23, tzinfo=UTC)


def queue_metric(
    average: str = "100", kind: str = "External", target: str = "AverageValue"
) -> dict[str, Any]:
    value_key = "averageValue" if target == "AverageValue" else "value"
    body: dict[str, Any] = {"metric": {"name": "queue"}, "target": {"type": target, value_key: average}}
    if kind == "Object":
        body["describedObject"] = {"apiVersion": "v1", "kind": "Service", "name": "front"}
    return {"type": kind, kind.lower(): body}


def native(metrics: list[dict[str, Any]], max_: int = 100) -> NativeHPA:
    spec = {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "minReplicas": 1, "maxReplicas": max_}
    return NativeHPA("w", {**spec, "metrics": metrics})


def scenario_doc(policy: str = "Duplicated", opt_out: bool = False, queue: float = 3000) -> dict[str, Any]:
    fhpa: dict[str, Any] = {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"},
            "minReplicas": 1,
            "maxReplicas": 100,
            "metrics": [queue_metric()],
            "federatedHPAAssignment": {"federatedHPAAssignmentType": policy},
        },
    }
    if opt_out:
        fhpa["metadata"]["annotations"] = {ANNOTATION_PER_CLUSTER_METRICS: "true"}
    return {
        "duration": "20m",
        "clusters": [{"name": n, "capacity": 100, "replicas": 2} for n in ("a", "b", "c")],
        "load": {
            "podCapacity": 100,
            "trace": [{"at": 0, "rps": queue}],
            "external": {"queue": [{"at": "0m", "value": queue}]},
        },
        "federatedHPA": fhpa,
    }


# --- the scenario key -----------------------------------------------------------------------------


def test_load_external_traces_are_parsed_and_survive_a_baseline_swap() -> None:
    doc = scenario_doc()
    doc["load"]["external"]["queue"] = [{"at": "0m", "value": 500}, {"at": "20m", "value": 5000}]
    scenario = parse_scenario(doc)
    assert [(p.at, p.value) for p in scenario.file.load.external["queue"]] == [(0, 500), (1200, 5000)]
    swapped = scenario.with_federated_hpa(scenario.file.federated_hpa, "copy")
    assert swapped.file.load.external == scenario.file.load.external


@pytest.mark.parametrize(
    ("points", "problem"),
    [
        ([{"at": "5m", "value": 1}, {"at": "1m", "value": 2}], "strictly increasing"),
        ([], "at least one point"),
        ([{"at": "0m", "value": -1}], "greater than or equal to 0"),
        ([{"at": "0m", "rps": 1}], "unknown key"),
    ],
)
def test_bad_external_traces_are_reported_with_their_path(points: list[dict[str, Any]], problem: str) -> None:
    doc = scenario_doc()
    doc["load"]["external"]["queue"] = points
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(doc)
    assert any(p.startswith("load.external") and problem in p for p in caught.value.problems), caught.value


def test_the_metric_is_linear_in_between_and_flat_after() -> None:
    doc = scenario_doc()
    doc["load"]["external"]["queue"] = [{"at": "0m", "value": 500}, {"at": "10m", "value": 1500}]
    simulation = Simulation(parse_scenario(doc))
    trace = simulation.external["queue"]
    assert (trace.at(0), trace.at(300), trace.at(600), trace.at(3600)) == (500, 1000, 1500, 1500)


# --- the replica calculator -----------------------------------------------------------------------


def test_a_per_pod_target_wants_the_metric_over_the_target_whatever_the_replicas() -> None:
    # queue 5000 (5_000_000m) at 100 per replica: 50 replicas, from 2 or from 40 running
    assert per_pod_metric_replicas(2, 5_000_000, 100_000, Tolerances()) == (50, 2_500_000)
    assert per_pod_metric_replicas(40, 5_000_000, 100_000, Tolerances()) == (50, 125_000)
    assert per_pod_metric_replicas(48, 5_000_000, 100_000, Tolerances()) == (48, 104_167)  # within 10%
    with pytest.raises(MetricsUnavailableError):
        per_pod_metric_replicas(0, 5_000_000, 100_000, Tolerances())


def test_a_value_target_scales_the_ready_pods_by_the_ratio() -> None:
    pods = PodReadings(ready=4, unready=2)
    assert usage_ratio_replicas(6, 2.0, pods, Tolerances()) == 8  # ceil(2.0 * 4 ready)
    assert usage_ratio_replicas(6, 1.05, pods, Tolerances()) == 6
    assert usage_ratio_replicas(0, 1.5, pods, Tolerances()) == 2


@given(
    queue=st.integers(min_value=0, max_value=10**6),
    average=st.integers(min_value=1, max_value=1000),
    current=st.integers(min_value=1, max_value=500),
)
def test_outside_the_tolerance_the_proposal_is_the_ceiling_of_metric_over_target(
    queue: int, average: int, current: int
) -> None:
    replicas, reported = per_pod_metric_replicas(current, queue * 1000, average * 1000, Tolerances())
    ratio = queue / (average * current)
    assert replicas == (current if 0.9 <= ratio <= 1.1 else math.ceil(queue / average))
    assert reported == math.ceil(queue * 1000 / current)


# --- the simulated HPA ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["External", "Object"])
def test_the_simulated_hpa_reads_the_metric_by_name_and_reports_it(kind: str) -> None:
    h = native([queue_metric("200", kind)])
    result = h.sync(T0, 2, PodReadings(ready=2), {"queue": 3000})
    assert result.replicas == 4  # wants 15, the legacy scale-up limit max(2 x 2, 4) holds it at 4
    assert h.status.conditions["ScalingActive"].reason == "ValidMetricFound"
    [entry] = current_metrics(h.status)
    assert entry["type"] == kind and entry[kind.lower()]["current"] == {"averageValue": "1500000m"}
    # what the controller reads from it: the ratio of the reported average to the member's target
    assert metric_ratio(spec_metrics(h), current_metrics(h.status)) == pytest.approx(1500 / 200)


def test_a_value_target_reports_the_value() -> None:
    h = native([queue_metric("1000", target="Value")])
    h.sync(T0, 4, PodReadings(ready=4), {"queue": 3000})
    assert current_metrics(h.status)[0]["external"]["current"] == {"value": "3000000m"}
    assert h.status.desired_replicas == 8  # ceil(3.0 * 4), then the limit max(2 x 4, 4)


def test_a_metric_the_scenario_has_no_trace_for_stops_the_hpa() -> None:
    h = native([queue_metric()])
    assert h.sync(T0, 3, PodReadings(ready=3)).replicas == 3
    active = h.status.conditions["ScalingActive"]
    assert (active.status, active.reason) == ("False", "FailedGetExternalMetric")
    assert "queue" in (active.message or "")


def test_the_member_hpa_is_stamped_with_the_digest_of_the_spec_it_holds() -> None:
    clock = VirtualClock(T0)
    workload = CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="w")
    cluster = SimulatedCluster(ClusterIdentity(name="a"), clock, 10, 30, workload)
    fhpa = FederatedHPA.model_validate(parse_scenario(scenario_doc()).federated_hpa.to_json())
    spec = render_spec(fhpa, 1, 10, metric_share=250)
    apply_hpa(cluster, fhpa, spec)
    observed = cluster.observe(fhpa).hpa
    assert observed is not None and observed.template_digest == spec_digest(spec)
    assert cluster.hpas["w"].spec["metrics"][0]["external"]["target"]["averageValue"] == "400"


# --- a fleet on a queue ---------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["Duplicated", "DynamicWeighted"])
def test_a_fleet_on_a_queue_runs_what_one_hpa_would_and_a_naive_copy_runs_n_times_that(policy: str) -> None:
    """A queue of 3000 at 100 per replica: one HPA wants 30. Three members with their share of the
    target run 30 between them (each one a third, give or take the rounding); copied unchanged, each
    member wants 30 and the fleet runs 90."""
    shared = simulate(parse_scenario(scenario_doc(policy)))
    naive = simulate(parse_scenario(scenario_doc(policy, opt_out=True)))
    end, naive_end = shared.steps[-1], naive.steps[-1]
    assert 30 <= sum(c.replicas for c in end.clusters.values()) <= 32
    assert sum(c.replicas for c in naive_end.clusters.values()) == 90
    assert all(9 <= c.replicas <= 11 for c in end.clusters.values())
    assert shared.final is not None and shared.final.status is not None
    shares = [parse_share(r.metric_share) or 0 for r in shared.final.status.clusters or []]
    assert sum(shares) == 1000 and all(330 <= s <= 340 for s in shares)  # a third each (capped by max)
    assert summarize(shared)["violation_count"] == 0
    assert summarize(naive)["replica_seconds_total"] > 2.5 * summarize(shared)["replica_seconds_total"]


def test_the_queue_moving_does_not_rewrite_the_member_hpas() -> None:
    """The shares follow the policy, not the metric: a queue that grows and falls writes no HPA after
    the first ones (Duplicated over three clusters that keep running)."""
    doc = scenario_doc("DynamicWeighted")
    doc["duration"] = "60m"
    doc["load"]["external"]["queue"] = [
        {"at": "0m", "value": 500},
        {"at": "20m", "value": 6000},
        {"at": "40m", "value": 500},
    ]
    result = simulate(parse_scenario(doc))
    updates = [a for s in result.steps for a in s.actions if a.startswith("update/")]
    creates = [a for s in result.steps for a in s.actions if a.startswith("create/")]
    assert len(creates) == 3
    assert len(updates) <= 3, updates
    assert all(e.reason != "MetricSharesUpdated" or e.at == result.scenario.file.start for e in result.events)


def test_the_same_scenario_gives_the_same_run() -> None:
    doc = scenario_doc("StaticWeighted")
    doc["federatedHPA"]["spec"]["federatedHPAAssignment"]["clusterAutoscalingPreference"] = [
        {"targetCluster": {"clusterNames": ["a"]}, "staticWeight": 2},
        {"targetCluster": {"clusterNames": ["b"]}, "staticWeight": 1},
    ]
    first = summarize(simulate(parse_scenario(copy.deepcopy(doc))))
    again = summarize(simulate(parse_scenario(doc)))
    assert first == again
    assert timedelta(seconds=first["duration_s"]) == timedelta(minutes=20)


def queue_doc(backlog: bool) -> dict[str, Any]:
    """One cluster with room for 5 pods of 100 rps under 800 rps: 300 rps a step it cannot serve."""
    doc = scenario_doc()
    doc["federatedHPA"]["spec"].update(minReplicas=5, maxReplicas=5)
    doc["clusters"] = [{"name": "a", "capacity": 5, "podStartup": "0s", "replicas": 5}]
    doc["load"]["trace"] = [{"at": 0, "rps": 800}, {"at": 600, "rps": 800}, {"at": 615, "rps": 0}]
    doc["load"]["external"] = {"queue": [{"at": 0, "value": 100}]}
    if backlog:
        doc["load"]["backlog"] = ["queue"]
    return doc


def test_a_backlog_queue_grows_by_what_is_not_served_and_drains_with_spare_capacity() -> None:
    sim = Simulation(parse_scenario(queue_doc(backlog=True), "test"))
    for _ in range(4):
        sim.step()
    assert sim.backlog["queue"] == 4 * 300 * 15  # 300 rps unserved, 15 s a step
    while sim.steps[-1].t < 615:
        sim.step()
    grown = sim.backlog["queue"]
    sim.step()  # no more demand: 5 pods of 100 rps work 7,500 messages off in a step
    assert sim.backlog["queue"] == max(0.0, grown - 5 * 100 * 15)
    fixed = Simulation(parse_scenario(queue_doc(backlog=False), "test"))
    fixed.step()
    assert fixed.backlog == {}  # without load.backlog the metric is the trace, as written


def test_a_backlog_must_name_an_external_metric() -> None:
    doc = queue_doc(backlog=True)
    doc["load"]["backlog"] = ["orders"]
    with pytest.raises(ScenarioError, match="backlog: orders not among the external metrics"):
        parse_scenario(doc, "test")
