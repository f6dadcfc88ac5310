"""The manager end to end over HTTP, without the real API server: FakeKube as the control plane (the
CRDs registered as plain resources) and two FakeKube member clusters, the real planner and executor."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import config as kube_config

from controller.kube.control_plane import KubeControlPlane
from controller.planning.member_hpa import LABEL_OWNER_UID
from controller.planning.planner import PlannerConfig
from controller.runtime.leader import LeaderConfig, LeaseClient
from controller.runtime.manager import Manager, ManagerConfig
from tests.support.fakekube import FakeKube, Resource
from tests.support.members import member_cluster, member_secret, registry

GROUP = "autoscaling.karmada.io"
SYSTEM = "federated-hpa-system"
FHPA = f"federatedhpas.{GROUP}"
HPA = "horizontalpodautoscalers.autoscaling"


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def control_plane_fake() -> FakeKube:
    fake = FakeKube(namespaces=("default", "kube-system", SYSTEM), watch_max_seconds=5.0)
    fake.store.add_resource(Resource(GROUP, "v1alpha1", "federatedhpas", "FederatedHPA", status=True))
    fake.store.add_resource(Resource(GROUP, "v1alpha1", "cronfederatedhpas", "CronFederatedHPA", status=True))
    fake.start()
    return fake


@pytest.fixture
def world() -> Iterator[dict[str, Any]]:
    cp = control_plane_fake()
    members = {"member1": member_cluster(), "member2": member_cluster()}
    for name, fake in members.items():
        cp.store.create("secrets", member_secret(name, fake, SYSTEM))
    plane = KubeControlPlane(
        kube_config.new_client_from_config_dict(cp.kubeconfig()), reporting_instance="test"
    )
    manager = Manager(
        plane,
        registry(SYSTEM),
        ManagerConfig(
            namespace=SYSTEM,
            leader_elect=False,
            planner=PlannerConfig(failover_grace_seconds=1, optimization_period_seconds=2),
            resync_seconds=1,
            probe_seconds=0.5,
            watch_timeout_seconds=5,
            cleanup_give_up_seconds=3,
        ),
    )
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    yield {"cp": cp, "members": members, "manager": manager, "stop": stop, "thread": thread}
    stop.set()
    thread.join(10)
    for fake in (cp, *members.values()):
        fake.stop()


def fhpa(name: str = "web", policy: str = "StaticWeighted") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "federatedHPAAssignment": {
                "federatedHPAAssignmentType": policy,
                "clusterAutoscalingPreference": [
                    {"targetCluster": {"clusterNames": ["member1"]}, "staticWeight": 1},
                    {"targetCluster": {"clusterNames": ["member2"]}, "staticWeight": 1},
                ],
            },
        },
    }


def test_assigns_records_status_and_events_then_cleans_up_on_delete(world: dict[str, Any]) -> None:
    cp: FakeKube = world["cp"]
    members: dict[str, FakeKube] = world["members"]
    created = cp.store.create(FHPA, fhpa())
    uid = created["metadata"]["uid"]

    def hpas() -> dict[str, Any]:
        found = {n: f.store.find(HPA, "default", "web") for n, f in members.items()}
        return found if all(found.values()) else {}

    found = wait_for(hpas, what="member HPAs in both clusters")
    assert all(h["metadata"]["labels"][LABEL_OWNER_UID] == uid for h in found.values())
    assert sum(h["spec"]["maxReplicas"] for h in found.values()) == 10

    def status() -> Any:
        obj = cp.store.get(FHPA, "default", "web")
        clusters = (obj.get("status") or {}).get("clusters") or []
        return obj if len(clusters) == 2 else None

    obj = wait_for(status, what="status with both clusters")
    assert "autoscaling.karmada.io/federatedhpa-cleanup" in obj["metadata"]["finalizers"]
    events, _ = cp.store.list_objects("events", "default")
    assert any(e["involvedObject"]["uid"] == uid for e in events)
    # replicas written within the assigned bounds (the workloads had 1; every min is 1 here)
    for fake in members.values():
        assert fake.store.get("deployments.apps", "default", "web")["spec"]["replicas"] >= 1

    cp.store.delete(FHPA, "default", "web")
    wait_for(
        lambda: not any(f.store.find(HPA, "default", "web") for f in members.values()), what="HPAs removed"
    )
    wait_for(lambda: cp.store.find(FHPA, "default", "web") is None, what="the FederatedHPA gone")
    for fake in members.values():  # workloads untouched by the cleanup
        assert fake.store.find("deployments.apps", "default", "web") is not None


def test_a_vanished_member_is_failed_over_and_a_new_secret_joins(world: dict[str, Any]) -> None:
    cp: FakeKube = world["cp"]
    members: dict[str, FakeKube] = world["members"]
    cp.store.create(FHPA, fhpa())
    wait_for(lambda: all(f.store.find(HPA, "default", "web") for f in members.values()), what="HPAs")
    members["member2"].vanish()
    wait_for(
        lambda: members["member1"].store.get(HPA, "default", "web")["spec"]["maxReplicas"] == 10,
        timeout=30,
        what="member1 taking member2's share",
    )


def test_metrics_count_reconciles_and_actions(world: dict[str, Any]) -> None:
    cp: FakeKube = world["cp"]
    cp.store.create(FHPA, fhpa())
    manager: Manager = world["manager"]
    wait_for(
        lambda: b'fhpa_member_actions_total{action="create",result="success"}' in manager.metrics.render()
    )
    wait_for(
        lambda: b'fhpa_reconciles_total{kind="FederatedHPA",result="success"}' in manager.metrics.render()
    )
    text = manager.metrics.render().decode()
    assert "fhpa_member_api_latency_seconds_bucket" in text
    assert manager.ready()[0]


def test_stop_lets_the_reconcile_in_flight_finish(world: dict[str, Any]) -> None:
    cp: FakeKube = world["cp"]
    manager: Manager = world["manager"]
    stall = world["members"]["member1"].faults.add("GET", "horizontalpodautoscalers", stall=2)
    cp.store.create(FHPA, fhpa())
    wait_for(lambda: stall.hits >= 1, what="a reconcile stuck on a member read")
    assert manager.queue.processing()
    started = time.monotonic()
    world["stop"].set()
    world["thread"].join(15)
    assert not world["thread"].is_alive()
    assert time.monotonic() - started >= 1.0  # it waited for the worker
    assert manager.queue.processing() == set()
    assert not manager.leading


class CutLeaseClient(LeaseClient):
    cut = False

    def replace(self, namespace: str, name: str, body: dict) -> dict:
        if self.cut:
            raise ConnectionResetError("partition")
        return super().replace(namespace, name, body)


def test_losing_the_lease_stops_acting_and_run_returns_1() -> None:
    cp = control_plane_fake()
    try:
        api = kube_config.new_client_from_config_dict(cp.kubeconfig())
        lease_client = CutLeaseClient(api)
        lease = LeaderConfig(
            namespace=SYSTEM, lease_duration_seconds=1.5, renew_deadline_seconds=1.0, retry_period_seconds=0.1
        )
        manager = Manager(
            KubeControlPlane(api),
            registry(SYSTEM),
            ManagerConfig(namespace=SYSTEM, lease=lease, watch_timeout_seconds=5),
            lease_client=lease_client,
        )
        stop = threading.Event()
        result: list[int] = []
        thread = threading.Thread(target=lambda: result.append(manager.run(stop)), daemon=True)
        thread.start()
        wait_for(lambda: manager.leading and manager.acting(), what="leading")
        lease_client.cut = True
        thread.join(10)
        assert result == [1]
        assert not manager.acting() and not manager.leading
        assert b"fhpa_leader 0.0" in manager.metrics.render()
    finally:
        cp.stop()
