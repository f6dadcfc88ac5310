"""Elastic room from node groups and NodePools, and pending pods sorted by the autoscaler's Events."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from controller.planning.capacity import NodeInfo
from controller.planning.node_autoscaling import (
    NodeGroup,
    cluster_autoscaler_room,
    karpenter_room,
    pending_reasons,
    pods_per_node,
)

TEMPLATE: dict[str, Any] = {"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}


def node(name: str, group: str, cpu: str = "4", **labels: str) -> NodeInfo:
    return NodeInfo(
        name=name,
        allocatable={"cpu": Decimal(cpu), "memory": Decimal(16 * 2**30), "pods": Decimal(110)},
        labels={"eks.amazonaws.com/nodegroup": group, **labels},
    )


def test_pods_per_node_from_an_empty_node_of_that_size() -> None:
    assert pods_per_node(node("n1", "web", cpu="4"), TEMPLATE) == 4
    selective = {**TEMPLATE, "nodeSelector": {"gpu": "true"}}
    assert pods_per_node(node("n1", "web"), selective) == 0


def test_room_is_max_minus_target_times_pods_per_node_over_fitting_groups() -> None:
    groups = [NodeGroup("web", 0, 30, 2, 2), NodeGroup("gpu", 0, 10, 0)]
    nodes = [node("n1", "web", cpu="4"), node("g1", "gpu", cpu="2", gpu="true")]
    gpu_only = {**TEMPLATE, "nodeSelector": {"gpu": "true"}}
    assert cluster_autoscaler_room(groups, nodes, TEMPLATE).pods == 28 * 4 + 10 * 2
    assert cluster_autoscaler_room(groups, nodes, gpu_only).pods == 10 * 2


def test_the_node_shape_is_the_largest_of_the_groups_that_fit() -> None:
    groups = [NodeGroup("web", 0, 30, 2, 2), NodeGroup("big", 0, 5, 1, 1), NodeGroup("gpu", 0, 10, 0)]
    nodes = [node("n1", "web", cpu="4"), node("b1", "big", cpu="8"), node("g1", "gpu", cpu="2", gpu="true")]
    assert cluster_autoscaler_room(groups, nodes, TEMPLATE).pods_per_node == 8
    gpu_only = {**TEMPLATE, "nodeSelector": {"gpu": "true"}}
    assert cluster_autoscaler_room(groups, nodes, gpu_only).pods_per_node == 2


def test_the_standing_pods_are_what_the_groups_minimum_nodes_hold() -> None:
    # web keeps 2 nodes of 4 pods whatever runs there, big 1 of 8, gpu 3 of 2; a template for gpu
    # nodes only has gpu's alone
    groups = [NodeGroup("web", 2, 30, 3, 3), NodeGroup("big", 1, 5, 1, 1), NodeGroup("gpu", 3, 10, 3)]
    nodes = [node("n1", "web", cpu="4"), node("b1", "big", cpu="8"), node("g1", "gpu", cpu="2", gpu="true")]
    assert cluster_autoscaler_room(groups, nodes, TEMPLATE).standing_pods == 2 * 4 + 1 * 8 + 3 * 2
    gpu_only = {**TEMPLATE, "nodeSelector": {"gpu": "true"}}
    assert cluster_autoscaler_room(groups, nodes, gpu_only).standing_pods == 3 * 2
    assert cluster_autoscaler_room([NodeGroup("web", 0, 30, 3, 3)], nodes, TEMPLATE).standing_pods == 0


def test_a_group_at_zero_takes_the_shape_of_other_nodes_else_one_pod() -> None:
    groups = [NodeGroup("cloud", 0, 30, 0)]
    assert cluster_autoscaler_room(groups, [node("n1", "onprem", cpu="8")], TEMPLATE).pods == 30 * 8
    assert cluster_autoscaler_room(groups, [], TEMPLATE).pods == 30


def test_detail_says_nodes_coming_or_group_at_max() -> None:
    nodes = [node("n1", "web")]
    assert (
        cluster_autoscaler_room([NodeGroup("web", 0, 30, 3, 1)], nodes, TEMPLATE).detail == "2 nodes coming"
    )
    full = cluster_autoscaler_room([NodeGroup("web", 0, 30, 30, 30)], nodes, TEMPLATE)
    assert (full.pods, full.detail) == (0, "node group at max 30")


def pool(name: str, limits: dict[str, str] | None, used: dict[str, str], **template: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": template}}
    if limits is not None:
        spec["limits"] = limits
    return {"metadata": {"name": name}, "spec": spec, "status": {"resources": used}}


def test_karpenter_limits_against_resources() -> None:
    room = karpenter_room([pool("default", {"cpu": "100"}, {"cpu": "40"})], TEMPLATE)
    assert room is not None and (room.pods, room.source) == (60, "karpenter")
    room = karpenter_room(
        [pool("p", {"cpu": "100", "memory": "20Gi"}, {"cpu": "40", "memory": "16Gi"})], TEMPLATE
    )
    assert room is not None and room.pods == 4


def test_karpenter_pool_with_no_limit_is_unbounded_and_tainted_pools_do_not_count() -> None:
    assert karpenter_room([pool("open", None, {})], TEMPLATE) is None
    tainted = pool("gpu", {"cpu": "100"}, {}, taints=[{"key": "gpu", "effect": "NoSchedule"}])
    room = karpenter_room([tainted], TEMPLATE)
    assert room is not None and room.pods == 0


def event(pod: str, reason: str, first: str, last: str, message: str = "") -> dict[str, Any]:
    return {
        "involvedObject": {"kind": "Pod", "name": pod},
        "reason": reason,
        "firstTimestamp": first,
        "lastTimestamp": last,
        "message": message,
    }


def test_pending_pods_sorted_by_their_latest_scale_up_event() -> None:
    events = [
        event("a", "TriggeredScaleUp", "2026-01-01T12:00:00Z", "2026-01-01T12:00:00Z"),
        event("b", "TriggeredScaleUp", "2026-01-01T12:01:00Z", "2026-01-01T12:01:00Z"),
        event("c", "TriggeredScaleUp", "2026-01-01T11:00:00Z", "2026-01-01T11:00:00Z"),
        event(
            "c",
            "NotTriggerScaleUp",
            "2026-01-01T12:02:00Z",
            "2026-01-01T12:02:00Z",
            "1 max node group size reached",
        ),
        event("gone", "NotTriggerScaleUp", "2026-01-01T12:02:00Z", "2026-01-01T12:02:00Z"),
    ]
    seen = pending_reasons(["a", "b", "c", "d"], events)
    assert (seen.coming, seen.stuck) == (2, 1)
    assert seen.coming_since == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert seen.stuck_message == "1 max node group size reached"
