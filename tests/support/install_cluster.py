"""A management cluster to install into: the realapi tier's API server, a FakeKube for the kinds it does
not serve, one authenticating front before both, cluster DNS for its Services, and a pod runner.

Everything reaches the API through ``ClusterFront``, over TLS on loopback: ``kubectl`` (``kubectl()``,
as the installing administrator) and the pods (as ``KUBERNETES_SERVICE_HOST`` says, with the token
minted for their ServiceAccount). It routes each request, and why there:

* CRDs and our custom resources → the real API server (the FederatedHPA schema, CEL rules, admission);
* Services and the two webhook configurations → the core stub, which is where the real server reads
  them from (webhook configurations get the defaults a real server fills in on write, which the stub
  does not);
* everything else (Namespaces, Deployments, ServiceAccounts, RBAC, Secrets, Leases, Events,
  NetworkPolicies, PodDisruptionBudgets, cert-manager's Issuers and Certificates) → a FakeKube, which
  stores and serves them; nothing acts on a NetworkPolicy or a PodDisruptionBudget there (every pod is
  a loopback process, and nothing evicts). Its discovery also lists the stub's kinds, and the front
  merges its API groups with the real server's, so kubectl finds every kind it applies.

A ServiceAccount's request is refused with 403 when RBAC (tests/support/rbac.py, over the applied Roles
and bindings) would refuse it, so the rights the installation grants are the rights its pods have. The
real server calls the webhook through the Service its configuration names (tests/support/service_proxy.py,
to a ready pod of the pod runner).
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import rbac
from tests.support.fakekube import FakeKube
from tests.support.fakekube_store import Resource
from tests.support.front import Backend, Front
from tests.support.helm import HelmTools
from tests.support.pod_runner import Pod, PodRunner
from tests.support.realapi import WEBHOOK_COLLECTIONS, RealAPIServer
from tests.support.service_proxy import ServiceProxy
from tests.support.webhook_configs import default_webhooks

JSON = dict[str, Any]
STORED_KINDS = (
    Resource("", "v1", "serviceaccounts", "ServiceAccount"),
    Resource("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
    Resource(
        "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
    ),
    Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", status=True),
    Resource("cert-manager.io", "v1", "issuers", "Issuer", status=True),
    Resource("cert-manager.io", "v1", "certificates", "Certificate", status=True),
    # in the FakeKube's discovery only: the front sends these to the core stub (STUB_PATH)
    Resource("", "v1", "services", "Service", status=True),
    Resource(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        namespaced=False,
    ),
    Resource(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        namespaced=False,
    ),
)
STUB_KINDS = {
    "Service": "services",
    "MutatingWebhookConfiguration": WEBHOOK_COLLECTIONS["mutating"],
    "ValidatingWebhookConfiguration": WEBHOOK_COLLECTIONS["validating"],
}
STUB_PATH = re.compile(
    r"^/apis/admissionregistration\.k8s\.io/v1/\w+webhookconfigurations(/|$)|^/api/v1/(namespaces/[^/]+/)?services(/|$)"
)
RBAC_KINDS = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")


class ClusterFront(Front):
    """The API endpoint the pods and kubectl see: routes to the core stub, the real server or the
    FakeKube; authenticates minted tokens and authorizes ServiceAccounts with the applied RBAC; merges
    the API group lists of the real server and the FakeKube (discovery); and fills in the defaults a real
    server gives webhook configurations on write (the core stub stores what it is given)."""

    def __init__(
        self,
        real: Backend,
        fake: Backend,
        core: Backend,
        *,
        tls: ssl.SSLContext,
        fake_groups: Callable[[], set[str]],
        rbac_objects: Callable[[], list[JSON]],
    ) -> None:
        super().__init__(real, fake, tls=tls)
        self.core = core
        self.fake_groups = fake_groups
        self.rbac_objects = rbac_objects
        self.tokens: dict[str, tuple[str, str]] = {}  # token -> (namespace, service account)
        self.admin_token = secrets.token_urlsafe(24)  # system:masters: what the installing user holds
        self.denied: list[str] = []

    def route(self, path: str) -> tuple[str, Backend]:
        if STUB_PATH.search(path):
            return "core", self.core
        group = path.split("/")[2] if path.startswith("/apis/") and path.count("/") >= 2 else ""
        if path.startswith("/api/") or path == "/api" or group in self.fake_groups():
            return "fake", self.fake
        return "real", self.real

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: Any, body: bytes | None
    ) -> JSON | None:
        refusal = self._refusal(method, path, query, headers)
        if refusal is not None:
            return refusal
        if method == "GET" and path == "/apis":
            groups = [g for backend in (self.real, self.fake) for g in _get(backend, path).get("groups", [])]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        kind = re.search(r"/(mutating|validating)webhookconfigurations(/|$)", path)
        if kind and method in ("POST", "PUT") and body:
            (defaulted,) = default_webhooks(kind[1], [json.loads(body)])
            return _send(self.core, method, path, defaulted)
        return None

    def _refusal(self, method: str, path: str, query: dict[str, list[str]], headers: Any) -> JSON | None:
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and token == self.admin_token:
            return None
        who = self.tokens.get(token) if scheme.lower() == "bearer" else None
        if who is None:
            return _status(401, "Unauthorized", "Unauthorized")
        want = rbac.attributes(method, path, query)
        if want is None or rbac.allowed(self.rbac_objects(), who[0], who[1], want):
            return None
        user = f"system:serviceaccount:{who[0]}:{who[1]}"
        where = f' in the namespace "{want.namespace}"' if want.namespace else " at the cluster scope"
        message = (
            f'User "{user}" cannot {want.verb} resource "{want.resource}" in API group "{want.group}"{where}'
        )
        self.denied.append(message)
        return _status(403, "Forbidden", message)


def _get(backend: Backend, path: str) -> JSON:
    """A backend's legacy (not aggregated) JSON answer to a GET."""
    answer = _send(backend, "GET", path, None)
    return answer if "code" not in answer else {}


