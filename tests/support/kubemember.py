"""Real Kubernetes member clusters for tests: v1.20.2 control planes built by scripts/kube-build.sh.

``KubeMember`` starts, in its own temporary directory and on free loopback ports:

* ``etcd``;
* ``kube-apiserver`` (client-certificate authentication, RBAC, its own throw-away CA);
* ``kube-controller-manager`` with the real Deployment, ReplicaSet and HPA controllers (the HPA
  controller's sync period and downscale stabilization shortened for tests: ``HPAFlags``); the
  node lifecycle controller is off because no real kubelet heartbeats;
* ``kube-scheduler``, which binds pods to the hand-made Nodes or marks them
  ``PodScheduled=False/Unschedulable``;
* Nodes of a given allocatable (``NodeSpec``), created through the API as a kubelet registers;
* a kubelet stand-in thread (``tests/support/kubelet_standin.py``): bound pods become Running,
  then Ready after a start-up delay; deletions finish;
* a ``metrics.k8s.io`` server thread behind an ``APIService`` (``tests/support/kube_load.py``):
  each ready pod's CPU is its share of the workload's demand in a ``LoadModel`` that several
  members may share (demand split over the ready pods of every member, as in the simulator).

Several members may run at once; each is an independent cluster. ``stop()`` stops every process
group (also at interpreter exit) and removes the directory, unless asked to keep it
(``keep_workdir``, ``FHPA_KUBE_KEEP=1``, or ``stop(keep_logs=True)`` after a failure): then the
component logs stay there and the path is printed.

v1.20 serves ``autoscaling/v2beta2``, not ``autoscaling/v2``: members built here exercise our
v2beta2 path. Plain module (no pytest import).
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.support import waiting
from tests.support.builds import KubeBinaries, find_kube_binaries
from tests.support.kube_load import LoadModel, MetricsServer
from tests.support.kubelet_standin import KubeletStandIn
from tests.support.pki import CertificateAuthority
from tests.support.processes import ServerProcesses, etcd_argv, free_ports

JSON = dict[str, Any]
KUBE_VERSION = "v1.20.2"
METRICS_NAMESPACE = "kube-system"
METRICS_SERVICE = "fhpa-metrics"


class KubeStartError(RuntimeError):
    """The binaries were found but a component did not come up."""


# ------------------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class NodeSpec:
    """A Node as a kubelet would register it: allocatable resources and labels."""

    name: str
    cpu: str = "2"
    memory: str = "4Gi"
    pods: int = 110
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HPAFlags:
    """kube-controller-manager's HPA flags. Defaults are shortened for tests (upstream: 15 s sync,
    5 min downscale stabilization); the CPU initialization period and readiness delay keep upstream's
    meaning against the stand-in kubelet's real start times."""

    sync_period_s: float = 2.0
    downscale_stabilization_s: float = 10.0
    tolerance: float = 0.1
    cpu_initialization_period_s: float = 300.0
    initial_readiness_delay_s: float = 30.0

    def args(self) -> list[str]:
        return [
            f"--horizontal-pod-autoscaler-sync-period={self.sync_period_s:g}s",
            f"--horizontal-pod-autoscaler-downscale-stabilization={self.downscale_stabilization_s:g}s",
            f"--horizontal-pod-autoscaler-tolerance={self.tolerance:g}",
            f"--horizontal-pod-autoscaler-cpu-initialization-period={self.cpu_initialization_period_s:g}s",
            f"--horizontal-pod-autoscaler-initial-readiness-delay={self.initial_readiness_delay_s:g}s",
        ]


MEMBER_WAIT_FLOOR = 180.0
"""No wait on a real member is bounded tighter than this: at a load average of 30 an apiserver restart
or a pod's start alone took most of a minute, and a bound only guards against a hang."""


