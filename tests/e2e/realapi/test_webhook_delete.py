"""Deletes never hang (issue 12, item 3; M3), against the real API server tier.

An object stored before a rule was tightened (or while the webhook was bypassed) breaks today's rules but
is in etcd all the same. With our webhooks registered and ``failurePolicy: Fail`` it must still be
possible to delete it: the DELETE itself, then the UPDATE that removes its last finalizer (made here by
the controller's own ``KubeControlPlane.set_finalizers``, a merge patch). Before commit a336627 the
validating webhook checked that UPDATE against today's rules and refused it, so the object stayed
"being deleted" for ever, and so did its namespace.

How such an object is stored here: it is created while no webhook is registered, then the manifests'
webhook configurations (failurePolicy Fail, pointed at `fhpa webhook serve` on loopback) are registered,
and an UPDATE that changes its spec is refused, which proves the webhook is live for it.

Namespaces: the tier has no namespace controller (it is part of kube-controller-manager, not of any API
server) and its namespaces live in the core stub, so a namespace cannot really be deleted here. The
namespace test therefore does by hand, against the real API server, what the namespace controller does
for a Terminating namespace (a deletecollection of every namespaced resource, then waiting until the
namespace is empty), and only then removes the namespace from the stub (its finalize step). The part
the webhook can block, the finalizer removal inside a Terminating namespace, is real.
"""

from __future__ import annotations

import copy
import http.client
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from controller.finalizer import FINALIZER
from controller.kube.control_plane import KubeControlPlane
from fhpa_api.defaulting import apply_defaults
from fhpa_api.validation import validate
from tests.e2e.realapi.test_webhook import PLURALS, VALIDATING_NAME, loopback_configs, server_with_crds
from tests.support.builds import Binaries
from tests.support.realapi import RealAPIServer
from tests.support.reviews import API_VERSION, cronfhpa, fhpa
from tests.support.webhook_serving import RunningWebhook

pytestmark = [pytest.mark.realapi, pytest.mark.slow]

OTHER_FINALIZER = "example.com/hold"  # a CronFederatedHPA has none of ours; someone else's will do


@pytest.fixture(scope="module")
def cluster(realapi_binaries: Binaries) -> Iterator[RealAPIServer]:
    """The project's CRDs as shipped (schema defaults kept); no webhook registered yet."""
    with server_with_crds(realapi_binaries, "webhook-deletes") as server:
        yield server


@pytest.fixture
def namespace(cluster: RealAPIServer) -> str:
    name = f"del-{uuid.uuid4().hex[:8]}"
    cluster.create_namespace(name)
    return name


@pytest.fixture
def register(cluster: RealAPIServer, webhook_process: RunningWebhook) -> Iterator[Any]:
    """``register()`` puts the manifests' webhook configurations in place; they are removed after the
    test, so that the next one can store an object unchecked again."""

    def do() -> None:
        mutating, validating = loopback_configs(
            webhook_process.port, (webhook_process.cert_dir / "ca.crt").read_bytes()
        )
        for config in mutating + validating:
            assert all(hook["failurePolicy"] == "Fail" for hook in config["webhooks"])
        cluster.set_webhooks(mutating=mutating, validating=validating)

    yield do
    cluster.set_webhooks(mutating=[], validating=[])


# --- objects that today's rules refuse but the CRD schema admits -----------------------------------


