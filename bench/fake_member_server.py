"""One fake member cluster in its own process, for bench/controller_scale.py.

A FakeKube (tests/support/fakekube.py, used as it is) on a loopback port, seeded with N Deployments
``w-0`` .. ``w-{N-1}`` (a pod template requesting CPU), P pods spread over them (label ``app``) and over
nodes with allocatable CPU, memory and pods. Every request the server receives is counted (in memory,
nothing per request but a counter and, for writes, the method, path and time), so the benchmark can
read request rates without the fake's per-request log growing for the whole run.

Control goes over stdin/stdout, one JSON object a line (the member's API port sees no control
traffic, so the counts are the controller's alone):

    {"cmd": "stats"}                       -> {"requests": n, "by_method": {...}, "writes": k}
    {"cmd": "pend", "deployment": "w-3", "count": 2}
                                           -> {"t0": monotonic, "pods": [...]}  pods made Unschedulable
    {"cmd": "restore", "pods": [...]}      -> {"ok": true}                     back to Running/Ready
    {"cmd": "writes_since", "t": t0}       -> {"writes": [[t, method, path], ...]}
    {"cmd": "quit"}

With ``--control-plane`` the process is the benchmark's management cluster instead: the FederatedHPA and
CronFederatedHPA CRDs served as plain resources, no seed, and two more commands (so the benchmark's
bookkeeping never competes with the server for one interpreter):

    {"cmd": "create", "resource": "secrets", "object": {...}}   -> {"ok": true}
    {"cmd": "synced", "clusters": M}        -> {"synced": n}  FederatedHPAs with a status row per member

The process exits on "quit" or when stdin closes (the benchmark died): it never outlives its parent.
Times are time.monotonic(), which is one system-wide clock on Linux, so they compare across processes.

    python bench/fake_member_server.py --name member0 --deployments 20 --pods 200
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.fakekube import FakeKube  # noqa: E402
from tests.support.fakekube_builders import deployment, node, pod  # noqa: E402
from tests.support.fakekube_faults import RequestRecord  # noqa: E402

NAMESPACE = "default"
POD_CPU = "100m"
NODE_CPU = "8"  # 80 pods of 100m each
PODS_PER_NODE = 40  # nodes half full by CPU: room for the controller's capacity estimate to find


class CountingFake(FakeKube):
    """FakeKube whose request log is a counter: a long benchmark keeps no record per GET."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.count = 0
        self.by_method: dict[str, int] = {}
        self.by_kind: dict[str, int] = {}  # probe, watch, list, get, write (request_kind)
        self.write_log: list[tuple[float, str, str]] = []

    def record(self, req: RequestRecord) -> None:
        with self._requests_lock:
            self.count += 1
            self.by_method[req.method] = self.by_method.get(req.method, 0) + 1
            kind = request_kind(req)
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
            if req.method != "GET":
                self.write_log.append((time.monotonic(), req.method, req.path))


def request_kind(req: RequestRecord) -> str:
    """What a request was for, to break a request rate down: probe, watch, list, get or write."""
    if req.method != "GET":
        return "write"
    if req.path in ("/readyz", "/healthz", "/livez"):
        return "probe"
    if req.query.get("watch", [""])[-1] in ("true", "1"):
        return "watch"
    last = req.path.rstrip("/").rsplit("/", 1)[-1]
    collections = ("pods", "nodes", "horizontalpodautoscalers", "deployments", "statefulsets")
    return "list" if last in collections else "get"


def deployment_name(i: int) -> str:
    return f"w-{i}"


def pods_per_deployment(deployments: int, pods: int) -> list[int]:
    """P pods over N Deployments as evenly as they go (the first P mod N get one more)."""
    base, extra = divmod(pods, deployments) if deployments else (0, 0)
    return [base + (1 if i < extra else 0) for i in range(deployments)]


def node_count(pods: int) -> int:
    return max(2, math.ceil(pods / PODS_PER_NODE))


def seed(fake: FakeKube, deployments: int, pods: int) -> None:
    """Nodes, Deployments and their pods, bound round-robin to nodes, Running and Ready."""
    nodes = [f"node-{i}" for i in range(node_count(pods))]
    for name in nodes:
        fake.store.create("nodes", node(name, cpu=NODE_CPU, memory="32Gi", pods=110))
    k = 0
    for i, count in enumerate(pods_per_deployment(deployments, pods)):
        name = deployment_name(i)
        dep = deployment(name, NAMESPACE, replicas=count, cpu=POD_CPU)
        dep["status"] = {"replicas": count, "readyReplicas": count, "availableReplicas": count}
        fake.store.create("deployments.apps", dep)
        for j in range(count):
            fake.store.create(
                "pods",
                pod(
                    f"{name}-{j}",
                    NAMESPACE,
                    labels={"app": name},
                    node_name=nodes[k % len(nodes)],
                    cpu=POD_CPU,
                ),
            )
            k += 1


