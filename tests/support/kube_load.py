"""The load model behind the kube tier's metrics servers, and the metrics.k8s.io server itself.

The model is the simulator's: a workload has one CPU demand (millicores, set by the test or by a
trace), shared equally by its READY pods over every member cluster. Each member's metrics server
answers ``/apis/metrics.k8s.io/v1beta1/namespaces/NS/pods?labelSelector=...`` with that share for
each of its ready pods, so the real HPA controller of each member sees the utilization the
simulator would compute. Pods that are running but not ready yet report no usage (a starting
container), which the HPA treats as it treats missing metrics.

The server is a thread in the test process (HTTPS with a throw-away certificate); the member's
kube-aggregator reaches it through an ``APIService`` and an ``ExternalName`` Service pointing at
``localhost`` (``KubeMember.install_metrics``). Plain module (no pytest import).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from controller.planning.selectors import parse_selector, selector_matches

JSON = dict[str, Any]
GROUP_VERSION = "metrics.k8s.io/v1beta1"

# (namespace, labels) of the ready pods one member runs, asked for by the model.
ReadyPods = Callable[[], list[tuple[str, str, Mapping[str, str]]]]


class LoadModel:
    """CPU demand per workload, shared by its ready pods across all members. Thread-safe.

    A workload is named by ``(namespace, app)``: the pods whose label ``app`` has that value.
    """

    def __init__(self, label: str = "app") -> None:
        self.label = label
        self._lock = threading.Lock()
        self._demand: dict[tuple[str, str], float] = {}
        self._members: dict[str, ReadyPods] = {}

    def set_demand(self, namespace: str, app: str, millicores: float) -> None:
        with self._lock:
            self._demand[(namespace, app)] = float(millicores)

    def demand(self, namespace: str, app: str) -> float:
        with self._lock:
            return self._demand.get((namespace, app), 0.0)

    def attach(self, member: str, ready_pods: ReadyPods) -> None:
        """Count ``member``'s ready pods in the sharing (its kubelet stand-in knows them)."""
        with self._lock:
            self._members[member] = ready_pods

    def detach(self, member: str) -> None:
        """A stopped member's pods serve no load any more."""
        with self._lock:
            self._members.pop(member, None)

    def ready_count(self, namespace: str, app: str) -> int:
        with self._lock:
            members = list(self._members.values())
        return sum(
            1
            for ready in members
            for ns, _name, labels in ready()
            if ns == namespace and labels.get(self.label) == app
        )

    def pod_usage(self, namespace: str, labels: Mapping[str, str]) -> float:
        """Millicores one ready pod of this workload uses now."""
        app = labels.get(self.label)
        if app is None:
            return 0.0
        ready = self.ready_count(namespace, app)
        return self.demand(namespace, app) / ready if ready else 0.0


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # the aggregator polls every few seconds; the log would drown the useful lines

    def _send(self, code: int, body: JSON) -> None:
        raw = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        parts = [p for p in url.path.split("/") if p]
        query = urllib.parse.parse_qs(url.query)
        if parts == ["apis", "metrics.k8s.io", "v1beta1"]:
            self._send(200, _resource_list())
        elif len(parts) == 6 and parts[:3] == ["apis", "metrics.k8s.io", "v1beta1"] and parts[5] == "pods":
            if parts[3] != "namespaces":
                self._send(404, _not_found())
                return
            selector = (query.get("labelSelector") or [""])[0]
            self._send(200, self.server.pod_metrics(parts[4], selector))
        else:
            self._send(404, _not_found())


def _resource_list() -> JSON:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GROUP_VERSION,
        "resources": [
            {
                "name": "pods",
                "singularName": "",
                "namespaced": True,
                "kind": "PodMetrics",
                "verbs": ["get", "list"],
            },
            {
                "name": "nodes",
                "singularName": "",
                "namespaced": False,
                "kind": "NodeMetrics",
                "verbs": ["get", "list"],
            },
        ],
    }


def _not_found() -> JSON:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}


class MetricsServer(ThreadingHTTPServer):
    """``metrics.k8s.io/v1beta1`` pod metrics of one member, from the load model."""

    daemon_threads = True

    def __init__(
        self,
        member: str,
        model: LoadModel,
        ready_pods: ReadyPods,
        cert: Path,
        key: Path,
        window_seconds: int = 1,
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.member = member
        self.model = model
        self.ready_pods = ready_pods
        self.window_seconds = window_seconds
        self.requests = 0
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(cert), str(key))
        self.socket = ctx.wrap_socket(self.socket, server_side=True)
        self._thread = threading.Thread(target=self.serve_forever, name=f"metrics {member}", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.shutdown()
        self.server_close()

    def pod_metrics(self, namespace: str, selector: str) -> JSON:
        self.requests += 1
        reqs = parse_selector(selector) or []
        now = _now()
        items = []
        for ns, name, labels in self.ready_pods():
            if ns != namespace or not selector_matches(reqs, labels):
                continue
            milli = round(self.model.pod_usage(ns, labels))
            items.append(
                {
                    "metadata": {"name": name, "namespace": ns, "creationTimestamp": now},
                    "timestamp": now,
                    "window": f"{self.window_seconds}s",
                    "containers": [{"name": "app", "usage": {"cpu": f"{milli}m", "memory": "64Mi"}}],
                }
            )
        return {"kind": "PodMetricsList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items}