def _send(backend: Backend, method: str, path: str, body: JSON | None) -> JSON:
    conn = backend.connect(timeout=30)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(
            method,
            path,
            body=data,
            headers={"Accept": "application/json", "Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        reply: JSON = json.loads(resp.read() or b"{}")
    finally:
        conn.close()
    if resp.status >= 300:
        reply.setdefault("code", resp.status)
    return reply


def _status(code: int, reason: str, message: str) -> JSON:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


class InstallCluster:
    """``InstallCluster(make_server, workdir).start()``; ``kubectl(binary, ...)``,
    ``run(namespace, *deployments)``, ``read``/``write``/``objects``, ``stop()``. ``make_server(**kwargs)``
    starts a RealAPIServer (as ``realapi_factory`` does, which also stops it)."""

    def __init__(self, make_server: Callable[..., RealAPIServer], workdir: Path) -> None:
        self.make_server = make_server
        self.workdir = workdir
        self.proxy = ServiceProxy(self._resolve)
        self.fake = FakeKube(namespaces=("default", "kube-system"), watch_max_seconds=5.0)
        for kind in STORED_KINDS:
            self.fake.store.add_resource(kind)
        self.server: RealAPIServer
        self.front: ClusterFront
        self.runner: PodRunner

    def start(self) -> InstallCluster:
        proxy_url = self.proxy.start()
        env = {"HTTPS_PROXY": proxy_url, "https_proxy": proxy_url}
        self.server = self.make_server(name="install", crds=(), apiserver_env=env)
        self.fake.start()
        cert, key = self.server.issue_cert("front", hosts=("127.0.0.1",))
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(str(cert), str(key))
        self.front = ClusterFront(
            Backend.https(
                self.server.url, self.server.ca_path, self.server.admin_cert_path, self.server.admin_key_path
            ),
            Backend.http(self.fake.url),
            Backend.http(self.server.core_url),
            tls=tls,
            fake_groups=lambda: {r.group for r in self.fake.store.resources if r.group},
            rbac_objects=self._rbac_objects,
        )
        port = int(self.front.start().rsplit(":", 1)[1])
        self.runner = PodRunner(
            self.workdir / "pods",
            self.read,
            self._mint_token,
            api=("127.0.0.1", port),
            ca_pem=self.server.ca_pem,
        )
        return self

    def stop(self) -> None:
        for part in ("runner", "front"):
            if hasattr(self, part):
                getattr(self, part).stop()
        self.fake.stop()
        self.proxy.stop()  # the server itself belongs to the factory that made it

    # -- applying -------------------------------------------------------------------------------------

    def kubectl(
        self, tools: HelmTools, *args: str, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``kubectl ARGS`` (the chart tests' kubectl) against the front, as the installing administrator;
        never raises."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "install",
                    "cluster": {"server": self.front.url, "certificate-authority": str(self.server.ca_path)},
                }
            ],
            "users": [{"name": "admin", "user": {"token": self.front.admin_token}}],
            "contexts": [{"name": "install", "context": {"cluster": "install", "user": "admin"}}],
            "current-context": "install",
        }
        kubeconfig = self.workdir / "admin.kubeconfig"
        kubeconfig.write_text(json.dumps(config))
        env = {"KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(self.workdir / "kubecache")}
        return tools.run("kubectl", *args, env=env, input=input)

    def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        """A namespace in the FakeKube and in the core stub, where the real server looks namespaces up
        (for a webhook's namespaceSelector; ours select every namespace)."""
        self.server.create_namespace(name, labels)
        self.fake.store.put("namespaces", {"metadata": {"name": name, "labels": dict(labels or {})}})

    # -- reading and writing ---------------------------------------------------------------------------

    def read(self, resource: str, namespace: str, name: str) -> JSON | None:
        """An object as stored (``resource`` as the FakeKube names it, or a core stub collection)."""
        if resource in STUB_KINDS.values():
            status, body = self._stub("GET", _stub_path(resource, namespace, name))
            return body if status == 200 else None
        return self.fake.store.find(resource, namespace or None, name)

    def write(self, resource: str, obj: JSON) -> None:
        """Create or replace an object (in the core stub with a real server's defaults)."""
        if resource in STUB_KINDS.values():
            if resource in WEBHOOK_COLLECTIONS.values():
                kind = "mutating" if resource == WEBHOOK_COLLECTIONS["mutating"] else "validating"
                (obj,) = default_webhooks(kind, [obj])
            meta = obj["metadata"]
            status, body = self._stub(
                "PUT", _stub_path(resource, meta.get("namespace", ""), meta["name"]), obj
            )
            assert status in (200, 201), body
        else:
            self.fake.store.put(resource, obj)

    def objects(self, resource: str) -> list[JSON]:
        """Every object of a resource (a FakeKube key, or a core stub collection)."""
        if resource in STUB_KINDS.values():
            status, body = self._stub("GET", _stub_path(resource, "", "").rstrip("/"))
            assert status == 200, body
            return list(body.get("items") or [])
        return self.fake.store.list_objects(resource)[0]

    def _stub(self, method: str, path: str, body: JSON | None = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.core_port, timeout=10)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"{}")
        finally:
            conn.close()

    # -- pods -----------------------------------------------------------------------------------------

    def run(self, namespace: str, *deployments: str, timeout: float = 120) -> list[Pod]:
        """Start the applied Deployments' pods (each once its volumes exist); wait until all are ready.
        The timeout is generous: a pod's start is a Python start-up, slow on a loaded test machine."""
        pods: list[Pod] = []
        for name in deployments:
            found = self.read("deployments.apps", namespace, name)
            assert found is not None, f"no Deployment {namespace}/{name} was applied"
            pods += self.runner.run(found, timeout=timeout)
        self.runner.wait_ready(pods, timeout=timeout)
        return pods

    def _mint_token(self, namespace: str, account: str) -> str:
        token = secrets.token_urlsafe(24)
        self.front.tokens[token] = (namespace, account)
        return token

    def _rbac_objects(self) -> list[JSON]:
        return [o for kind in RBAC_KINDS for o in self.objects(f"{kind}.rbac.authorization.k8s.io")]

    def _resolve(self, namespace: str, service: str, port: int) -> tuple[str, int] | None:
        found = self.read("services", namespace, service)
        return self.runner.endpoint(found, port) if found is not None else None


def _stub_path(collection: str, namespace: str, name: str) -> str:
    if collection in WEBHOOK_COLLECTIONS.values():
        return f"/apis/admissionregistration.k8s.io/v1/{collection}/{name}"
    if collection == "namespaces" or not namespace:
        return f"/api/v1/{collection}/{name}"
    return f"/api/v1/namespaces/{namespace}/{collection}/{name}"
