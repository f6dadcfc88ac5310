"""A member cluster for the KubeMemberCluster tests: a FakeKube holding one Deployment's pods and two
nodes, the member client over HTTP to it, and the little of the control plane a reconcile needs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from controller.kube.clients import KubeClient, Timeouts, build_api_client
from controller.kube.member import KubeMemberCluster
from controller.ports import ClusterIdentity
from fhpa_api.models import (
    CronFederatedHPA,
    CronFederatedHPAStatus,
    CrossVersionObjectReference,
    FederatedHPA,
    FederatedHPASpec,
    FederatedHPAStatus,
    ObjectMeta,
)
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, node, pod

HPAS = "horizontalpodautoscalers"
TARGET = CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web")


def make_fhpa(uid: str = "uid-1", max_replicas: int = 10, assignment: str = "Duplicated") -> FederatedHPA:
    return FederatedHPA(
        metadata=ObjectMeta(name="web", namespace="default", uid=uid, generation=1),
        spec=FederatedHPASpec.model_validate(
            {
                "scaleTargetRef": TARGET.to_json(),
                "minReplicas": 1,
                "maxReplicas": max_replicas,
                "federatedHPAAssignment": {"federatedHPAAssignmentType": assignment},
            }
        ),
    )


def populate(fake: FakeKube, replicas: int = 3) -> None:
    """web: 2 ready pods on n1 (100m each) and 1 unschedulable; another team's 1-cpu pod on n1."""
    fake.store.put("nodes", node("n1", cpu="4", pods=110))
    fake.store.put("nodes", node("n2", cpu="16", unschedulable=True))
    fake.store.put("deployments", deployment("web", replicas=replicas, cpu="100m"))
    fake.store.put("pods", pod("web-a", labels={"app": "web"}, node_name="n1"))
    fake.store.put("pods", pod("web-b", labels={"app": "web"}, node_name="n1"))
    fake.store.put("pods", pod("web-c", labels={"app": "web"}, unschedulable=True))
    fake.store.put("pods", pod("other", labels={"app": "other"}, node_name="n1", cpu="1"))


def make_member(fake: FakeKube, name: str = "m1", ttl: float = 0.0) -> KubeMemberCluster:
    config = fake.kubeconfig()
    config["users"][0]["user"] = {}  # plain HTTP: a kubeconfig with a credential would be refused
    client = KubeClient(name, build_api_client(config), Timeouts(connect=0.5, read=1.0, probe=0.5))
    identity = ClusterIdentity(name=name, labels={"env": "prod"}, region="eu")
    return KubeMemberCluster(identity, client, capacity_ttl_seconds=ttl)


class RecordingControlPlane:
    """Just enough of the ControlPlane port for reconcile: keeps the last status and the Events."""

    def __init__(self) -> None:
        self.statuses: list[FederatedHPAStatus] = []
        self.events: list[tuple[str, str, str]] = []

    def update_federated_hpa_status(self, fhpa: FederatedHPA, status: FederatedHPAStatus) -> FederatedHPA:
        self.statuses.append(status)
        return fhpa.model_copy(update={"status": status})

    def emit_event(
        self,
        obj: FederatedHPA | CronFederatedHPA,
        type_: Literal["Normal", "Warning"],
        reason: str,
        message: str,
    ) -> None:
        self.events.append((type_, reason, message))

    def update_cron_federated_hpa_status(
        self, cron: CronFederatedHPA, status: CronFederatedHPAStatus
    ) -> None:
        raise AssertionError("not used")


class FixedClock:
    def __init__(self) -> None:
        self.t = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.t
