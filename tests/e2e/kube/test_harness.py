"""The kube tier itself: real v1.20.2 members behave as the rest of the tier assumes.

What is checked here is what every other kube test leans on: the real Deployment and ReplicaSet
controllers make pods, the real scheduler binds them or marks them Unschedulable, the kubelet
stand-in makes bound pods Running then Ready after its delay and finishes deletions, the metrics
API serves each ready pod's share of the demand over ALL members, the real HPA controller scales
from those metrics through autoscaling/v2beta2, and a stopped apiserver comes back with its data.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from tests.support.kube_load import LoadModel
from tests.support.kubemember import KubeMember, NodeSpec, wait_for

pytestmark = pytest.mark.kube


def test_the_member_serves_1_20_with_autoscaling_v2beta2_and_not_v2(
    kube_members: dict[str, KubeMember],
) -> None:
    member = kube_members["m1"]
    assert member.get("/version")["gitVersion"] == "v1.20.2"
    versions = {v["version"] for v in member.get("/apis/autoscaling")["versions"]}
    assert "v2beta2" in versions and "v2" not in versions


def test_pods_are_bound_made_ready_after_the_delay_or_left_unschedulable(
    kube_members: dict[str, KubeMember], kube_namespace: str
) -> None:
    member = kube_members["m1"]  # one node of 2 CPU: four 500m pods fit, the fifth does not
    member.create_deployment(kube_namespace, "web", replicas=5, cpu="500m")
    seen_starting = wait_for(
        lambda: member.pod_summary(kube_namespace, "web")["starting"] > 0, 30, "a pod Running, not Ready yet"
    )
    assert seen_starting
    summary = wait_for(
        lambda: (
            (s := member.pod_summary(kube_namespace, "web"))["ready"] == 4 and s["unschedulable"] == 1 and s
        ),
        60,
        "four ready pods and one Unschedulable",
    )
    assert summary["pending"] == 0 and summary["starting"] == 0
    unschedulable = next(p for p in member.pods(kube_namespace, "web") if not p["spec"].get("nodeName"))
    scheduled = next(c for c in unschedulable["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"
    assert "Insufficient cpu" in scheduled["message"]


def test_a_scale_down_deletes_pods_for_good_and_frees_the_node(
    kube_members: dict[str, KubeMember], kube_namespace: str
) -> None:
    member = kube_members["m1"]
    member.create_deployment(kube_namespace, "web", replicas=5, cpu="500m")
    wait_for(lambda: member.pod_summary(kube_namespace, "web")["unschedulable"] == 1, 60, "one unschedulable")
    member.check(
        "PATCH",
        f"/apis/apps/v1/namespaces/{kube_namespace}/deployments/web/scale",
        {"spec": {"replicas": 2}},
        "application/merge-patch+json",
    )
    summary = wait_for(
        lambda: (
            (s := member.pod_summary(kube_namespace, "web"))
            and len(member.pods(kube_namespace, "web")) == 2
            and s["ready"] == 2
            and s
        ),
        60,
        "two pods left, both ready (the deleted ones gone, not Terminating)",
    )
    assert summary["terminating"] == 0


def test_metrics_share_the_demand_over_the_ready_pods_of_every_member(
    kube_members: dict[str, KubeMember], kube_namespace: str, kube_load: LoadModel
) -> None:
    m1, m2 = kube_members["m1"], kube_members["m2"]
    m1.create_deployment(kube_namespace, "api", replicas=2, cpu="200m")
    m2.create_deployment(kube_namespace, "api", replicas=2, cpu="200m")
    for member in (m1, m2):
        wait_for(partial(two_ready, member, kube_namespace), 60, f"{member.name}: two ready pods")
    kube_load.set_demand(kube_namespace, "api", 1000)
    usage = m1.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{kube_namespace}/pods?labelSelector=app%3Dapi")
    assert [i["containers"][0]["usage"]["cpu"] for i in usage["items"]] == ["250m", "250m"]
    other = m1.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{kube_namespace}/pods?labelSelector=app%3Dother")
    assert other["items"] == []


def two_ready(member: KubeMember, namespace: str) -> bool:
    return member.pod_summary(namespace, "api")["ready"] == 2


def test_the_real_hpa_controller_scales_from_the_load_model(
    kube_members: dict[str, KubeMember], kube_namespace: str, kube_load: LoadModel
) -> None:
    member = kube_members["m1"]
    member.create_deployment(kube_namespace, "web", replicas=1, cpu="200m")
    wait_for(lambda: member.pod_summary(kube_namespace, "web")["ready"] == 1, 60, "one ready pod")
    kube_load.set_demand(kube_namespace, "web", 600)  # 300% of one pod's request
    member.create(
        f"/apis/autoscaling/v2beta2/namespaces/{kube_namespace}/horizontalpodautoscalers",
        {
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 3,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 100},
                        },
                    }
                ],
            },
        },
    )

    def status() -> dict[str, Any]:
        hpa = member.get(
            f"/apis/autoscaling/v2beta2/namespaces/{kube_namespace}/horizontalpodautoscalers/web"
        )
        return dict(hpa.get("status") or {})

    # ceil(1 * 300 / 100) = 3 = max: the real controller scales and reports the limit
    final = wait_for(lambda: (s := status()).get("desiredReplicas") == 3 and s, 60, "HPA wants 3")
    conditions = {c["type"]: c for c in final.get("conditions") or []}
    assert conditions["ScalingActive"]["status"] == "True"
    wait_for(lambda: member.pod_summary(kube_namespace, "web")["ready"] == 3, 60, "three ready pods")
    # shared by 3 ready pods, 600m is 100% of the target: it stays at 3 over the next syncs
    time.sleep(3 * member.hpa.sync_period_s)
    settled = status()
    assert settled["currentReplicas"] == 3 and settled["desiredReplicas"] == 3
    assert settled["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 100


def test_a_stopped_apiserver_comes_back_with_its_data(kube_member_factory: Callable[..., KubeMember]) -> None:
    member = kube_member_factory("outage", nodes=[NodeSpec("outage-node", cpu="1")])
    member.create_namespace("keep")
    member.create_deployment("keep", "web", replicas=1, cpu="100m")
    wait_for(lambda: member.pod_summary("keep", "web")["ready"] == 1, 60, "one ready pod")
    member.stop_apiserver()
    with pytest.raises(OSError):
        member.request("GET", "/readyz", timeout=2)
    member.start_apiserver()
    assert member.pod_summary("keep", "web")["ready"] == 1
    member.check(
        "PATCH",
        "/apis/apps/v1/namespaces/keep/deployments/web/scale",
        {"spec": {"replicas": 2}},
        "application/merge-patch+json",
    )
    wait_for(
        lambda: member.pod_summary("keep", "web")["ready"] == 2, 60, "controllers work after the restart"
    )
