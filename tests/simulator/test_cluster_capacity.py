"""Capacity as real clusters have it, in the simulator: node groups that grow when pods pend and shrink
when nodes idle, namespace quotas that refuse pods, nodes lost by hand, what it all costs, and the
capacity a member shows the controller."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.ports import ClusterIdentity
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA
from simulator.builtin import builtin_document
from simulator.clock import VirtualClock
from simulator.cluster import Room, SimulatedCluster
from simulator.engine import Simulation
from simulator.nodes import NodeGroupSpec
from simulator.report import CSV_COLUMNS, summarize, write_csv
from simulator.scenario import ScenarioError, parse_scenario
from tests.support.writes import scale

T0 = datetime(2026, 11, 23, tzinfo=UTC)
WEB = CrossVersionObjectReference(kind="Deployment", name="web", api_version="apps/v1")
FHPA = FederatedHPA.model_validate(
    {
        "metadata": {"name": "web", "namespace": "default", "uid": "u-1"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 100},
    }
)


def elastic(
    capacity: int = 0, max_nodes: int = 5, min_nodes: int = 0, quota: int | None = None, cost: float = 1.0
) -> tuple[SimulatedCluster, VirtualClock]:
    clock = VirtualClock(T0)
    group = NodeGroupSpec(
        pods_per_node=10, min_nodes=min_nodes, max_nodes=max_nodes, provision_s=180, idle_s=600
    )
    room = Room(node_group=group, quota_pods=quota, node_cost_per_pod_hour=cost)
    return SimulatedCluster(ClusterIdentity(name="cloud"), clock, capacity, 30, WEB, room=room), clock


def fixed(
    capacity: int, room: Room | None = None, replicas: int = 0
) -> tuple[SimulatedCluster, VirtualClock]:
    clock = VirtualClock(T0)
    return SimulatedCluster(
        ClusterIdentity(name="idc"), clock, capacity, 30, WEB, replicas=replicas, room=room
    ), clock


def move(cluster: SimulatedCluster, clock: VirtualClock, seconds: float) -> None:
    clock.advance_to(seconds)
    cluster.advance(clock.now())


def test_pending_pods_bring_whole_nodes_after_the_provisioning_time():
    cloud, clock = elastic()
    scale(cloud, FHPA, 25)
    move(cloud, clock, 0)
    assert (cloud.pods.pending, cloud.nodes.nodes, cloud.nodes.coming_nodes) == (25, 0, 3)  # type: ignore[union-attr]
    seen = cloud.observe(FHPA)
    assert (seen.pending_replicas, seen.pending_coming_replicas, seen.pending_stuck_replicas) == (25, 25, 0)
    assert seen.pending_coming_since == T0
    move(cloud, clock, 70)
    assert cloud.observe(FHPA).capacity.detail == "3 nodes coming, TriggeredScaleUp 70 s ago"  # type: ignore[union-attr]
    move(cloud, clock, 179)
    assert cloud.pods.scheduled == 0
    move(cloud, clock, 180)
    assert (cloud.nodes.nodes, cloud.capacity, cloud.pods.scheduled, cloud.pods.pending) == (3, 30, 25, 0)  # type: ignore[union-attr]


def test_pods_beyond_the_max_nodes_are_not_trigger_scale_up():
    cloud, clock = elastic(max_nodes=2)
    scale(cloud, FHPA, 25)
    move(cloud, clock, 0)
    seen = cloud.observe(FHPA)
    assert (seen.pending_coming_replicas, seen.pending_stuck_replicas) == (20, 5)
    move(cloud, clock, 180)
    seen = cloud.observe(FHPA)
    assert (seen.pending_replicas, seen.pending_coming_replicas, seen.pending_stuck_replicas) == (5, 0, 5)
    assert seen.capacity is not None
    assert seen.capacity.detail == "node group at max 2 (NotTriggerScaleUp)"
    assert (seen.capacity.firm, seen.capacity.elastic, seen.available_replicas) == (20, 0, 20)


def test_nodes_added_by_hand_while_a_scale_up_is_on_its_way_never_exceed_the_max():
    # found by a user-level review: 2 nodes by hand up to the group's max of 4 while 3 were coming made
    # 6 nodes (billed), and the controller was shown -20 of elastic room
    cloud, clock = elastic(capacity=10, max_nodes=4)
    scale(cloud, FHPA, 35)
    move(cloud, clock, 0)
    assert (cloud.nodes.nodes, cloud.nodes.coming_nodes) == (1, 3)  # type: ignore[union-attr]
    cloud.set_room(30)  # an operator adds 2 nodes by hand: one of the three coming still comes
    move(cloud, clock, 30)
    assert cloud.observe(FHPA).capacity.detail.startswith("1 node coming, ")  # type: ignore[union-attr]
    cloud.set_room(40)  # an operator adds 3 nodes by hand
    move(cloud, clock, 60)
    assert (cloud.nodes.nodes, cloud.nodes.coming_nodes) == (4, 0)  # type: ignore[union-attr]
    move(cloud, clock, 180)
    assert cloud.nodes.nodes == 4  # type: ignore[union-attr]
    seen = cloud.observe(FHPA)
    assert seen.capacity is not None and (seen.capacity.firm, seen.capacity.elastic) == (40, 0)


def test_an_empty_node_goes_after_the_idle_time_down_to_min_nodes():
    cloud, clock = elastic(capacity=40, min_nodes=1)
    scale(cloud, FHPA, 12)  # two nodes used, two empty
    move(cloud, clock, 0)
    move(cloud, clock, 599)
    assert cloud.nodes.nodes == 4  # type: ignore[union-attr]
    move(cloud, clock, 600)
    assert cloud.nodes.nodes == 2  # type: ignore[union-attr]
    scale(cloud, FHPA, 0)
    move(cloud, clock, 1200)
    assert cloud.nodes.nodes == 2  # type: ignore[union-attr]  # empty since 1200 s only
    move(cloud, clock, 1800)
    assert cloud.nodes.nodes == 1  # type: ignore[union-attr]  # minNodes stays


def test_an_elastic_cluster_shows_firm_and_elastic_room_capped_by_its_quota():
    cloud, _ = elastic(capacity=10, max_nodes=5)
    seen = cloud.observe(FHPA)
    assert seen.capacity is not None
    assert (seen.capacity.firm, seen.capacity.elastic, seen.available_replicas) == (10, 40, 50)
    assert (seen.capacity.source, seen.capacity.provision_seconds) == ("cluster-autoscaler", 180)
    assert seen.capacity.pods_per_node == 10  # the node shape, as the cluster autoscaler's groups show it
    assert seen.capacity.standing_pods == 0
    kept, _ = elastic(capacity=20, max_nodes=5, min_nodes=2)
    seen = kept.observe(FHPA)
    assert seen.capacity is not None and seen.capacity.standing_pods == 20  # minNodes x podsPerNode
    capped, _ = elastic(capacity=10, max_nodes=5, quota=25)
    seen = capped.observe(FHPA)
    assert seen.capacity is not None
    assert (seen.capacity.firm, seen.capacity.elastic, seen.available_replicas) == (10, 15, 25)
    assert seen.capacity.source == "quota"


def test_pods_beyond_the_quota_are_never_created():
    idc, clock = fixed(100, Room(quota_pods=40))
    scale(idc, FHPA, 50)
    move(idc, clock, 30)
    assert (idc.replicas, idc.pods.total, idc.pods.pending, idc.pods.starting_count, idc.refused) == (
        50,
        40,
        0,
        0,
        10,
    )
    seen = idc.observe(FHPA)
    assert (seen.current_replicas, seen.pending_replicas, seen.refused_replicas) == (50, 0, 10)
    assert seen.capacity is not None
    assert (seen.capacity.firm, seen.capacity.source) == (40, "quota")
    assert seen.capacity.detail == "quota 40 pods, 40 used"
    assert seen.available_replicas == 40


def test_a_warm_start_above_the_quota_runs_the_quota_only():
    idc, _ = fixed(100, Room(quota_pods=40), replicas=50)
    assert (idc.pods.ready, idc.refused) == (40, 10)


def test_capacity_lost_by_hand_evicts_starting_pods_first_then_ready_ones():
    room = Room(capacity_changes=((VirtualClock(T0).at(60), 10),))
    idc, clock = fixed(20, room, replicas=12)
    scale(idc, FHPA, 16)  # 4 starting
    move(idc, clock, 15)
    assert (idc.pods.ready, idc.pods.starting_count) == (12, 4)
    move(idc, clock, 60)
    assert (idc.capacity, idc.pods.ready, idc.pods.starting_count, idc.pods.pending) == (10, 10, 0, 6)


def test_a_node_group_costs_every_node_and_a_fixed_cluster_its_running_pods():
    cloud, clock = elastic(capacity=30, cost=0.05)
    scale(cloud, FHPA, 1)
    move(cloud, clock, 30)
    assert cloud.cost_per_hour == pytest.approx(30 * 0.05)  # 3 nodes x 10 pods, used or not
    idc, clock = fixed(30, Room(cost_per_pod_hour=2.0), replicas=5)
    assert idc.cost_per_hour == 10.0


# --- the scenario keys ------------------------------------------------------------------------------


def doc(**cloud: Any) -> dict[str, Any]:
    data = copy.deepcopy(builtin_document())
    data["duration"] = "1h"
    data["clusters"][1] = {"name": "cloud", "labels": {"location": "cloud"}, "podStartup": "60s", **cloud}
    return data


def problems_of(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, "test.yaml")
    return caught.value.problems


AUTOSCALING = {"podsPerNode": 10, "minNodes": 0, "maxNodes": 30, "provisionSeconds": 180, "idleSeconds": 600}


@pytest.mark.parametrize(
    ("cloud", "problem"),
    [
        (
            {"capacity": 25, "autoscaling": AUTOSCALING},
            "clusters[1].capacity: 25 is not a multiple of autoscaling.podsPerNode 10",
        ),
        (
            {"capacity": 310, "autoscaling": AUTOSCALING},
            "clusters[1].capacity: 31 nodes is above autoscaling.maxNodes 30",
        ),
        (
            {"capacity": 0, "autoscaling": {**AUTOSCALING, "minNodes": 31}},
            "clusters[1].autoscaling.minNodes: 31 is above maxNodes 30",
        ),
        (
            {"capacity": 0, "autoscaling": {**AUTOSCALING, "minNodes": 2}},
            "clusters[1].capacity: 0 is fewer nodes than autoscaling.minNodes 2",
        ),
        (
            {"capacity": 0, "autoscaling": {**AUTOSCALING, "podsPerNode": 0}},
            "clusters[1].autoscaling.podsPerNode:",
        ),
        ({"capacity": 0, "autoscaling": {"podsPerNode": 10}}, "clusters[1].autoscaling.maxNodes: required"),
        (
            {"capacity": 0, "autoscaling": AUTOSCALING, "capacityChanges": [{"at": "30m", "capacity": 15}]},
            "clusters[1].capacityChanges[0].capacity: 15 is not a multiple",
        ),
        (
            {"capacity": 10, "capacityChanges": [{"at": "2h", "capacity": 5}]},
            "clusters[1].capacityChanges[0].at: after the end",
        ),
        (
            {"capacity": 10, "capacityChanges": [{"at": "30m", "capacity": 5}, {"at": "30m", "capacity": 8}]},
            "clusters[1].capacityChanges[1].at: 1800s is also capacityChanges[0]'s",
        ),
        ({"capacity": 10, "quota": {"pods": -1}}, "clusters[1].quota.pods:"),
        ({"capacity": 10, "costPerPodHour": -1}, "clusters[1].costPerPodHour:"),
    ],
)
def test_a_bad_capacity_key_is_named_by_its_field(cloud: dict[str, Any], problem: str):
    found = problems_of(doc(**cloud))
    assert any(p.startswith(problem) for p in found), found


def test_an_elastic_run_reports_nodes_cost_and_quota_refusals(tmp_path):
    data = doc(capacity=0, autoscaling=AUTOSCALING, costPerPodHour=0.05)
    data["clusters"][0]["quota"] = {"pods": 25}  # idc's 30 pods of room, but a quota of 25
    result = Simulation(parse_scenario(data)).run()
    summary = summarize(result)
    assert summary["node_seconds"]["idc"] == 0 and summary["node_seconds"]["cloud"] > 0
    # the planner reads the quota: idc's room is 25, and pods it refuses would count as pending at once
    assert summary["quota_refused_pod_seconds"] == {"idc": 0, "cloud": 0}
    peak_nodes = max(s.clusters["cloud"].nodes for s in result.steps)
    assert peak_nodes * 10 >= max(s.clusters["cloud"].replicas for s in result.steps)
    idc_pods = sum(s.clusters["idc"].ready + s.clusters["idc"].starting for s in result.steps) * 15 / 3600
    assert summary["cost_total"] == pytest.approx(
        idc_pods * 1.0 + summary["node_seconds"]["cloud"] / 3600 * 10 * 0.05
    )
    assert all(s.clusters["cloud"].capacity == s.clusters["cloud"].nodes * 10 for s in result.steps)
    path = tmp_path / "timeline.csv"
    write_csv(result, path)
    header = path.read_text().splitlines()[0]
    assert header.split(",")[-2:] == ["nodes", "quota_refused"] == list(CSV_COLUMNS[-2:])


def test_refusals_are_reported_where_nothing_moves_them():
    """Duplicated gives idc all of F.max whatever its quota: the pods beyond it are refused, and counted."""
    data = doc(capacity=0, autoscaling=AUTOSCALING)
    data["clusters"][0]["quota"] = {"pods": 25}
    data["federatedHPA"]["spec"]["federatedHPAAssignment"] = {"federatedHPAAssignmentType": "Duplicated"}
    summary = summarize(Simulation(parse_scenario(data)).run())
    assert summary["quota_refused_pod_seconds"]["idc"] > 0
