"""The single-hpa baseline of --compare: the fleet pooled into one cluster under one native HPA."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from simulator.baselines import (
    DUPLICATED,
    POOLED,
    SINGLE_HPA,
    STATIC_SPLIT,
    baseline_scenarios,
    baselines,
    pooled_scenario,
)
from simulator.cluster import Pods
from simulator.engine import RunResult
from simulator.scenario import Scenario, parse_scenario

T0 = datetime(2026, 11, 23, tzinfo=UTC)
OUTAGE = (10 * 60, 15 * 60)  # member b is down from 10m to 15m


def fleet() -> dict[str, Any]:
    """a (10 pods, 30 s) and b (20 pods, 60 s, an outage) are selected; c is outside the affinity, d has
    no workload and e is tainted NoExecute: none of those three may be pooled."""
    return {
        "name": "pool-me",
        "duration": "20m",
        "clusters": [
            {"name": "a", "labels": {"pool": "yes"}, "capacity": 10, "podStartup": "30s", "replicas": 6},
            {
                "name": "b",
                "labels": {"pool": "yes"},
                "capacity": 20,
                "podStartup": "60s",
                "replicas": 4,
                "outages": [{"at": "10m", "for": "5m"}],
            },
            {"name": "c", "labels": {"pool": "no"}, "capacity": 100, "replicas": 3},
            {"name": "d", "labels": {"pool": "yes"}, "capacity": 100, "workload": False},
            {
                "name": "e",
                "labels": {"pool": "yes"},
                "capacity": 100,
                "taints": [{"key": "maintenance", "effect": "NoExecute"}],
            },
        ],
        "load": {"podCapacity": 100, "trace": [{"at": "0m", "rps": 800}, {"at": "5m", "rps": 2000}]},
        "controllerOutages": [{"at": "16m", "for": "1m"}],
        "federatedHPA": {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "FederatedHPA",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 3,
                "maxReplicas": 25,
                "scalingToZero": True,
                "clusterAffinity": {"labelSelector": {"matchLabels": {"pool": "yes"}}},
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
                "federatedHPAAssignment": {
                    "federatedHPAAssignmentType": "Prioritized",
                    "clusterAutoscalingPreference": [
                        {"targetCluster": {"clusterNames": ["a"]}, "priority": 2},
                        {"targetCluster": {"clusterNames": ["b"]}, "priority": 1},
                    ],
                },
            },
        },
    }


def scenario() -> Scenario:
    return parse_scenario(fleet(), "test")


@cache
def pooled_run() -> RunResult:
    return pooled_scenario(scenario()).run()


def test_compare_runs_three_baselines_in_table_order():
    assert [b.label for b in baselines(scenario())] == [STATIC_SPLIT, DUPLICATED, SINGLE_HPA]


def test_one_cluster_holds_the_capacity_and_replicas_of_the_selected_clusters_only():
    baseline = pooled_scenario(scenario())
    (pool,) = baseline.scenario.file.clusters
    assert pool.name == POOLED
    assert pool.capacity == 10 + 20  # not c (affinity), d (no workload), e (NoExecute)
    assert pool.replicas == 6 + 4
    assert pool.pod_startup == (10 * 30 + 20 * 60) / 30  # the capacity-weighted mean start-up
    assert pool.outages == []  # members' outages act on the pool's room instead


def test_a_members_outage_removes_its_capacity_from_the_pool():
    room = pooled_scenario(scenario()).capacity_at[POOLED]
    assert room(T0) == 30
    assert room(T0 + timedelta(seconds=OUTAGE[0])) == 10
    assert room(T0 + timedelta(seconds=OUTAGE[1] - 1)) == 10
    assert room(T0 + timedelta(seconds=OUTAGE[1])) == 30


def test_in_the_run_the_pool_shrinks_during_the_outage_and_pods_beyond_it_pend():
    steps = pooled_run().steps
    during = [s.clusters[POOLED] for s in steps if OUTAGE[0] <= s.t < OUTAGE[1]]
    outside = [s.clusters[POOLED] for s in steps if not OUTAGE[0] <= s.t < OUTAGE[1]]
    assert during and all(c.capacity == 10 for c in during)
    assert all(c.capacity == 30 for c in outside)
    assert all(c.ready + c.starting <= 10 for c in during)
    assert any(c.pending > 0 for c in during)  # the HPA wants 25 for 2000 rps; 10 fit
    assert max(s.clusters[POOLED].ready for s in steps if s.t >= OUTAGE[1]) > 10  # room back, they start


def test_one_native_hpa_with_the_federated_bounds_and_nothing_else():
    baseline = pooled_scenario(scenario())
    spec = baseline.scenario.federated_hpa.spec
    assert spec.assignment_type == "Duplicated"
    assert spec.cluster_affinity is None and not spec.effective_scaling_to_zero
    original = scenario().federated_hpa.spec
    assert (spec.effective_min, spec.max_replicas) == (3, 25)
    assert spec.metrics == original.metrics and spec.behavior == original.behavior
    bounds = {(s.clusters[POOLED].hpa_min, s.clusters[POOLED].hpa_max) for s in pooled_run().steps}
    assert bounds == {(3, 25)}
    assert pooled_run().api_writes == {POOLED: 1}  # the one HPA, created once


def test_same_load_controller_outages_and_planner_flags():
    original, pooled = scenario().file, pooled_scenario(scenario()).scenario.file
    assert pooled.load == original.load
    assert pooled.controller_outages == original.controller_outages
    assert (pooled.duration, pooled.step, pooled.start) == (original.duration, original.step, original.start)
    assert pooled.planner == original.planner
    demand = [s.demand_rps for s in pooled_run().steps]
    assert demand[0] == 800 and demand[-1] == 2000


def test_a_smaller_room_sends_starting_then_ready_pods_back_to_pending_and_they_start_again():
    startup = timedelta(seconds=30)
    pods = Pods(capacity=10, startup=startup, ready=6)
    pods.scale_to(9, T0)  # 3 starting
    pods.set_capacity(5, T0 + timedelta(seconds=1))
    assert (pods.ready, pods.starting_count, pods.pending) == (5, 0, 4)
    assert pods.total == 9  # the workload's replicas are unchanged
    later = T0 + timedelta(seconds=60)
    pods.set_capacity(10, later)
    assert (pods.ready, pods.starting_count, pods.pending) == (5, 4, 0)
    pods.advance(later + startup)
    assert pods.ready == 9


def hybrid() -> dict[str, Any]:
    """idc: fixed 20 pods under a 15-pod quota; two elastic regions of different node sizes and delays."""
    group = {"minNodes": 0, "provisionSeconds": 120, "idleSeconds": 300}
    data = fleet()
    data["clusters"] = [
        {"name": "idc", "capacity": 20, "replicas": 10, "quota": {"pods": 15}, "costPerPodHour": 0.5},
        {"name": "east", "capacity": 0, "autoscaling": {**group, "podsPerNode": 4, "maxNodes": 5}},
        {
            "name": "west",
            "capacity": 12,
            "costPerPodHour": 2.0,
            "autoscaling": {**group, "podsPerNode": 6, "maxNodes": 10, "provisionSeconds": 300},
        },
    ]
    data["federatedHPA"]["spec"].pop("clusterAffinity", None)
    return data


def test_single_hpa_pools_the_node_groups_with_the_fastest_provisioning():
    baseline = pooled_scenario(parse_scenario(hybrid()))
    (pooled,) = baseline.scenario.file.clusters
    assert pooled.autoscaling is not None
    assert (pooled.autoscaling.pods_per_node, pooled.autoscaling.max_nodes) == (2, (20 + 60) // 2)
    assert pooled.autoscaling.provision_seconds == 120
    assert pooled.capacity == 12  # the elastic members' starting nodes; the fixed room comes on top
    assert pooled.cost_per_pod_hour == (20 * 1.0 + 60 * 2.0) / 80
    assert baseline.capacity_at[POOLED](T0) == 15  # idc's room within its quota
    assert baseline.fixed_pod_cost == {POOLED: 0.5}  # a pod on idc's room costs idc's rate, not a node's
    first = baseline.run().steps[0].clusters[POOLED]
    assert (first.capacity, first.nodes, first.ready) == (27, 6, 10)  # warm: idc's 10 run at t=0
    assert first.cost_per_hour == 10 * 0.5 + 6 * 2 * 1.75  # idc's pods at idc's rate, every node at the mean


def test_the_plain_baselines_keep_each_cluster_s_node_group_and_quota():
    for label, scenario in baseline_scenarios(parse_scenario(hybrid())):
        clusters = {c.name: c for c in scenario.file.clusters}
        assert clusters["west"].autoscaling is not None and clusters["idc"].quota is not None, label


def test_baselines_keep_timed_bound_changes_but_not_placement_ones():
    data = hybrid()
    data["changes"] = [
        {
            "at": "5m",
            "federatedHPA": {
                "maxReplicas": 30,
                "federatedHPAAssignment": {"federatedHPAAssignmentType": "Duplicated"},
            },
        },
        {"at": "6m", "federatedHPA": {"scalingToZero": True}},
        {"at": "7m", "cluster": "idc", "labels": {"pool": "no"}},
    ]
    scenario = parse_scenario(data)
    static = dict(baseline_scenarios(scenario))[STATIC_SPLIT]
    assert [(c.at, c.federated_hpa, c.cluster) for c in static.file.changes] == [
        (300.0, {"maxReplicas": 30}, None),
        (420.0, None, "idc"),
    ]
    pooled = pooled_scenario(scenario).scenario
    assert [c.federated_hpa for c in pooled.file.changes] == [{"maxReplicas": 30}]  # no member to relabel
