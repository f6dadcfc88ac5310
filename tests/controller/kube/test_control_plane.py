"""KubeControlPlane through the official client over HTTP, against the stateful fake API server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import config as kube_config

from controller.errors import ConflictError, NotFoundError, PortError
from controller.kube.control_plane import KubeControlPlane, event_name
from fhpa_api.models import (
    CronFederatedHPAStatus,
    CrossVersionObjectReference,
    ExecutionHistory,
    FederatedHPA,
    FederatedHPAStatus,
)
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import cron_federated_hpa
from tests.support.manager_world import serve_our_crds

GROUP = "autoscaling.karmada.io"


def fhpa_body(name: str = "web", ns: str = "default") -> dict:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
        },
    }


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    fake = serve_our_crds(FakeKube())
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def cp(fake: FakeKube) -> KubeControlPlane:
    return KubeControlPlane(
        kube_config.new_client_from_config_dict(fake.kubeconfig()), reporting_instance="t"
    )


def test_get_and_list_return_models_and_none_when_absent(fake: FakeKube, cp: KubeControlPlane) -> None:
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body())
    got = cp.get_federated_hpa("default", "web")
    assert got is not None and got.spec.max_replicas == 10 and got.metadata.uid
    assert cp.get_federated_hpa("default", "nope") is None
    assert [f.metadata.name for f in cp.list_federated_hpas()] == ["web"]


def test_status_write_is_guarded_by_resource_version(fake: FakeKube, cp: KubeControlPlane) -> None:
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body())
    fhpa = cp.get_federated_hpa("default", "web")
    assert fhpa is not None
    updated = cp.update_federated_hpa_status(
        fhpa, FederatedHPAStatus(observed_generation=1, current_replicas=3)
    )
    assert updated.status is not None and updated.status.current_replicas == 3
    assert updated.spec.max_replicas == 10
    with pytest.raises(ConflictError):
        cp.update_federated_hpa_status(fhpa, FederatedHPAStatus(current_replicas=4))  # stale rv
    put = fake.requests_matching("PUT", r"/federatedhpas/web/status$")
    assert put and put[0].query.get("fieldManager") == ["federated-hpa"]


def test_bounds_are_a_merge_patch_and_none_leaves_a_field(fake: FakeKube, cp: KubeControlPlane) -> None:
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body())
    got = cp.patch_federated_hpa_bounds("default", "web", None, 20)
    assert (got.spec.min_replicas, got.spec.max_replicas) == (2, 20)
    req = fake.requests_matching("PATCH", r"/federatedhpas/web$")[-1]
    assert req.content_type == "application/merge-patch+json"
    assert req.body == {"spec": {"maxReplicas": 20}}
    with pytest.raises(NotFoundError):
        cp.patch_federated_hpa_bounds("default", "absent", 1, 2)


def test_finalizers_are_set_with_a_resource_version_precondition(
    fake: FakeKube, cp: KubeControlPlane
) -> None:
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body())
    fhpa = cp.get_federated_hpa("default", "web")
    assert fhpa is not None
    with_finalizer = cp.set_finalizers(fhpa, ["x/y"])
    assert with_finalizer.metadata.finalizers == ["x/y"]
    with pytest.raises(ConflictError):
        cp.set_finalizers(fhpa, [])


def test_cron_status_round_trips(fake: FakeKube, cp: KubeControlPlane) -> None:
    fake.store.create("cronfederatedhpas.autoscaling.karmada.io", cron_federated_hpa())
    cron = cp.get_cron_federated_hpa("default", "c")
    assert cron is not None
    status = CronFederatedHPAStatus(execution_histories=[ExecutionHistory(rule_name="r")])
    out = cp.update_cron_federated_hpa_status(cron, status)
    assert out.status is not None and out.status.execution_histories is not None
    assert [c.metadata.name for c in cp.list_cron_federated_hpas()] == ["c"]


def test_scale_finds_the_plural_by_discovery_and_patches_the_scale_subresource(
    fake: FakeKube, cp: KubeControlPlane
) -> None:
    fake.add_scalable_kind("example.com", "v1", "widgets", "Widget")
    fake.store.create("widgets.example.com", {"metadata": {"name": "w", "namespace": "default"}, "spec": {}})
    cp.scale_workload(
        "default", CrossVersionObjectReference(api_version="example.com/v1", kind="Widget", name="w"), 7
    )
    assert fake.store.get("widgets.example.com", "default", "w")["spec"]["replicas"] == 7
    cp.scale_workload(
        "default", CrossVersionObjectReference(api_version="example.com/v1", kind="Widget", name="w"), 2
    )
    assert len(fake.requests_matching("GET", r"^/apis/example.com/v1$")) == 1  # discovery is cached
    with pytest.raises(NotFoundError, match="no kind Gadget"):
        cp.scale_workload(
            "default", CrossVersionObjectReference(api_version="example.com/v1", kind="Gadget", name="g"), 1
        )


def test_a_repeated_event_raises_the_count_of_one_event(fake: FakeKube, cp: KubeControlPlane) -> None:
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body())
    fhpa = cp.get_federated_hpa("default", "web")
    assert fhpa is not None
    cp.emit_event(fhpa, "Normal", "Assigned", "member1 2..5")
    cp.emit_event(fhpa, "Normal", "Assigned", "member1 2..5")
    cp.emit_event(fhpa, "Warning", "MemberActionFailed", "create/member2: down")
    events, _ = fake.store.list_objects("events", "default")
    by_reason = {e["reason"]: e for e in events}
    assert by_reason["Assigned"]["count"] == 2
    assert by_reason["Assigned"]["involvedObject"]["uid"] == fhpa.metadata.uid
    assert by_reason["Assigned"]["involvedObject"]["kind"] == "FederatedHPA"
    assert by_reason["MemberActionFailed"]["type"] == "Warning"
    # a restarted controller (empty cache) finds the existing Event and counts on
    fresh = KubeControlPlane(cp.api_client)
    fresh.emit_event(fhpa, "Normal", "Assigned", "member1 2..5")
    name = event_name(fhpa, "Normal", "Assigned", "member1 2..5")
    assert fake.store.get("events", "default", name)["count"] == 3


def test_server_errors_become_port_errors_without_bodies(fake: FakeKube, cp: KubeControlPlane) -> None:
    fake.faults.add("GET", "federatedhpas", status=500)
    with pytest.raises(PortError, match="HTTP 500"):
        cp.list_federated_hpas()
    fake.faults.add("PATCH", "federatedhpas", status=409)
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body())
    with pytest.raises(ConflictError):
        cp.patch_federated_hpa_bounds("default", "web", 1, 3)
    fake.vanish()
    with pytest.raises(PortError):
        cp.list_federated_hpas()


def test_an_invalid_stored_object_is_skipped_in_a_list_and_reported_on_get(
    fake: FakeKube, cp: KubeControlPlane
) -> None:
    bad = fhpa_body("bad")
    bad["spec"]["maxReplicas"] = "many"
    fake.store.create("federatedhpas.autoscaling.karmada.io", bad)
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body("good"))
    assert [f.metadata.name for f in cp.list_federated_hpas()] == ["good"]
    with pytest.raises(PortError, match="not valid"):
        cp.get_federated_hpa("default", "bad")
    assert isinstance(cp.get_federated_hpa("default", "good"), FederatedHPA)
