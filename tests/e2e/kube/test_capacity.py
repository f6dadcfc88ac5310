"""Capacity signals end to end on REAL members (Kubernetes v1.20.2): a namespace quota and a node group.

The on-prem member is the session's m1 (one 2-CPU node: room for four 500m pods) with a real
ResourceQuota of 2 pods in the test's namespace, so the real quota admission refuses the third pod
and the real ReplicaSet controller reports ReplicaFailure (nothing pends). The cloud member starts
with no node at all; the cluster-autoscaler stand-in (tests/support/cluster_autoscaler.py) watches its
real pods, asks for nodes for those the real scheduler cannot place, registers them after a
provision time and writes its status ConfigMap and the pod Events as the real one does.

Shown: under a Prioritized burst the controller reads the quota refusal as pods that will not run on
m1, keeps m1 at what its quota lets run and gives the cloud the rest of maxReplicas although the cloud
has no node yet (its room is elastic); the cloud's pods run once the stand-in's nodes join.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.kube.test_controller import KubeWorld
from tests.e2e.realapi.test_controller import CRDS
from tests.support.cluster_autoscaler import GROUP_LABEL, ClusterAutoscalerStandIn, NodeGroupSpec
from tests.support.kube_load import LoadModel
from tests.support.kubemember import KubeMember, NodeSpec, wait_for
from tests.support.realapi import RealAPIServer

pytestmark = [pytest.mark.kube, pytest.mark.realapi, pytest.mark.slow]

PODS_PER_NODE = 4  # 2-CPU nodes, 500m pods


def prioritized(low: str, high: str) -> dict[str, object]:
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 8,
        "autoscaleMultiClusterDelay": 4,
        "federatedHPAAssignment": {
            "federatedHPAAssignmentType": "Prioritized",
            "clusterAutoscalingPreference": [
                {"targetCluster": {"clusterNames": [high]}, "priority": 2},
                {"targetCluster": {"clusterNames": [low]}, "priority": 1},
            ],
        },
    }


def test_prioritized_burst_spills_past_a_real_quota_onto_a_cloud_from_zero_nodes(
    realapi: RealAPIServer,
    kube_members: dict[str, KubeMember],
    kube_member_factory: Callable[..., KubeMember],
    kube_namespace: str,
    kube_load: LoadModel,
    tmp_path: Path,
) -> None:
    onprem = kube_members["m1"]
    cloud = kube_member_factory("cloud", nodes=(), model=kube_load)
    cloud.create_namespace(kube_namespace)
    onprem.create(
        f"/api/v1/namespaces/{kube_namespace}/resourcequotas",
        {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "2"}}},
    )
    group = NodeGroupSpec("cloud-pool", max_size=3, pods_per_node=PODS_PER_NODE)
    autoscaler = ClusterAutoscalerStandIn(
        "cloud",
        cloud.request,
        lambda group_name, name: cloud.add_node(NodeSpec(name, cpu="2", labels={GROUP_LABEL: group_name})),
        [group],
        provision_seconds=5,
    ).start()
    realapi.install_crds(CRDS)
    world = KubeWorld(realapi, {"m1": onprem, "cloud": cloud}, kube_namespace, tmp_path)
    try:
        for member in (onprem, cloud):
            member.create_deployment(kube_namespace, "web", replicas=1, cpu="500m")
        world.start_controller()
        world.create_fhpa(prioritized(low="cloud", high="m1"))
        wait_for(lambda: all(world.bounds().values()), 60, "member HPAs on both members")

        # 8 pods' worth at the 80% target: m1's HPA wants them, its quota lets 2 exist
        kube_load.set_demand(kube_namespace, "web", 8 * 400)
        final = wait_for(
            lambda: (b := world.bounds()).get("m1") is not None and b["m1"][1] == 2 and b,  # type: ignore[index]
            180,
            "m1 capped at the two pods its quota admits",
        )
        assert final["cloud"] is not None and final["cloud"][1] == 6
        assert onprem.pod_summary(kube_namespace, "web")["unschedulable"] == 0  # refused, never pending
        wait_for(
            lambda: cloud.pod_summary(kube_namespace, "web")["ready"] >= 3,
            180,
            "the cloud's pods running on the nodes the stand-in added",
        )
        assert group.registered >= 1 and cloud.node_names()
        # the room the controller recorded: m1's from its quota, the cloud's from the autoscaler's status
        rows = {r["name"]: r for r in ((world.fhpa() or {}).get("status") or {}).get("clusters") or []}
        assert rows["m1"]["capacity"]["source"] == "quota"
        assert rows["cloud"]["capacity"]["source"] == "cluster-autoscaler"
        assert rows["cloud"]["capacity"]["elastic"] > 0
    finally:
        autoscaler.stop()
        world.close()
        if world.controller is not None:
            sys.stderr.write(f"--- controller log (tail) ---\n{world.controller.log()[-6000:]}\n")
