"""A real Kubernetes API server for tests: etcd + apiextensions-apiserver + a core stub.

``RealAPIServer`` starts, in its own temporary directory and on free loopback ports:

* ``etcd`` (Debian's etcd-server),
* ``apiextensions-apiserver``, the CRD-serving half of kube-apiserver, built by
  ``scripts/realapi-build.sh`` (patched so that ``/apis`` discovery and CRD OpenAPI work, which
  makes the real ``kubectl`` usable against it),
* ``core_stub.py`` (beside this file), which plays the core API the server reads through
  ``--kubeconfig``: namespaces, services and admission webhook configurations.

It generates its own PKI with ``cryptography`` (a CA, a ``system:masters`` admin client cert, a
serving cert for 127.0.0.1), writes an admin kubeconfig, waits for ``/readyz`` and stops every
process group on ``stop()`` (also at interpreter exit). Several instances may run at once; each is
an independent "cluster".

What the server does not have: the core API (``/api``), apps/v1, autoscaling/v2, metrics, and any
controller but the CRD ones. Stand in for workloads with a CRD that has a ``scale`` subresource
(``tests/support/crds/scaletarget.yaml``).

Plain module (no pytest import). Typical use::

    from tests.support.realapi import RealAPIServer
    from tests.support.webhook_configs import webhook_configuration

    with RealAPIServer(name="member1") as server:
        server.install_crds([CRD_DIR / "scaletarget.yaml"])
        api = kubernetes.client.CustomObjectsApi(server.api_client())
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.support.builds import Binaries, find_binaries
from tests.support.pki import CertificateAuthority
from tests.support.processes import ServerProcesses, etcd_argv, free_ports, tail
from tests.support.webhook_configs import default_webhooks

JSON = dict[str, Any]

CORE_STUB = Path(__file__).with_name("core_stub.py")
CRD_DIR = Path(__file__).with_name("crds")

WEBHOOK_COLLECTIONS = {
    "mutating": "mutatingwebhookconfigurations",
    "validating": "validatingwebhookconfigurations",
}


class RealAPIStartError(RuntimeError):
    """The processes were found but the server did not become ready."""


class RealAPIServer(ServerProcesses):
    """One real API server "cluster": etcd + apiextensions-apiserver + core stub.

    Use ``start()``/``stop()`` or a ``with`` block. Attributes and helpers once started:

    * ``url``, ``port``, ``kubeconfig_path``, ``ca_path``, ``ca_pem``, ``admin_cert_path``,
      ``admin_key_path``, ``core_url``, ``workdir``;
    * ``api_client()`` a fresh ``kubernetes.client.ApiClient`` (closed on ``stop()``);
    * ``install_crds(paths)``, ``set_webhooks(mutating=..., validating=...)``,
      ``create_namespace(name)``, ``issue_cert(name)``, ``get_json(path)``, ``kubectl(*args)``.
    """

    def __init__(
        self,
        name: str = "realapi",
        *,
        binaries: Binaries | None = None,
        ready_timeout: float = 90.0,
        keep_workdir: bool | None = None,
        extra_apiserver_args: Sequence[str] = (),
        apiserver_env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self._binaries = binaries
        self.ready_timeout = ready_timeout
        self.keep_workdir = (
            keep_workdir if keep_workdir is not None else os.environ.get("FHPA_REALAPI_KEEP") == "1"
        )
        self.extra_apiserver_args = list(extra_apiserver_args)
        # e.g. HTTPS_PROXY: the server's outgoing calls to webhook Services (tests/support/service_proxy.py)
        self.apiserver_env = dict(apiserver_env or {})
        self._clients: list[Any] = []
        self._ca: CertificateAuthority | None = None
        self.port = 0
        self.etcd_port = 0
        self.core_port = 0
        self.started = False

    # -- properties ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def core_url(self) -> str:
        return f"http://127.0.0.1:{self.core_port}"

    @property
    def kubeconfig_path(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def ca_path(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    @property
    def ca_pem(self) -> bytes:
        return self.ca_path.read_bytes()

    @property
    def admin_cert_path(self) -> Path:
        return self.workdir / "pki" / "admin.crt"

    @property
    def admin_key_path(self) -> Path:
        return self.workdir / "pki" / "admin.key"

    def __repr__(self) -> str:
        state = self.url if self.started else "stopped"
        return f"RealAPIServer({self.name!r}, {state})"

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> RealAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> RealAPIServer:
        if self.started:
            return self
        binaries = self._binaries or find_binaries()
        self._open_workdir(f"fhpa-realapi-{self.name}-")
        try:
            self._write_pki()
            self._start_core_stub()
            last_error: Exception | None = None
            for attempt in range(3):
                try:
                    self._start_etcd_and_apiserver(binaries)
                    self._wait_readyz(RealAPIStartError, "apiserver")
                    self.started = True
                    return self
                except RealAPIStartError as exc:
                    last_error = exc
                    clash = "address already in use" in (
                        tail(self.log_path("apiserver"), 200) + tail(self.log_path("etcd"), 200)
                    )
                    for comp in ("apiserver", "etcd"):
                        self._stop_component(comp, grace=5)
                    if not clash:
                        break
                    # Another process took a port between probing and binding: try new ports.
                    for comp in ("apiserver", "etcd"):
                        log = self.log_path(comp)
                        if log.exists():
                            log.rename(log.with_name(f"{log.name}.attempt{attempt + 1}"))
                    shutil.rmtree(self.workdir / "etcd", ignore_errors=True)
            assert last_error is not None
            raise last_error
        except BaseException:
            self.stop(_failed=True)
            raise

    def stop(self, *, _failed: bool = False) -> None:
        """Stop every process (apiserver first) and remove the work directory."""
        for client in self._clients:
            with contextlib.suppress(Exception):
                client.close()
        self._clients.clear()
        for comp in ("apiserver", "core_stub", "etcd"):
            self._stop_component(comp, grace=10 if comp == "apiserver" else 5)
        self.started = False
        self._close_workdir(keep=self.keep_workdir, label="realapi")

    # -- start-up steps --------------------------------------------------------------------------

    def _write_pki(self) -> None:
        pki = self.workdir / "pki"
        pki.mkdir()
        self._ca = CertificateAuthority(pki, common_name=f"fhpa-realapi-{self.name}-ca")
        self._ca.issue("admin", common_name="admin", organizations=["system:masters"], client=True)
        self._ca.issue(
            "apiserver", common_name="apiserver", hosts=["127.0.0.1", "localhost", "::1"], server=True
        )

    def _write_kubeconfig(self, path: Path) -> None:
        context = f"realapi-{self.name}"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": context, "cluster": {"server": self.url, "certificate-authority": str(self.ca_path)}}
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.admin_cert_path),
                        "client-key": str(self.admin_key_path),
                    },
                }
            ],
            "contexts": [
                {"name": context, "context": {"cluster": context, "user": "admin", "namespace": "default"}}
            ],
            "current-context": context,
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))

    def _start_core_stub(self) -> None:
        proc = self._spawn(
            "core_stub",
            [sys.executable, str(CORE_STUB), "--host", "127.0.0.1", "--port", "0"],
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None
        line = b""
        deadline = time.monotonic() + 20
        # The stub prints "listening on http://127.0.0.1:PORT" once bound.
        os.set_blocking(proc.stdout.fileno(), False)
        while time.monotonic() < deadline and not line.endswith(b"\n"):
            chunk = proc.stdout.read(200) if proc.poll() is None else proc.stdout.read()
            if chunk:
                line += chunk
            elif proc.poll() is not None:
                break
            else:
                time.sleep(0.02)
        proc.stdout.close()
        if not line.startswith(b"listening on http://"):
            raise RealAPIStartError(f"core stub did not start: {line!r}\n{tail(self.log_path('core_stub'))}")
        self.core_port = int(line.strip().rsplit(b":", 1)[1])
        core_config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "core", "cluster": {"server": self.core_url}}],
            "users": [{"name": "anonymous", "user": {}}],
            "contexts": [{"name": "core", "context": {"cluster": "core", "user": "anonymous"}}],
            "current-context": "core",
        }
        (self.workdir / "core.kubeconfig").write_text(yaml.safe_dump(core_config, sort_keys=False))

    def _start_etcd_and_apiserver(self, binaries: Binaries) -> None:
        self.port, self.etcd_port, peer_port = free_ports(3)
        self._write_kubeconfig(self.kubeconfig_path)
        etcd_url = f"http://127.0.0.1:{self.etcd_port}"
        self._spawn("etcd", etcd_argv(binaries.etcd, self.workdir / "etcd", self.etcd_port, peer_port))
        pki = self.workdir / "pki"
        self._spawn(
            "apiserver",
            [
                str(binaries.apiserver),
                "--etcd-servers", etcd_url,
                "--bind-address", "127.0.0.1",
                "--secure-port", str(self.port),
                "--tls-cert-file", str(pki / "apiserver.crt"),
                "--tls-private-key-file", str(pki / "apiserver.key"),
                "--cert-dir", str(self.workdir / "certs"),
                "--client-ca-file", str(self.ca_path),
                # Client certs only: no TokenReview/SubjectAccessReview is ever needed, because the
                # admin cert is in system:masters. The kubeconfigs only satisfy start-up checks.
                "--authentication-skip-lookup",
                "--authentication-kubeconfig", str(self.kubeconfig_path),
                "--authorization-kubeconfig", str(self.kubeconfig_path),
                "--kubeconfig", str(self.workdir / "core.kubeconfig"),
                "--enable-priority-and-fairness=false",
                "--disable-admission-plugins",
                "NamespaceLifecycle,ValidatingAdmissionPolicy,MutatingAdmissionPolicy",
                *self.extra_apiserver_args,
            ],
            env=self.apiserver_env,
        )  # fmt: skip

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_path))
        ctx.load_cert_chain(str(self.admin_cert_path), str(self.admin_key_path))
        return ctx

    # -- clients ---------------------------------------------------------------------------------

    def api_client(self) -> Any:
        """A new ``kubernetes.client.ApiClient`` with the admin credentials."""
        from kubernetes import config

        client = config.new_client_from_config(config_file=str(self.kubeconfig_path), persist_config=False)
        self._clients.append(client)
        return client

    def get_json(self, path: str) -> Any:
        """GET ``path`` and return the parsed JSON; raises ``RuntimeError`` unless HTTP 200."""
        status, body = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}: {body}")
        return body

    # -- CRDs ------------------------------------------------------------------------------------

    def install_crds(
        self, paths: Iterable[str | os.PathLike[str] | Mapping[str, Any]], *, timeout: float = 60
    ) -> list[str]:
        """Create (or replace) the CRDs in ``paths`` (YAML files, multi-document allowed, or dicts).

        Waits until every CRD is Established, its served versions answer a list request and its
        group-version discovery lists it. Returns the CRD names."""
        docs: list[JSON] = []
        for item in paths:
            if isinstance(item, Mapping):
                docs.append(json.loads(json.dumps(item)))
                continue
            with open(item) as fh:
                for doc in yaml.safe_load_all(fh):
                    if doc is None:
                        continue
                    if doc.get("kind") != "CustomResourceDefinition":
                        raise ValueError(f"{item}: not a CustomResourceDefinition: {doc.get('kind')}")
                    docs.append(doc)
        names = []
        for doc in docs:
            name = doc["metadata"]["name"]
            status, body = self.request(
                "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", doc
            )
            if status == 409:
                _, current = self.request(
                    "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                )
                doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                status, body = self.request(
                    "PUT", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", doc
                )
            if status not in (200, 201):
                raise RuntimeError(f"creating CRD {name}: HTTP {status}: {body}")
            names.append(name)
        deadline = time.monotonic() + timeout
        for doc in docs:
            self._wait_crd_usable(doc, deadline)
        return names

    def _wait_crd_usable(self, doc: JSON, deadline: float) -> None:
        name = doc["metadata"]["name"]
        group = doc["spec"]["group"]
        plural = doc["spec"]["names"]["plural"]
        versions = [v["name"] for v in doc["spec"]["versions"] if v.get("served", True)]
        last: Any = None
        while time.monotonic() < deadline:
            status, crd = self.request(
                "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            )
            conditions = (
                {c["type"]: c for c in (crd.get("status") or {}).get("conditions") or []}
                if status == 200
                else {}
            )
            last = conditions or crd
            if conditions.get("Established", {}).get("status") == "True":
                ok = True
                for version in versions:
                    list_status, _ = self.request("GET", f"/apis/{group}/{version}/{plural}?limit=1")
                    disc_status, disc = self.request("GET", f"/apis/{group}/{version}")
                    listed = disc_status == 200 and any(
                        r.get("name") == plural for r in disc.get("resources", [])
                    )
                    if list_status != 200 or not listed:
                        ok = False
                        last = f"{group}/{version}: list HTTP {list_status}, in discovery: {listed}"
                        break
                if ok:
                    return
            time.sleep(0.1)
        raise TimeoutError(f"CRD {name} not usable in time; last seen: {last}")

    # -- core stub -------------------------------------------------------------------------------

    def _stub_replace(self, collection: str, items: list[JSON], wait: float) -> JSON:
        conn = http.client.HTTPConnection("127.0.0.1", self.core_port, timeout=wait + 10)
        try:
            conn.request(
                "PUT",
                f"/_stub/collections/{collection}?wait={wait}",
                body=json.dumps({"items": items}).encode(),
                headers={"Content-Type": "application/json"},
            )
            resp = conn.getresponse()
            answer = json.loads(resp.read() or b"{}")
        finally:
            conn.close()
        if resp.status != 200:
            raise RuntimeError(f"core stub refused {collection}: HTTP {resp.status}: {answer}")
        return dict(answer)

    def set_webhooks(
        self,
        *,
        mutating: Sequence[Mapping[str, Any]] | None = None,
        validating: Sequence[Mapping[str, Any]] | None = None,
        timeout: float = 15.0,
        settle: float = 0.3,
    ) -> None:
        """Replace the webhook configurations the apiserver sees.

        Each argument is a list of Mutating/ValidatingWebhookConfiguration bodies (see
        ``webhook_configuration``); ``None`` leaves that kind unchanged, ``[]`` removes all. The
        stub streams the differences to the apiserver's watch (ADDED/MODIFIED/DELETED); the call
        returns once the apiserver's watch has been sent them, plus ``settle`` seconds for its
        informer to process them."""
        for kind, configs in (("mutating", mutating), ("validating", validating)):
            if configs is None:
                continue
            answer = self._stub_replace(WEBHOOK_COLLECTIONS[kind], default_webhooks(kind, configs), timeout)
            if answer.get("watchersBehind") or not answer.get("watchersUpdated"):
                raise TimeoutError(
                    f"the apiserver did not receive the {kind} webhook change within {timeout}s: {answer}"
                )
        time.sleep(settle)

    def create_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        """Add a namespace to the core stub (needed by webhooks with a namespaceSelector)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.core_port, timeout=10)
        try:
            body = {"metadata": {"name": name, "labels": dict(labels or {})}}
            conn.request("PUT", f"/api/v1/namespaces/{name}", body=json.dumps(body).encode())
            resp = conn.getresponse()
            resp.read()
        finally:
            conn.close()
        if resp.status not in (200, 201):
            raise RuntimeError(f"core stub: creating namespace {name}: HTTP {resp.status}")

    def issue_cert(self, name: str, hosts: Sequence[str] = ("127.0.0.1", "localhost")) -> tuple[Path, Path]:
        """A serving cert (and key) signed by this server's CA, e.g. for a test webhook server.

        Use ``ca_pem`` as the webhook's ``caBundle``."""
        if self._ca is None:
            raise RuntimeError("RealAPIServer is not started")
        return self._ca.issue(name, common_name=hosts[0] if hosts else name, hosts=hosts, server=True)

    # -- kubectl ---------------------------------------------------------------------------------

    def kubectl_env(self, cache_dir: str | os.PathLike[str] | None = None) -> dict[str, str]:
        """Environment for running ``kubectl`` against this server (own ``KUBECACHEDIR``)."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig_path)
        env["KUBECACHEDIR"] = str(cache_dir) if cache_dir is not None else str(self.workdir / "kubecache")
        return env

    def kubectl(
        self,
        *args: str,
        cache_dir: str | os.PathLike[str] | None = None,
        input: str | None = None,
        timeout: float = 60,
        kubectl: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``kubectl ARGS`` against this server; never raises on a non-zero exit."""
        binary = kubectl or os.environ.get("FHPA_KUBECTL") or shutil.which("kubectl") or "/usr/bin/kubectl"
        return subprocess.run(
            [binary, *args],
            env=self.kubectl_env(cache_dir),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
