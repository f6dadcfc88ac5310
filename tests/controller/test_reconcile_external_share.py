"""End to end (issue 16): a queue-driven FederatedHPA reconciled against two members behind the real
kube adapter (KubeMemberCluster over HTTP, FakeKube): each member HPA's stored spec holds the queue's
target divided by its share, the FederatedHPA's status rows show it, a second pass writes nothing (the
adapter's digest of the spec it stamps is the planner's), and the opt-out annotation writes the target
back unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.kube.clients import KubeClient, Timeouts, build_api_client
from controller.kube.member import KubeMemberCluster
from controller.planning.external_share import ANNOTATION_PER_CLUSTER_METRICS
from controller.ports import ClusterIdentity, MemberCluster
from controller.reconcile import reconcile_federated_hpa
from fhpa_api.models import FederatedHPA
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, node, pod
from tests.support.fakes import FakeControlPlane

HPAS = "horizontalpodautoscalers"
T0 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
QUEUE = {
    "type": "External",
    "external": {
        "metric": {"name": "queue_messages"},
        "target": {"type": "AverageValue", "averageValue": "90"},
    },
}


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def now(self) -> datetime:
        return self.at


def queue_fhpa() -> FederatedHPA:
    return FederatedHPA.model_validate(
        {
            "metadata": {"name": "web", "namespace": "default", "uid": "uid-q", "generation": 1},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2,
                "maxReplicas": 30,
                "metrics": [QUEUE],
                "federatedHPAAssignment": {
                    "federatedHPAAssignmentType": "StaticWeighted",
                    "clusterAutoscalingPreference": [
                        {"targetCluster": {"clusterNames": ["m1"]}, "staticWeight": 2},
                        {"targetCluster": {"clusterNames": ["m2"]}, "staticWeight": 1},
                    ],
                },
            },
        }
    )


def start_member(name: str) -> FakeKube:
    fake = FakeKube(stall_seconds=3)
    fake.start()
    fake.store.put("nodes", node("n1", cpu="64", pods=110))
    fake.store.put("deployments", deployment("web", replicas=2, cpu="100m"))
    for i in range(2):
        fake.store.put("pods", pod(f"web-{i}", labels={"app": "web"}, node_name="n1"))
    return fake


def adapter(fake: FakeKube, name: str) -> KubeMemberCluster:
    config = fake.kubeconfig()
    config["users"][0]["user"] = {}  # plain HTTP: a kubeconfig with a credential would be refused
    client = KubeClient(name, build_api_client(config), Timeouts(connect=0.5, read=2.0, probe=0.5))
    return KubeMemberCluster(ClusterIdentity(name=name), client)


@pytest.fixture
def fleet() -> Iterator[dict[str, FakeKube]]:
    fakes = {name: start_member(name) for name in ("m1", "m2")}
    yield fakes
    for fake in fakes.values():
        fake.stop()


def stored_target(fake: FakeKube) -> Any:
    spec = fake.store.get(HPAS, "default", "web")["spec"]
    return spec["metrics"][0]["external"]["target"]


def hpa_writes(fake: FakeKube) -> int:
    return sum(len(fake.requests_matching(m, HPAS)) for m in ("POST", "PUT", "PATCH"))


def test_member_hpas_hold_the_target_over_their_share_and_a_second_pass_writes_nothing(
    fleet: dict[str, FakeKube],
) -> None:
    plane = FakeControlPlane()
    plane.add(queue_fhpa())
    members: dict[str, MemberCluster] = {n: adapter(f, n) for n, f in fleet.items()}
    clock = Clock()

    _, result = reconcile_federated_hpa(plane.fhpas[("default", "web")], members, plane, clock)
    assert result.ok, result.failed
    # weights 2:1 -> shares 667m and 333m: 90 / 0.667 = 134.933, 90 / 0.333 = 270.270
    assert stored_target(fleet["m1"]) == {"type": "AverageValue", "averageValue": "134933m"}
    assert stored_target(fleet["m2"]) == {"type": "AverageValue", "averageValue": "270270m"}
    stored = plane.fhpas[("default", "web")]
    assert stored.status is not None
    rows = {r.name: r for r in stored.status.clusters or []}
    assert (rows["m1"].metric_share, rows["m2"].metric_share) == ("667m", "333m")
    assert [t.to_json() for t in rows["m2"].metric_targets or []] == [
        {"type": "External", "name": "queue_messages", "averageValue": "270270m"}
    ]

    writes = {n: hpa_writes(f) for n, f in fleet.items()}
    clock.at = T0 + timedelta(seconds=15)
    again, result = reconcile_federated_hpa(plane.fhpas[("default", "web")], members, plane, clock)
    assert result.ok and again.hpa_actions == []  # the observed digests match the planned specs
    assert {n: hpa_writes(f) for n, f in fleet.items()} == writes

    opted = plane.fhpas[("default", "web")].model_copy(deep=True)
    opted.metadata.annotations = {ANNOTATION_PER_CLUSTER_METRICS: "true"}
    plane.fhpas[("default", "web")] = opted
    clock.at = T0 + timedelta(seconds=30)
    copied, result = reconcile_federated_hpa(opted, members, plane, clock)
    assert result.ok and {a.op for a in copied.hpa_actions} == {"update"}
    assert stored_target(fleet["m1"]) == stored_target(fleet["m2"]) == QUEUE["external"]["target"]  # type: ignore[index]
    final = plane.fhpas[("default", "web")].status
    assert final is not None and all(r.metric_share is None for r in final.clusters or [])
