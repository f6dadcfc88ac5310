"""The realapi tier itself: a real apiextensions-apiserver behaves like a cluster's API for CRDs.

These tests prove the harness (tests/support/realapi.py) and the patched server work: CRD
lifecycle, server-set metadata, defaulting, optimistic concurrency, the scale subresource, watch,
several independent servers, webhooks fed through the core stub, and the real kubectl.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.support import realapi as harness
from tests.support.builds import Binaries
from tests.support.pki import CertificateAuthority
from tests.support.realapi import RealAPIServer
from tests.support.webhook_configs import webhook_configuration, webhook_rule

pytestmark = pytest.mark.realapi

GROUP, VERSION, PLURAL = "testing.fhpa.io", "v1", "scaletargets"
CRD_NAME = f"{PLURAL}.{GROUP}"
KUBECTL = os.environ.get("FHPA_KUBECTL") or "/usr/bin/kubectl"


def scale_target(name: str, replicas: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ScaleTarget",
        "metadata": {"name": name},
    }
    if replicas is not None:
        body["spec"] = {"replicas": replicas}
    return body


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def custom_objects(server: RealAPIServer) -> Any:
    """``CustomObjectsApi`` returns untyped JSON dicts; ``Any`` keeps the tests readable."""
    return client.CustomObjectsApi(server.api_client())


def error_body(exc: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    """The ``Status`` object of a failed call."""
    return dict(json.loads(exc.value.body or "{}"))


@pytest.fixture
def objects(realapi: RealAPIServer) -> Any:
    return custom_objects(realapi)


# -- CRDs and basic semantics ----------------------------------------------------------------------


def test_crd_is_installed_and_established(realapi: RealAPIServer) -> None:
    crd = client.ApiextensionsV1Api(realapi.api_client()).read_custom_resource_definition(CRD_NAME)
    assert crd.status is not None
    conditions = {c.type: c.status for c in crd.status.conditions or []}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert crd.status.accepted_names is not None
    assert crd.status.accepted_names.short_names == ["stgt"]


def test_create_returns_server_set_metadata(objects: Any, realapi_namespace: str) -> None:
    created = objects.create_namespaced_custom_object(
        GROUP, VERSION, realapi_namespace, PLURAL, scale_target("web", replicas=3)
    )
    meta = created["metadata"]
    assert meta["uid"]
    assert int(meta["resourceVersion"]) > 0
    assert meta["generation"] == 1
    assert meta["creationTimestamp"]
    assert meta["namespace"] == realapi_namespace

    with pytest.raises(ApiException) as dup:
        objects.create_namespaced_custom_object(
            GROUP, VERSION, realapi_namespace, PLURAL, scale_target("web")
        )
    assert dup.value.status == 409
    assert error_body(dup)["reason"] == "AlreadyExists"


def test_schema_default_is_applied(objects: Any, realapi_namespace: str) -> None:
    created = objects.create_namespaced_custom_object(
        GROUP, VERSION, realapi_namespace, PLURAL, scale_target("defaulted")
    )
    assert created["spec"] == {"replicas": 1}


def test_schema_violation_is_rejected(objects: Any, realapi_namespace: str) -> None:
    with pytest.raises(ApiException) as exc:
        objects.create_namespaced_custom_object(
            GROUP, VERSION, realapi_namespace, PLURAL, scale_target("bad", -1)
        )
    assert exc.value.status == 422


def test_stale_resource_version_gives_409(objects: Any, realapi_namespace: str) -> None:
    ns = realapi_namespace
    created = objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, scale_target("cas", 1))
    stale = created["metadata"]["resourceVersion"]
    patched = objects.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "cas", {"spec": {"replicas": 2}}
    )
    assert patched["metadata"]["resourceVersion"] != stale
    assert patched["metadata"]["generation"] == 2

    outdated = dict(created, spec={"replicas": 5})
    with pytest.raises(ApiException) as put_conflict:
        objects.replace_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "cas", outdated)
    assert put_conflict.value.status == 409
    assert error_body(put_conflict)["reason"] == "Conflict"

    with pytest.raises(ApiException) as patch_conflict:
        objects.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            ns,
            PLURAL,
            "cas",
            {"metadata": {"resourceVersion": stale}, "spec": {"replicas": 7}},
        )
    assert patch_conflict.value.status == 409

    current = objects.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "cas")
    assert current["spec"]["replicas"] == 2


def test_scale_subresource(objects: Any, realapi_namespace: str) -> None:
    ns = realapi_namespace
    objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, scale_target("workload", 2))
    objects.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "workload", {"status": {"replicas": 2, "selector": "app=workload"}}
    )

    scale = objects.get_namespaced_custom_object_scale(GROUP, VERSION, ns, PLURAL, "workload")
    assert scale["apiVersion"] == "autoscaling/v1"
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 2
    assert scale["status"] == {"replicas": 2, "selector": "app=workload"}

    patched = objects.patch_namespaced_custom_object_scale(
        GROUP, VERSION, ns, PLURAL, "workload", {"spec": {"replicas": 6}}
    )
    assert patched["spec"]["replicas"] == 6
    workload = objects.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "workload")
    assert workload["spec"]["replicas"] == 6
    assert workload["status"]["replicas"] == 2  # status is the workload controller's business


def test_watch_delivers_events(realapi: RealAPIServer, realapi_namespace: str) -> None:
    ns = realapi_namespace
    api = custom_objects(realapi)
    start_rv = api.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["metadata"]["resourceVersion"]

    def mutate() -> None:
        writer = custom_objects(realapi)
        time.sleep(0.3)
        writer.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, scale_target("watched", 1))
        writer.patch_namespaced_custom_object_scale(
            GROUP, VERSION, ns, PLURAL, "watched", {"spec": {"replicas": 4}}
        )
        writer.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "watched")

    thread = threading.Thread(target=mutate)
    thread.start()
    seen: list[tuple[str, int]] = []
    stream = watch.Watch()
    for event in stream.stream(
        api.list_namespaced_custom_object,
        GROUP,
        VERSION,
        ns,
        PLURAL,
        resource_version=start_rv,
        timeout_seconds=20,
    ):
        obj = event["object"]
        seen.append((event["type"], obj["spec"]["replicas"]))
        if event["type"] == "DELETED":
            stream.stop()
    thread.join()
    assert seen == [("ADDED", 1), ("MODIFIED", 4), ("DELETED", 4)]


def test_watch_ends_at_timeout_seconds(objects: Any, realapi_namespace: str) -> None:
    began = time.monotonic()
    events = list(
        watch.Watch().stream(
            objects.list_namespaced_custom_object,
            GROUP,
            VERSION,
            realapi_namespace,
            PLURAL,
            timeout_seconds=1,
        )
    )
    assert events == []
    assert time.monotonic() - began < 10


# -- the patched server: discovery and OpenAPI ------------------------------------------------------


def test_discovery_and_openapi_publish_the_crd(realapi: RealAPIServer) -> None:
    groups = {g["name"] for g in realapi.get_json("/apis")["groups"]}
    assert {"apiextensions.k8s.io", GROUP} <= groups
    v3 = realapi.get_json("/openapi/v3")["paths"]
    assert f"apis/{GROUP}/{VERSION}" in v3
    v2 = realapi.get_json("/openapi/v2")
    assert "io.fhpa.testing.v1.ScaleTarget" in v2["definitions"]
    version = realapi.get_json("/version")
    assert version["gitVersion"].startswith("v1.")


# -- several servers --------------------------------------------------------------------------------


def test_two_instances_are_independent(realapi_factory: Callable[..., RealAPIServer]) -> None:
    first, second = realapi_factory("east"), realapi_factory("west")
    assert first.port != second.port
    assert first.kubeconfig_path != second.kubeconfig_path
    api1 = custom_objects(first)
    api2 = custom_objects(second)
    api1.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, scale_target("app", 3))
    api2.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, scale_target("app", 5))
    api1.patch_namespaced_custom_object_scale(
        GROUP, VERSION, "default", PLURAL, "app", {"spec": {"replicas": 9}}
    )
    assert (
        api1.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "app")["spec"]["replicas"] == 9
    )
    assert (
        api2.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "app")["spec"]["replicas"] == 5
    )


def test_stop_leaves_no_processes(realapi_factory: Callable[..., RealAPIServer]) -> None:
    server = realapi_factory("short-lived", crds=())
    pids = server.pids()
    assert set(pids) == {"apiserver", "etcd", "core_stub"}
    workdir = server.workdir
    server.stop()
    for component, pid in pids.items():
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)  # the whole process group is gone
        assert not Path(f"/proc/{pid}").exists(), component
    assert not workdir.exists()


# -- webhooks through the core stub -----------------------------------------------------------------


class _AdmissionHandler(BaseHTTPRequestHandler):
    """``/deny/<message>`` denies; ``/label`` adds label ``webhook=seen``."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        path = self.path.split("?", 1)[0]  # the apiserver appends ?timeout=5s
        if path.startswith("/deny/"):
            response["allowed"] = False
            response["status"] = {"code": 403, "message": path.split("/", 2)[2]}
        elif path == "/label":
            patch = [{"op": "add", "path": "/metadata/labels", "value": {"webhook": "seen"}}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        body = json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def webhook_server(realapi_factory: Callable[..., RealAPIServer]) -> Iterator[tuple[RealAPIServer, str]]:
    """A private API server plus a TLS admission webhook whose cert its CA signed."""
    server = realapi_factory("webhooks")
    cert, key = server.issue_cert("webhook")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _AdmissionHandler)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(cert), str(key))
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_set_webhooks_reaches_the_apiserver(webhook_server: tuple[RealAPIServer, str]) -> None:
    server, base = webhook_server
    api = custom_objects(server)
    rules = [webhook_rule([GROUP], [VERSION], [PLURAL])]

    def create(name: str) -> dict[str, Any]:
        return api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, scale_target(name, 1))

    # ADDED: a validating webhook starts denying.
    server.set_webhooks(
        validating=[
            webhook_configuration("deny", url=f"{base}/deny/first", ca_bundle=server.ca_pem, rules=rules)
        ]
    )
    with pytest.raises(ApiException) as denied:
        create("a")
    assert denied.value.status == 403
    assert 'admission webhook "deny.fhpa.test" denied the request: first' in error_body(denied)["message"]

    # MODIFIED: the same configuration now points elsewhere.
    server.set_webhooks(
        validating=[
            webhook_configuration("deny", url=f"{base}/deny/second", ca_bundle=server.ca_pem, rules=rules)
        ]
    )
    with pytest.raises(ApiException) as denied_again:
        create("b")
    assert "denied the request: second" in error_body(denied_again)["message"]

    # DELETED, plus a mutating webhook ADDED.
    server.set_webhooks(
        validating=[],
        mutating=[webhook_configuration("label", url=f"{base}/label", ca_bundle=server.ca_pem, rules=rules)],
    )
    created = create("c")
    assert created["metadata"]["labels"] == {"webhook": "seen"}