def wait_for(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    """``tests.support.waiting.wait_for`` at a real cluster's pace: a wait on a member, not a property-test
    deadline, so the timeouts are generous multiples of the HPA sync period and start-up delays, and
    never under ``MEMBER_WAIT_FLOOR`` (a passing wait returns as soon as its condition holds)."""
    return waiting.wait_for(check, max(timeout, MEMBER_WAIT_FLOOR), what, interval)


# ------------------------------------------------------------------------------------------------
# The member


class KubeMember(ServerProcesses):
    """One real member cluster. ``start()``/``stop()`` or a ``with`` block.

    Once started: ``url``, ``workdir``, ``request()``/``get()``/``create()``, ``kubeconfig()``
    (inline credentials, as a member Secret carries them), ``kubelet``, ``metrics``,
    ``stop_apiserver()``/``start_apiserver()`` (an outage with etcd and the data kept), and
    helpers for namespaces, deployments and pods.
    """

    def __init__(
        self,
        name: str,
        *,
        binaries: KubeBinaries | None = None,
        nodes: Sequence[NodeSpec] = (NodeSpec("node-1"),),
        model: LoadModel | None = None,
        hpa: HPAFlags | None = None,
        startup_delay: float = 2.0,
        ready_timeout: float = 120.0,
        keep_workdir: bool | None = None,
        extra_apiserver_args: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.name = name
        self.extra_apiserver_args = list(extra_apiserver_args)
        self._binaries = binaries
        self.node_specs = list(nodes)
        self.model = model or LoadModel()
        self.hpa = hpa or HPAFlags()
        self.startup_delay = startup_delay
        self.ready_timeout = ready_timeout
        self.keep_workdir = (
            keep_workdir if keep_workdir is not None else os.environ.get("FHPA_KUBE_KEEP") == "1"
        )
        self._ca: CertificateAuthority | None = None
        self.kubelet: KubeletStandIn | None = None
        self.metrics: MetricsServer | None = None
        self.port = 0
        self.etcd_port = 0
        self.started = False

    def __repr__(self) -> str:
        return f"KubeMember({self.name!r}, {self.url if self.started else 'stopped'})"

    def __enter__(self) -> KubeMember:
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.stop(keep_logs=exc_type is not None)

    # -- paths ---------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> KubeMember:
        if self.started:
            return self
        binaries = self._binaries or find_kube_binaries()
        self._binaries = binaries
        self._open_workdir(f"fhpa-kube-{self.name}-")
        try:
            self._write_pki()
            self.port, self.etcd_port, peer_port = free_ports(3)
            self._write_kubeconfig_file()
            self._start_etcd(binaries, peer_port)
            self.start_apiserver()
            self._spawn("kube-controller-manager", self._kcm_args(binaries))
            self._spawn("kube-scheduler", self._scheduler_args(binaries))
            self._register_nodes()
            self.kubelet = KubeletStandIn(
                self.name, self.request, self.node_names, startup_delay=self.startup_delay
            ).start()
            self.model.attach(self.name, self.kubelet.ready_pods)
            self._start_metrics()
            self._wait_controllers()
            self.started = True
            return self
        except BaseException:
            self.stop(keep_logs=True)
            raise

    def stop(self, *, keep_logs: bool = False) -> None:
        """Stop everything (the threads, then the apiserver's clients, the apiserver, etcd)."""
        self.model.detach(self.name)
        if self.kubelet is not None:
            self.kubelet.stop()
            self.kubelet = None
        if self.metrics is not None:
            self.metrics.stop()
            self.metrics = None
        for comp in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            self._stop_component(comp, grace=3)  # test clusters: nothing to drain or persist
        self.started = False
        self._close_workdir(keep=self.keep_workdir or keep_logs, label=f"kubemember {self.name}")

    def stop_apiserver(self) -> None:
        """An outage: the apiserver process goes away (etcd, data, port and the other components stay)."""
        if self.kubelet is not None:
            self.kubelet.pause()
        self._stop_component("kube-apiserver", grace=2)  # a crash more than a drain: open watches just break

    def start_apiserver(self) -> None:
        """(Re)start the apiserver on the member's port and wait until it is ready."""
        assert self._binaries is not None
        log = self.log_path("kube-apiserver")
        if log.exists():
            with log.open("ab") as fh:
                fh.write(b"\n---- restarted by the test harness ----\n")
        self._spawn("kube-apiserver", self._apiserver_args(self._binaries))
        self._wait_readyz(KubeStartError, "kube-apiserver", ("etcd", "kube-apiserver"))
        if self.kubelet is not None:
            self.kubelet.resume()

    # -- start-up steps ------------------------------------------------------------------------------

    def _write_pki(self) -> None:
        self.pki.mkdir()
        self._ca = CertificateAuthority(self.pki, common_name=f"fhpa-kube-{self.name}-ca")
        self._ca.issue("admin", common_name="admin", organizations=["system:masters"], client=True)
        self._ca.issue(
            "apiserver",
            common_name="kube-apiserver",
            hosts=["127.0.0.1", "localhost", "10.0.0.1", "kubernetes.default.svc"],
            server=True,
        )
        self._ca.issue("metrics", common_name="metrics", hosts=["127.0.0.1", "localhost"], server=True)
        sa_key = ec.generate_private_key(ec.SECP256R1())
        path = self.pki / "sa.key"
        path.write_bytes(
            sa_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        path.chmod(0o600)

    def kubeconfig(self, *, context: str | None = None) -> JSON:
        """An admin kubeconfig with inline credentials (what a member Secret carries)."""
        context = context or self.name

        def b64(name: str) -> str:
            return base64.b64encode((self.pki / name).read_bytes()).decode()

        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": context,
                    "cluster": {"server": self.url, "certificate-authority-data": b64("ca.crt")},
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate-data": b64("admin.crt"),
                        "client-key-data": b64("admin.key"),
                    },
                }
            ],
            "contexts": [{"name": context, "context": {"cluster": context, "user": "admin"}}],
            "current-context": context,
        }

    def _write_kubeconfig_file(self) -> None:
        (self.workdir / "admin.kubeconfig").write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))

    def _start_etcd(self, binaries: KubeBinaries, peer_port: int) -> None:
        self._spawn("etcd", etcd_argv(binaries.etcd, self.workdir / "etcd", self.etcd_port, peer_port))

    def _apiserver_args(self, binaries: KubeBinaries) -> list[str]:
        pki = self.pki
        return [
            str(binaries.apiserver),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            "--insecure-port=0",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--cert-dir={self.workdir / 'certs'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={pki / 'sa.key'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--enable-priority-and-fairness=false",
            # Nodes are registered Ready by the harness; no kubelet will ever clear the not-ready taint.
            "--disable-admission-plugins=TaintNodesByCondition",
            "--profiling=false",
            "--v=1",
            *self.extra_apiserver_args,
        ]

    def _kcm_args(self, binaries: KubeBinaries) -> list[str]:
        return [
            str(binaries.controller_manager),
            f"--kubeconfig={self.workdir / 'admin.kubeconfig'}",
            "--leader-elect=false",
            "--port=0",
            "--secure-port=0",
            # no node heartbeats here: the node lifecycle controller would taint and evict everything
            "--controllers=*,-nodelifecycle,-nodeipam,-cloud-node-lifecycle",
            f"--service-account-private-key-file={self.pki / 'sa.key'}",
            f"--root-ca-file={self.pki / 'ca.crt'}",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            "--profiling=false",
            "--v=2",
            *self.hpa.args(),
        ]

    def _scheduler_args(self, binaries: KubeBinaries) -> list[str]:
        return [
            str(binaries.scheduler),
            f"--kubeconfig={self.workdir / 'admin.kubeconfig'}",
            "--leader-elect=false",
            "--port=0",
            "--secure-port=0",
            "--profiling=false",
            "--v=1",
        ]

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def _register_nodes(self) -> None:
        for spec in self.node_specs:
            self.add_node(spec)

    def add_node(self, spec: NodeSpec) -> None:
        """Register a Ready node of ``spec``'s allocatable (as a kubelet does at start)."""
        resources = {"cpu": spec.cpu, "memory": spec.memory, "pods": str(spec.pods)}
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet stand-in of the fhpa test harness",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        }
        labels = {"kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux", **spec.labels}
        self.create("/api/v1/nodes", {"metadata": {"name": spec.name, "labels": labels}, "status": status})
        self.check(
            "PATCH",
            f"/api/v1/nodes/{spec.name}/status",
            {"status": status},
            content_type="application/merge-patch+json",
        )
        if spec not in self.node_specs:
            self.node_specs.append(spec)

    def node_names(self) -> set[str]:
        return {spec.name for spec in self.node_specs}

    def _start_metrics(self) -> None:
        assert self.kubelet is not None
        self.metrics = MetricsServer(
            self.name, self.model, self.kubelet.ready_pods, self.pki / "metrics.crt", self.pki / "metrics.key"
        ).start()
        self.create(
            f"/api/v1/namespaces/{METRICS_NAMESPACE}/services",
            {
                "metadata": {"name": METRICS_SERVICE},
                # the aggregator resolves an ExternalName service to https://<name>:<port>: no kube-proxy
                "spec": {
                    "type": "ExternalName",
                    "externalName": "localhost",
                    "ports": [{"port": self.metrics.port}],
                },
            },
            wait_for_namespace=True,
        )
        self.create(
            "/apis/apiregistration.k8s.io/v1/apiservices",
            {
                "metadata": {"name": "v1beta1.metrics.k8s.io"},
                "spec": {
                    "group": "metrics.k8s.io",
                    "version": "v1beta1",
                    "service": {
                        "namespace": METRICS_NAMESPACE,
                        "name": METRICS_SERVICE,
                        "port": self.metrics.port,
                    },
                    "insecureSkipTLSVerify": True,  # a loopback test server with a throw-away certificate
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                },
            },
        )

    def _wait_controllers(self) -> None:
        """Ready for tests: the metrics API is served and the controller manager made the default
        ServiceAccount (pods of a namespace are admitted only once it exists)."""

        def metrics_available() -> bool:
            _, body = self.request(
                "GET", "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io"
            )
            conditions = (body.get("status") or {}).get("conditions") or [] if isinstance(body, dict) else []
            return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)

        self._wait_component(metrics_available, "the metrics.k8s.io APIService to become Available")
        self._wait_component(
            lambda: self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
            "kube-controller-manager to create the default ServiceAccount",
        )

    def _wait_component(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            exited = self._exited()
            if exited is not None:
                raise KubeStartError(f"{self.name}: {exited}")
            if check():
                return
            time.sleep(0.25)
        raise KubeStartError(f"{self.name}: waited {self.ready_timeout:.0f}s for {what}")

    # -- requests ------------------------------------------------------------------------------------

    def check(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """``request`` that raises ``RuntimeError`` unless the answer is 2xx; returns the body."""
        status, answer = self.request(method, path, body, content_type)
        if not 200 <= status < 300:
            raise RuntimeError(f"{self.name}: {method} {path} answered HTTP {status}: {str(answer)[:400]}")
        return answer

    def get(self, path: str) -> Any:
        return self.check("GET", path)

    def create(self, path: str, body: JSON, *, wait_for_namespace: bool = False) -> Any:
        """POST; with ``wait_for_namespace`` a 404/403 for a namespace the apiserver is still making
        (kube-system, right after start) is retried for a few seconds."""
        deadline = time.monotonic() + (30 if wait_for_namespace else 0)
        while True:
            status, answer = self.request("POST", path, body)
            if 200 <= status < 300:
                return answer
            if status in (403, 404) and time.monotonic() < deadline:
                time.sleep(0.25)
                continue
            raise RuntimeError(f"{self.name}: POST {path} answered HTTP {status}: {str(answer)[:400]}")

    # -- workload helpers ----------------------------------------------------------------------------

    def create_namespace(self, name: str) -> None:
        self.create("/api/v1/namespaces", {"metadata": {"name": name}})
        wait_for(
            lambda: self.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200,
            30,
            f"{self.name}: default ServiceAccount in namespace {name}",
        )

    def create_deployment(
        self, namespace: str, name: str, *, replicas: int = 1, cpu: str = "500m", app: str | None = None
    ) -> JSON:
        """A Deployment of ``replicas`` pods requesting ``cpu`` each, labelled ``app=<app or name>``."""
        app = app or name
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": app}},
                "template": {
                    "metadata": {"labels": {"app": app}},
                    "spec": {
                        "terminationGracePeriodSeconds": 0,
                        "containers": [
                            {
                                "name": "app",
                                "image": "registry.invalid/none:0",  # never pulled: no container runtime
                                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                            }
                        ],
                    },
                },
            },
        }
        return self.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", body)

    def pods(self, namespace: str, app: str) -> list[JSON]:
        return list(self.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{app}")["items"])

    def pod_summary(self, namespace: str, app: str) -> dict[str, int]:
        """Counts of the workload's pods: ready, running (not ready yet), unschedulable, other pending,
        terminating."""
        out = {"ready": 0, "starting": 0, "unschedulable": 0, "pending": 0, "terminating": 0}
        for pod in self.pods(namespace, app):
            status = pod.get("status") or {}
            conds = {c["type"]: c for c in status.get("conditions") or []}
            if pod["metadata"].get("deletionTimestamp"):
                out["terminating"] += 1
            elif (conds.get("Ready") or {}).get("status") == "True":
                out["ready"] += 1
            elif status.get("phase") == "Running":
                out["starting"] += 1
            elif (conds.get("PodScheduled") or {}).get("reason") == "Unschedulable":
                out["unschedulable"] += 1
            else:
                out["pending"] += 1
        return out

    def hpas(self, namespace: str) -> list[JSON]:
        return list(
            self.get(f"/apis/autoscaling/v2beta2/namespaces/{namespace}/horizontalpodautoscalers")["items"]
        )

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision (as the apiserver's periodic compaction would):
        a watch or list from an older resourceVersion then answers 410 Gone. Returns the revision."""
        import urllib.request

        base = f"http://127.0.0.1:{self.etcd_port}/v3"

        def post(path: str, body: JSON) -> JSON:
            req = urllib.request.Request(
                base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                return dict(json.load(resp))

        # a range read of any key answers with the store's current revision in its header
        revision = int(post("/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"])
        post("/kv/compaction", {"revision": revision, "physical": True})
        return revision