def _pend(fake: FakeKube, deployment_: str, count: int) -> dict[str, Any]:
    """Make ``count`` Ready pods of a Deployment Pending and Unschedulable (as if evicted and not placed)."""
    items, _ = fake.store.list_objects("pods", NAMESPACE, label_selector=f"app={deployment_}")
    chosen = [p for p in items if (p.get("spec") or {}).get("nodeName")][:count]
    t0 = time.monotonic()
    for current in chosen:
        pending = pod(
            current["metadata"]["name"], NAMESPACE, labels=current["metadata"]["labels"], unschedulable=True
        )
        fake.store.put("pods", pending, NAMESPACE)
    return {"t0": t0, "pods": [[p["metadata"]["name"], p["spec"]["nodeName"]] for p in chosen]}


def _restore(fake: FakeKube, pods: list[list[str]]) -> dict[str, Any]:
    for name, node_name in pods:
        current = fake.store.get("pods", NAMESPACE, name)
        ready = pod(name, NAMESPACE, labels=current["metadata"]["labels"], node_name=node_name, cpu=POD_CPU)
        fake.store.put("pods", ready, NAMESPACE)
    return {"ok": True}


FHPA = "federatedhpas.autoscaling.karmada.io"


def _synced(fake: FakeKube, clusters: int) -> int:
    """FederatedHPAs whose status has a row for every member (read in place: no copy of each object)."""
    with fake.store.cond:
        objects = [o for (key, _, _), o in fake.store._objects.items() if key == FHPA]
    return sum(1 for o in objects if len(((o.get("status") or {}).get("clusters")) or []) >= clusters)


def serve_commands(fake: CountingFake) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        cmd = msg.get("cmd")
        if cmd == "quit":
            break
        if cmd == "stats":
            with fake._requests_lock:
                out: dict[str, Any] = {
                    "requests": fake.count,
                    "by_method": dict(fake.by_method),
                    "by_kind": dict(fake.by_kind),
                    "writes": len(fake.write_log),
                }
        elif cmd == "pend":
            out = _pend(fake, msg["deployment"], int(msg.get("count", 1)))
        elif cmd == "restore":
            out = _restore(fake, msg["pods"])
        elif cmd == "create":
            fake.store.create(msg["resource"], msg["object"])
            out = {"ok": True}
        elif cmd == "synced":
            out = {"synced": _synced(fake, int(msg["clusters"]))}
        elif cmd == "writes_since":
            with fake._requests_lock:  # the log is in time order: find the start, do not scan it all
                start = bisect.bisect_left(fake.write_log, float(msg["t"]), key=lambda w: w[0])
                out = {"writes": [list(w) for w in fake.write_log[start:]]}
        else:
            out = {"error": f"unknown command {cmd!r}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--name", default="member")
    parser.add_argument("--deployments", type=int, default=20)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--history", type=int, default=5000, help="watch event history the fake keeps")
    parser.add_argument(
        "--bookmark-seconds",
        type=float,
        default=60.0,
        help="how often each open watch gets a bookmark (a real API server: about every minute)",
    )
    parser.add_argument("--control-plane", action="store_true", help="serve the management cluster instead")
    args = parser.parse_args(argv)
    if args.control_plane:
        return serve_control_plane()
    fake = CountingFake(
        namespaces=("default", "kube-system"),
        history=args.history,
        watch_max_seconds=300.0,
        bookmark_seconds=args.bookmark_seconds,
    )
    seed(fake, args.deployments, args.pods)
    fake.start()
    sys.stdout.write(json.dumps({"url": fake.url, "name": args.name}) + "\n")
    sys.stdout.flush()
    stopper = threading.Thread(target=serve_commands, args=(fake,), daemon=True)
    stopper.start()
    stopper.join()
    fake.stop()
    return 0


def serve_control_plane() -> int:
    from tests.support.fakekube_store import Resource

    fake = CountingFake(
        namespaces=("default", "kube-system", "federated-hpa-system"),
        watch_max_seconds=300.0,
        history=100_000,
    )
    group = "autoscaling.karmada.io"
    fake.store.add_resource(Resource(group, "v1alpha1", "federatedhpas", "FederatedHPA", status=True))
    fake.store.add_resource(Resource(group, "v1alpha1", "cronfederatedhpas", "CronFederatedHPA", status=True))
    fake.start()
    sys.stdout.write(json.dumps({"url": fake.url, "name": "control-plane"}) + "\n")
    sys.stdout.flush()
    serve_commands(fake)
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
