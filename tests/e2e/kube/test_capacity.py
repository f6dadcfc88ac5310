"""Capacity signals end to end on REAL members (Kubernetes v1.20.2): a namespace quota, a node group,
a Karpenter NodePool and an operator's declared bound.

Every member is registered with `fhpa cluster join` (in the test process, against the member's admin
kubeconfig), so the controller reads each signal with the ServiceAccount token and the RBAC of
manifests/member/ that join grants: a verb missing there leaves the signal unread and the test fails.

The on-prem member is the session's m1 (one 2-CPU node: room for four 500m pods) with a real
ResourceQuota of 2 pods in the test's namespace, so the real quota admission refuses the third pod
and the real ReplicaSet controller reports ReplicaFailure (nothing pends). The cloud member starts
with no node at all; the cluster-autoscaler stand-in (tests/support/cluster_autoscaler.py) watches its
real pods, asks for nodes for those the real scheduler cannot place, registers them after a
provision time and writes its status ConfigMap (the older plain-text format) and the pod Events as
the real one does, NotTriggerScaleUp once its one-node group is at its max.

Shown: under a Prioritized burst the controller reads the quota refusal as pods that will not run on
m1, keeps m1 at what its quota lets run and gives the cloud the rest of maxReplicas although the cloud
has no node yet (its room is elastic); the cloud's pods run once the stand-in's node joins, and the
pods its full node group cannot place are recorded as the reason the cloud is full.

The second test reads the two other sources of elastic room from real objects: a NodePool of a
Karpenter CRD served by m2, and the bound `fhpa cluster join --elastic-pods` declares for m1.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from fhpa.cli import main as fhpa_main
from fhpa.explanation import explain
from fhpa_api.models import FederatedHPA
from tests.e2e.kube.test_controller import KubeWorld
from tests.e2e.realapi.test_controller import CRDS
from tests.support.cluster_autoscaler import GROUP_LABEL, ClusterAutoscalerStandIn, NodeGroupSpec
from tests.support.kube_load import LoadModel
from tests.support.kubemember import KubeMember, NodeSpec, wait_for
from tests.support.realapi import RealAPIServer

pytestmark = [pytest.mark.kube, pytest.mark.realapi, pytest.mark.slow]

PODS_PER_NODE = 4  # 2-CPU nodes, 500m pods
NODEPOOL_CRD = Path(__file__).resolve().parents[2] / "support" / "crds" / "karpenter-nodepool.yaml"


def join(world: KubeWorld, member: KubeMember, *flags: str) -> None:
    """Register ``member`` as an operator does: its ServiceAccount, RBAC and token made by join, and the
    member Secret (replacing the admin one KubeWorld wrote) carrying that token."""
    management = world.front.write_kubeconfig(world.workdir / "management.kubeconfig")
    argv = ["cluster", "join", member.name, "--kubeconfig", str(member.workdir / "admin.kubeconfig")]
    assert fhpa_main([*argv, "--management-kubeconfig", str(management), *flags]) == 0


def prioritized(low: str, high: str) -> dict[str, object]:
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 8,
        # long: a pod that pends without a word from the cluster autoscaler would count only after
        # 10 minutes, so a cluster capped sooner was capped by what the autoscaler's Events say
        "autoscaleMultiClusterDelay": 600,
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
    group = NodeGroupSpec("cloud-pool", max_size=1, pods_per_node=PODS_PER_NODE)
    autoscaler = ClusterAutoscalerStandIn(
        "cloud",
        cloud.request,
        lambda group_name, name: cloud.add_node(NodeSpec(name, cpu="2", labels={GROUP_LABEL: group_name})),
        [group],
        provision_seconds=5,
        status_format="text",
    ).start()
    realapi.install_crds(CRDS)
    world = KubeWorld(realapi, {"m1": onprem, "cloud": cloud}, kube_namespace, tmp_path)
    try:
        join(world, onprem)
        join(world, cloud)
        for member in (onprem, cloud):
            member.create_deployment(kube_namespace, "web", replicas=1, cpu="500m")
        world.start_controller()
        world.create_fhpa(prioritized(low="cloud", high="m1"))
        wait_for(lambda: all(world.bounds().values()), 60, "member HPAs on both members")

        # 8 pods' worth at the 80% target: m1's HPA wants them, its quota lets 2 exist
        kube_load.set_demand(kube_namespace, "web", 8 * 400)

        def capped() -> dict[str, Any] | None:
            # the two member HPAs are written one after the other: wait for both of one pass's writes
            b = world.bounds()
            m1, cloud_bounds = b.get("m1"), b.get("cloud")
            if m1 is None or cloud_bounds is None or m1[1] != 2 or cloud_bounds[1] < PODS_PER_NODE:
                return None
            return b

        final = wait_for(capped, 180, "m1 capped at the two pods its quota admits, the rest on the cloud")
        assert final["m1"][1] == 2 and final["cloud"][1] >= PODS_PER_NODE
        assert onprem.pod_summary(kube_namespace, "web")["unschedulable"] == 0  # refused, never pending

        # one node joins (the group's max); the pods it cannot hold get NotTriggerScaleUp, which count at
        # once: the cloud is marked full long before the 600 s delay would count pods no Event explains
        def cloud_full() -> dict[str, Any] | None:
            rows = {r["name"]: r for r in ((world.fhpa() or {}).get("status") or {}).get("clusters") or []}
            cloud_row = rows.get("cloud") or {}
            # the node the stand-in adds is "coming" until it registers and the group's status reads
            # at max: wait for the words that need both the status ConfigMap and NotTriggerScaleUp
            detail = str((cloud_row.get("capacity") or {}).get("detail"))
            stuck = "NotTriggerScaleUp" in detail and detail.startswith("node group at max")
            return rows if cloud_row.get("state") == "Saturated" and stuck else None

        rows = wait_for(cloud_full, 180, "the cloud Saturated, its group at max with NotTriggerScaleUp")
        assert group.registered == 1 and cloud.node_names() == {"cloud-pool-1"}
        selector = "fieldSelector=reason=NotTriggerScaleUp"
        events = cloud.get(f"/api/v1/namespaces/{kube_namespace}/events?{selector}")
        assert events["items"], "the stand-in wrote no NotTriggerScaleUp"
        wait_for(
            lambda: cloud.pod_summary(kube_namespace, "web")["ready"] == PODS_PER_NODE,
            60,
            "the cloud's pods running on the node the stand-in added",
        )
        # the room the controller recorded: m1's from its quota, the cloud's from the text-format status
        m1_room = rows["m1"]["capacity"]
        assert (m1_room["elastic"], m1_room["source"]) == (0, "quota")  # firm: what runs, terminating too
        # words from the quota list (kept a minute, so its count of used may lag), not the refusal alone
        assert m1_room["detail"].startswith("quota 2 pods, ")
        assert rows["cloud"]["capacity"] == {
            "firm": PODS_PER_NODE,
            "elastic": 0,
            "source": "cluster-autoscaler",
            "detail": "node group at max 1 (NotTriggerScaleUp)",
        }
    finally:
        autoscaler.stop()
        status = (world.fhpa() or {}).get("status")
        world.close()
        if world.controller is not None:
            sys.stderr.write(f"--- status ---\n{status}\n")
            sys.stderr.write(f"--- controller log (tail) ---\n{world.controller.log()[-6000:]}\n")


def node_pool(limit_cpu: str, used_cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {"template": {"spec": {"requirements": []}}, "limits": {"cpu": limit_cpu}},
        "status": {"resources": {"cpu": used_cpu, "nodes": "2"}},
    }


def test_a_karpenter_nodepool_and_a_declared_bound_read_from_real_members(
    realapi: RealAPIServer,
    kube_members: dict[str, KubeMember],
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    """m2 serves Karpenter's NodePool API (a CRD) with one NodePool allowed 4 CPUs, 2500m used: room for
    three more 500m pods. m1 says nothing of a node autoscaler; its operator declared 6 pods of elastic
    room at join. DynamicWeighted divides by firm + elastic, as status records the split."""
    m1, m2 = kube_members["m1"], kube_members["m2"]
    crd = yaml.safe_load(NODEPOOL_CRD.read_text())
    m2.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    realapi.install_crds(CRDS)
    world = KubeWorld(realapi, {"m1": m1, "m2": m2}, kube_namespace, tmp_path)
    try:
        wait_for(
            lambda: m2.request("POST", "/apis/karpenter.sh/v1/nodepools", node_pool("4", "2500m"))[0] == 201,
            30,
            "the NodePool API served on m2",
        )
        join(world, m1, "--elastic-pods", "6")
        join(world, m2)
        for member in (m1, m2):
            member.create_deployment(kube_namespace, "web", replicas=1, cpu="500m")
        world.start_controller()
        world.create_fhpa(
            {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2,
                "maxReplicas": 12,
                "federatedHPAAssignment": {"federatedHPAAssignmentType": "DynamicWeighted"},
            }
        )

        def both_recorded() -> dict[str, Any] | None:
            rows = {r["name"]: r for r in ((world.fhpa() or {}).get("status") or {}).get("clusters") or []}
            sources = {n: (r.get("capacity") or {}).get("source") for n, r in rows.items()}
            return rows if sources == {"m1": "declared", "m2": "karpenter"} else None

        rows = wait_for(both_recorded, 300, "m1's room from its declared bound, m2's from its NodePool")
        assert rows["m1"]["capacity"]["elastic"] == 6
        assert rows["m1"]["capacity"]["detail"] == "declared elastic up to 6 pods"
        assert rows["m2"]["capacity"]["elastic"] == 3
        assert rows["m2"]["capacity"]["detail"] == "NodePools general can add 3 pods"
        # the split read firm + elastic of each, and explain prints it from the record
        room = {n: rows[n]["capacity"]["firm"] + rows[n]["capacity"]["elastic"] for n in ("m1", "m2")}
        assert {n: (rows[n]["split"]["room"], rows[n]["split"]["weight"]) for n in room} == {
            n: (r, r) for n, r in room.items()
        }
        fhpa = FederatedHPA.model_validate(world.fhpa())
        said = {c.name: c.why[0] for c in explain(fhpa, [], datetime.now(UTC)).clusters}
        sys.stderr.write(f"{said}\n")
        assert said["m1"].startswith(f"DynamicWeighted: weight {room['m1']} of {sum(room.values())} ")
    finally:
        status = (world.fhpa() or {}).get("status")
        world.close()
        m2.request("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodepools.karpenter.sh")
        if world.controller is not None:
            sys.stderr.write(f"--- status ---\n{status}\n")
            sys.stderr.write(f"--- controller log (tail) ---\n{world.controller.log()[-6000:]}\n")
