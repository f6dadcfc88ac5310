"""Firm and elastic room: quota arithmetic, quota refusals, and how the kinds combine."""

from __future__ import annotations

from typing import Any

from controller.planning.room import (
    Elastic,
    available,
    combine,
    pod_limits,
    quota_refusal,
    quota_room,
    refused_replicas,
)

TEMPLATE = {"containers": [{"resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]}


def quota(hard: dict[str, str], used: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"spec": {"hard": hard, **spec}, "status": {"hard": hard, "used": used}}


def test_pods_quota_leaves_hard_minus_used() -> None:
    room = quota_room([quota({"pods": "40"}, {"pods": "32"})], TEMPLATE)
    assert room is not None and room.pods == 8
    assert room.words() == "quota 40 pods, 32 used"


def test_cpu_quota_divides_by_the_pod_request() -> None:
    room = quota_room(
        [quota({"requests.cpu": "10", "pods": "100"}, {"requests.cpu": "8", "pods": "3"})], TEMPLATE
    )
    assert room is not None and (room.pods, room.resource) == (4, "requests.cpu")


def test_the_tightest_quota_over_several_binds() -> None:
    quotas = [
        quota({"count/pods": "50"}, {"count/pods": "45"}),
        quota({"requests.memory": "1Gi"}, {"requests.memory": "512Mi"}),
    ]
    room = quota_room(quotas, TEMPLATE)
    assert room is not None and (room.pods, room.resource) == (2, "requests.memory")


def test_limits_quota_reads_the_limits_else_the_requests() -> None:
    limited = {"containers": [{"resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1"}}}]}
    assert pod_limits(limited)["cpu"] == 1
    room = quota_room([quota({"limits.cpu": "4"}, {"limits.cpu": "1"})], limited)
    assert room is not None and room.pods == 3
    room = quota_room([quota({"limits.cpu": "4"}, {"limits.cpu": "1"})], TEMPLATE)
    assert room is not None and room.pods == 6


def test_used_above_hard_is_no_room_not_negative() -> None:
    room = quota_room([quota({"pods": "10"}, {"pods": "12"})], TEMPLATE)
    assert room is not None and room.pods == 0


def test_a_resource_the_pod_does_not_ask_for_and_scoped_quotas_do_not_bind() -> None:
    assert quota_room([quota({"requests.nvidia.com/gpu": "1"}, {})], TEMPLATE) is None
    assert quota_room([quota({"pods": "1"}, {"pods": "1"}, scopes=["BestEffort"])], TEMPLATE) is None


def test_replica_failure_with_a_quota_message_refuses_the_missing_pods() -> None:
    status = {
        "replicas": 40,
        "conditions": [
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedCreate",
                "message": 'pods "web-x" is forbidden: exceeded quota: q, requested: pods=1, '
                "used: pods=40, limited: pods=40",
            }
        ],
    }
    assert quota_refusal(status) is not None
    assert refused_replicas(46, status) == 6
    other = {
        "replicas": 40,
        "conditions": [{"type": "ReplicaFailure", "status": "True", "message": "no service account"}],
    }
    assert refused_replicas(46, other) == 0


def test_combine_adds_elastic_to_firm() -> None:
    room = combine(running=3, fit=1, elastic=Elastic(pods=20, source="cluster-autoscaler", pods_per_node=4))
    assert (room.firm, room.elastic, room.source, room.pods_per_node) == (4, 20, "cluster-autoscaler", 4)
    assert available(room) == 24


def test_quota_caps_elastic_then_firm() -> None:
    q = quota_room([quota({"pods": "40"}, {"pods": "30"})], TEMPLATE)
    room = combine(running=30, fit=2, quota=q, elastic=Elastic(pods=100, source="cluster-autoscaler"))
    assert (room.firm, room.elastic, room.source) == (32, 8, "quota")
    room = combine(running=30, fit=50, quota=q)
    assert (room.firm, room.elastic, room.detail) == (40, 0, "quota 40 pods, 30 used")
    room = combine(running=30, fit=None, quota=q)
    assert available(room) == 40


def test_a_refusal_makes_the_cluster_full_now() -> None:
    q = quota_room([quota({"pods": "40"}, {"pods": "40"})], TEMPLATE)
    room = combine(
        running=40, fit=12, quota=q, elastic=Elastic(pods=30, source="declared"), refusal="exceeded quota"
    )
    assert (room.firm, room.elastic, room.source, room.detail) == (40, 0, "quota", "quota 40 pods, 40 used")


def test_unknown_fit_is_unknown_room() -> None:
    assert available(combine(running=3, fit=None)) is None


def test_a_node_autoscaler_at_its_max_is_still_the_source() -> None:
    room = combine(running=30, fit=0, elastic=Elastic(pods=0, source="cluster-autoscaler", detail="at max"))
    assert (room.firm, room.elastic, room.source, room.detail) == (30, 0, "cluster-autoscaler", "at max")