def test_webhook_with_untrusted_ca_fails_closed(webhook_server: tuple[RealAPIServer, str]) -> None:
    server, base = webhook_server
    other_ca = realapi_other_ca_pem()
    rules = [webhook_rule([GROUP], [VERSION], [PLURAL])]
    server.set_webhooks(
        validating=[webhook_configuration("strict", url=f"{base}/deny/x", ca_bundle=other_ca, rules=rules)]
    )
    api = custom_objects(server)
    with pytest.raises(ApiException) as exc:
        api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, scale_target("d", 1))
    assert exc.value.status == 500
    assert "failed calling webhook" in error_body(exc)["message"]


def realapi_other_ca_pem() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return CertificateAuthority(Path(tmp), "unrelated-ca").pem


# -- the real kubectl -------------------------------------------------------------------------------


@pytest.mark.skipif(not shutil.which(KUBECTL), reason=f"{KUBECTL} not installed")
def test_kubectl_apply_and_get_with_printer_columns(
    realapi: RealAPIServer, realapi_namespace: str, tmp_path: Path
) -> None:
    cache = tmp_path / "kubecache"  # per-test discovery cache: it is keyed by host:port only

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return realapi.kubectl(*args, cache_dir=cache, kubectl=KUBECTL)

    replicas_by_short_name = (
        "get",
        "stgt",
        "shop",
        "-n",
        realapi_namespace,
        "-o",
        "jsonpath={.spec.replicas}",
    )
    manifest = tmp_path / "target.yaml"
    manifest.write_text(
        f"apiVersion: {GROUP}/{VERSION}\nkind: ScaleTarget\nmetadata:\n  name: shop\n"
        f"  namespace: {realapi_namespace}\nspec:\n  replicas: 4\n"
    )

    applied = kubectl("apply", "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == f"scaletarget.{GROUP}/shop created"

    got = kubectl("get", "scaletargets", "-n", realapi_namespace)
    assert got.returncode == 0, got.stderr
    header, row = got.stdout.strip().splitlines()
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "AGE"]
    assert row.split()[:2] == ["shop", "4"]

    by_short_name = kubectl(*replicas_by_short_name)
    assert by_short_name.returncode == 0, by_short_name.stderr
    assert by_short_name.stdout == "4"

    manifest.write_text(manifest.read_text().replace("replicas: 4", "replicas: 6"))
    reapplied = kubectl("apply", "-f", str(manifest))
    assert reapplied.returncode == 0, reapplied.stderr
    assert reapplied.stdout.strip() == f"scaletarget.{GROUP}/shop configured"

    scaled = kubectl("scale", "stgt/shop", "--replicas=2", "-n", realapi_namespace)
    assert scaled.returncode == 0, scaled.stderr
    final = kubectl(*replicas_by_short_name)
    assert final.stdout == "2"


def test_start_retries_when_a_port_is_taken(
    realapi_binaries: Binaries, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Free ports are probed, then bound by the children: a port taken in between is survived."""
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    real_free_ports = harness.free_ports
    calls: list[list[int]] = []

    def first_call_collides(count: int) -> list[int]:
        ports = real_free_ports(count)
        if not calls:
            ports[0] = taken  # the apiserver's port
        calls.append(ports)
        return ports

    monkeypatch.setattr(harness, "free_ports", first_call_collides)
    try:
        with RealAPIServer("retry", binaries=realapi_binaries) as server:
            assert len(calls) == 2
            assert server.port != taken
            assert (server.workdir / "apiserver.log.attempt1").exists()
            assert server.get_json("/readyz") is not None
    finally:
        squatter.close()