def refused_fhpa(namespace: str) -> dict[str, Any]:
    """A FederatedHPA that targets an HPA (refused since the rule against it), with our finalizer."""
    obj = fhpa(
        f"old-{uuid.uuid4().hex[:6]}",
        scaleTargetRef={"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "name": "web"},
    )
    return _prepare(obj, namespace, FINALIZER)


def refused_cron(namespace: str) -> dict[str, Any]:
    """A CronFederatedHPA with a minute out of range, held by someone else's finalizer."""
    obj = cronfhpa(
        f"old-{uuid.uuid4().hex[:6]}",
        rules=[{"name": "up", "schedule": "61 * * * *", "targetMinReplicas": 2}],
    )
    return _prepare(obj, namespace, OTHER_FINALIZER)


def _prepare(obj: dict[str, Any], namespace: str, finalizer: str) -> dict[str, Any]:
    obj = apply_defaults(obj)  # complete, so that the mutating webhook has nothing to add on UPDATE
    obj["metadata"].pop("uid", None)
    obj["metadata"].update(namespace=namespace, finalizers=[finalizer])
    assert validate(obj).errors, "the test object must break today's rules"
    return obj


def _path(obj: dict[str, Any], with_name: bool = True) -> str:
    meta = obj["metadata"]
    base = f"/apis/{API_VERSION}/namespaces/{meta['namespace']}/{PLURALS[obj['kind']]}"
    return f"{base}/{meta['name']}" if with_name else base


def store_unchecked(cluster: RealAPIServer, obj: dict[str, Any]) -> dict[str, Any]:
    """Create ``obj`` while no webhook is registered (as when the webhook was bypassed, or before a rule
    was tightened)."""
    status, stored = cluster.request("POST", _path(obj, with_name=False), obj)
    assert status == 201, stored
    return dict(stored)


def assert_webhook_refuses_a_spec_change(cluster: RealAPIServer, obj: dict[str, Any]) -> None:
    """The webhooks are live for this object: an UPDATE that changes its spec is refused."""
    status, current = cluster.request("GET", _path(obj))
    assert status == 200, current
    changed = copy.deepcopy(current)
    if changed["kind"] == "FederatedHPA":
        changed["spec"]["maxReplicas"] += 1
    else:
        changed["spec"]["rules"][0]["targetMinReplicas"] += 1
    status, answer = cluster.request("PUT", _path(obj), changed)
    assert status == 403, answer.get("message", answer)
    assert answer["message"].startswith(f'admission webhook "{VALIDATING_NAME}" denied the request: ')


def remove_finalizers(cluster: RealAPIServer, obj: dict[str, Any]) -> None:
    """Take the finalizers off as their owner would: for a FederatedHPA the controller's own code path
    (``KubeControlPlane.set_finalizers``, a merge patch guarded by resourceVersion); for the other kind
    the same merge patch, raw."""
    meta = obj["metadata"]
    if obj["kind"] == "FederatedHPA":
        plane = KubeControlPlane(cluster.api_client())
        current = plane.get_federated_hpa(meta["namespace"], meta["name"])
        assert current is not None and current.metadata.deletion_timestamp
        assert current.metadata.finalizers == [FINALIZER]
        plane.set_finalizers(current, [])
        return
    _, current = cluster.request("GET", _path(obj))
    patch = {"metadata": {"finalizers": [], "resourceVersion": current["metadata"]["resourceVersion"]}}
    status, answer = merge_patch(cluster, _path(obj), patch)
    assert status == 200, answer.get("message", answer)


def merge_patch(cluster: RealAPIServer, path: str, patch: dict[str, Any]) -> tuple[int, Any]:
    conn = http.client.HTTPSConnection("127.0.0.1", cluster.port, context=cluster._ssl_context(), timeout=30)
    try:
        conn.request(
            "PATCH",
            path,
            body=json.dumps(patch).encode(),
            headers={"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
        )
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def wait_gone(cluster: RealAPIServer, path: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        status, body = cluster.request("GET", path)
        if status == 404:
            return
        assert time.monotonic() < deadline, f"{path} still there after {timeout}s: {body}"
        time.sleep(0.1)


MAKERS = pytest.mark.parametrize(
    "make", [refused_fhpa, refused_cron], ids=["FederatedHPA", "CronFederatedHPA"]
)


# --- the tests ---------------------------------------------------------------------------------------


@MAKERS
def test_an_object_the_rules_now_refuse_can_still_be_deleted(
    cluster: RealAPIServer, namespace: str, register: Any, make: Any
) -> None:
    obj = make(namespace)
    store_unchecked(cluster, obj)
    register()
    assert_webhook_refuses_a_spec_change(cluster, obj)
    twin = copy.deepcopy(obj)
    twin["metadata"]["name"] += "-new"
    status, answer = cluster.request("POST", _path(twin, with_name=False), twin)
    assert status == 403, answer.get("message", answer)  # and nobody can create one like it any more

    status, deleting = cluster.request("DELETE", _path(obj))
    assert status == 200, deleting
    assert deleting["metadata"]["deletionTimestamp"] and deleting["metadata"]["finalizers"]

    remove_finalizers(cluster, obj)
    wait_gone(cluster, _path(obj))


@MAKERS
def test_a_label_change_of_such_an_object_goes_through(
    cluster: RealAPIServer, namespace: str, register: Any, make: Any
) -> None:
    """Metadata only, spec unchanged: not checked against the rules (a spec change still is)."""
    obj = make(namespace)
    store_unchecked(cluster, obj)
    register()
    status, answer = merge_patch(cluster, _path(obj), {"metadata": {"labels": {"team": "web"}}})
    assert status == 200, answer.get("message", answer)
    assert answer["metadata"]["labels"] == {"team": "web"} and answer["spec"] == obj["spec"]
    assert_webhook_refuses_a_spec_change(cluster, obj)
    # leave nothing held behind: the finalizer is removed while no webhook is registered
    cluster.set_webhooks(mutating=[], validating=[])
    assert cluster.request("DELETE", _path(obj))[0] == 200
    remove_finalizers(cluster, obj)
    wait_gone(cluster, _path(obj))


def test_a_namespace_holding_such_objects_finishes_deleting(
    cluster: RealAPIServer, namespace: str, register: Any
) -> None:
    objects = [refused_fhpa(namespace), refused_cron(namespace)]
    for obj in objects:
        store_unchecked(cluster, obj)
    register()
    for obj in objects:
        assert_webhook_refuses_a_spec_change(cluster, obj)

    # `kubectl delete namespace`: the namespace is marked Terminating (NamespaceLifecycle would now
    # refuse creates in it; updates are still allowed, and still go through the webhooks) ...
    core = http.client.HTTPConnection("127.0.0.1", cluster.core_port, timeout=10)
    try:
        core.request("GET", f"/api/v1/namespaces/{namespace}")
        ns = json.loads(core.getresponse().read())
        ns["metadata"]["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ns["status"] = {"phase": "Terminating"}
        core.request("PUT", f"/api/v1/namespaces/{namespace}", body=json.dumps(ns).encode())
        answer = core.getresponse()
        assert answer.status == 200 and json.loads(answer.read())["status"]["phase"] == "Terminating"
    finally:
        core.close()

    # ... and the namespace controller deletes every namespaced resource's collection in it ...
    for plural in ("federatedhpas", "cronfederatedhpas"):
        status, answer = cluster.request("DELETE", f"/apis/{API_VERSION}/namespaces/{namespace}/{plural}")
        assert status == 200, answer.get("message", answer)
    for obj in objects:
        status, held = cluster.request("GET", _path(obj))
        assert status == 200 and held["metadata"]["deletionTimestamp"], held  # held by its finalizer

    # ... whose owners (our controller for the FederatedHPA) then release their finalizers ...
    for obj in objects:
        remove_finalizers(cluster, obj)
    for obj in objects:
        wait_gone(cluster, _path(obj))

    # ... so the namespace controller finds it empty and finalizes it: here, the stub forgets it.
    for plural in ("federatedhpas", "cronfederatedhpas"):
        status, left = cluster.request("GET", f"/apis/{API_VERSION}/namespaces/{namespace}/{plural}")
        assert status == 200 and left["items"] == [], left
    core = http.client.HTTPConnection("127.0.0.1", cluster.core_port, timeout=10)
    try:
        core.request("DELETE", f"/api/v1/namespaces/{namespace}")
        deleted = core.getresponse()
        deleted.read()
        assert deleted.status == 200
        core.request("GET", f"/api/v1/namespaces/{namespace}")
        gone = core.getresponse()
        gone.read()
        assert gone.status == 404
    finally:
        core.close()
