"""A management cluster to install into: the realapi tier's API server, a FakeKube for the kinds it does
not serve, one authenticating front for the pods, cluster DNS for its Services, and a pod runner.

What goes where when objects are applied (``InstallCluster.apply``), and why:

* CRDs and objects of CRD groups → the real API server (the FederatedHPA schema, CEL rules, admission);
* Namespaces, Services and the two webhook configurations → the core stub, which is where the real
  server reads them from (webhook configurations get the defaults a real server fills in on write);
* everything else (Deployments, ServiceAccounts, RBAC, Secrets, Leases, Events, NetworkPolicies,
  PodDisruptionBudgets, cert-manager's Issuers and Certificates) → a FakeKube, which stores and serves
  them; nothing acts on a NetworkPolicy or a PodDisruptionBudget there (every pod is a loopback
  process, and nothing evicts).

The pods reach the API through ``ClusterFront``, over TLS on loopback as ``KUBERNETES_SERVICE_HOST``
says, with the token minted for their ServiceAccount: it routes as above, and it refuses with 401/403
what RBAC (tests/support/rbac.py, over the applied Roles and bindings) would refuse, so the rights the
installation grants are the rights its pods have. The real server calls the webhook through the Service
its configuration names (tests/support/service_proxy.py, to a ready pod of the pod runner).
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import ssl
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tests.support import rbac
from tests.support.fakekube import FakeKube
from tests.support.fakekube_store import Resource
from tests.support.front import Backend, Front
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
)
STUB_KINDS = {
    "Namespace": "namespaces",
    "Service": "services",
    "MutatingWebhookConfiguration": WEBHOOK_COLLECTIONS["mutating"],
    "ValidatingWebhookConfiguration": WEBHOOK_COLLECTIONS["validating"],
}
STUB_PATH = re.compile(
    r"^/apis/admissionregistration\.k8s\.io/|^/api/v1/namespaces(/[^/]+)?$|^/api/v1/(namespaces/[^/]+/)?services(/|$)"
)
RBAC_KINDS = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")


class ClusterFront(Front):
    """The API endpoint the pods see: routes to the core stub, the real server or the FakeKube, and
    authenticates minted ServiceAccount tokens and authorizes them with the applied RBAC."""

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
        self.denied: list[str] = []

    def route(self, path: str) -> tuple[str, Backend]:
        if STUB_PATH.search(path):
            return "core", self.core
        group = path.split("/")[2] if path.startswith("/apis/") and path.count("/") >= 2 else ""
        if path.startswith("/api/") or path == "/api" or group in self.fake_groups():
            return "fake", self.fake
        return "real", self.real

    def refuse(self, method: str, path: str, query: dict[str, list[str]], headers: Any) -> JSON | None:
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
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
    """``InstallCluster(make_server, workdir).start()``; ``apply(objects)``, ``run(namespace, *deployments)``,
    ``read``/``write``/``objects``, ``stop()``. ``make_server(**kwargs)`` starts a RealAPIServer (as
    ``realapi_factory`` does, which also stops it)."""

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
        self.applied: list[JSON] = []

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

    def apply(self, objects: Iterable[JSON]) -> None:
        """Create every object where the module doc says; namespaces and CRDs first, as kubectl orders."""
        objects = list(objects)
        order = {"Namespace": 0, "CustomResourceDefinition": 1}
        crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
        if crds:
            self.server.install_crds(crds)
        plurals = {
            (c["spec"]["group"], c["spec"]["names"]["kind"]): c["spec"]["names"]["plural"] for c in crds
        }
        for obj in sorted(objects, key=lambda o: order.get(o["kind"], 2)):
            if obj["kind"] == "CustomResourceDefinition":
                continue
            self.applied.append(obj)
            if obj["kind"] == "Namespace":
                self.create_namespace(obj["metadata"]["name"], obj["metadata"].get("labels"))
            elif obj["kind"] in STUB_KINDS:
                self.write(STUB_KINDS[obj["kind"]], obj)
            elif (group_kind := (obj["apiVersion"].split("/")[0], obj["kind"])) in plurals:
                status, body = self.server.request("POST", _collection(obj, plurals[group_kind]), obj)
                assert status == 201, body
            else:
                self.fake.store.put(self._fake_key(obj), obj)

    def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        self.server.create_namespace(name, labels)
        self.fake.store.put("namespaces", {"metadata": {"name": name, "labels": dict(labels or {})}})

    def _fake_key(self, obj: JSON) -> str:
        group = obj["apiVersion"].rpartition("/")[0]
        found = [r.key for r in self.fake.store.resources if r.kind == obj["kind"] and r.group == group]
        if not found:
            raise ValueError(f"{obj['apiVersion']} {obj['kind']}: served nowhere in this cluster")
        return found[0]

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

    def run(self, namespace: str, *deployments: str, timeout: float = 60) -> list[Pod]:
        """Start the applied Deployments' pods (each once its volumes exist); wait until all are ready."""
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


def _collection(obj: JSON, plural: str) -> str:
    namespace = obj["metadata"].get("namespace", "default")
    return f"/apis/{obj['apiVersion']}/namespaces/{namespace}/{plural}"
