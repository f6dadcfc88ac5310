"""The watch-backed member cache (issue 13, item 1): trimming, memory, pagination, and faults.

Pagination runs against a small in-test stub transport: tests/support/fakekube.py does not paginate
(it ignores ``limit`` and answers one page). Everything else runs against FakeKube over real HTTP:
410 relist (vanish, delete, compact, reappear), a 500 then recovery, watch timeouts (the server's
``timeoutSeconds`` and a stalled stream), and ``synced`` before the first list. No wall-clock deadline
can fail these on a loaded machine: waits are for conditions, with generous timeouts.
"""

from __future__ import annotations

import copy
import gc
import json
import threading
import tracemalloc
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from controller.backoff import ExponentialBackoff
from controller.errors import ClusterUnreachableError, GoneError
from controller.kube.clients import KubeClient, Timeouts, build_api_client
from controller.kube.listwatch import ListWatch
from controller.kube.member_cache import (
    HPA,
    NODE,
    POD,
    CacheNotSyncedError,
    MemberCache,
    trim_hpa,
    trim_node,
    trim_pod,
)
from controller.kube.member_reads import pod_counts
from controller.planning import capacity
from tests.support import waiting
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import node, pod

WAIT = 30.0  # generous: a condition that needs longer than this is a bug, not a slow machine
FAST = ExponentialBackoff(base=0.05, maximum=0.2, jitter=0.1)


def wait_for(cond: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """``tests.support.waiting.wait_for`` at a stub's pace: its answers come in milliseconds."""
    waiting.wait_for(cond, timeout, what, interval=0.02)


def hpa(name: str, namespace: str = "default", target: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace, "labels": {"a": "b"}, "annotations": {"x": "y"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1,
            "maxReplicas": 5,
        },
        "status": {"currentReplicas": 2, "desiredReplicas": 2},
    }


def big_pod() -> dict[str, Any]:
    """A pod as a real cluster serves it: large annotations, env, managedFields, container statuses."""
    full = pod("web-1", labels={"app": "web", "pod-template-hash": "abc"}, node_name="n1", cpu="250m")
    full["metadata"].update(
        {
            "uid": "u-1",
            "resourceVersion": "42",
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "annotations": {f"note/{i}": "x" * 1000 for i in range(50)},
            "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {"x" * 50: {}}}}] * 20,
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-abc", "uid": "rs"}],
        }
    )
    spec = full["spec"]
    spec["containers"][0]["env"] = [{"name": f"E{i}", "value": "v" * 200} for i in range(100)]
    spec["containers"][0]["resources"]["limits"] = {"cpu": "1", "memory": "1Gi"}
    spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    spec["initContainers"] = [
        {
            "name": "sidecar",
            "image": "s",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "50m"}},
        }
    ]
    spec["tolerations"] = [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }
    ]
    spec["nodeSelector"] = {"disk": "ssd"}
    spec["volumes"] = [{"name": "data", "configMap": {"name": "c" * 200}}]
    full["status"]["conditions"][0].update(
        {"lastTransitionTime": "2026-01-01T00:00:00Z", "message": "m" * 500, "reason": "Scheduled"}
    )
    full["status"]["containerStatuses"] = [{"name": "app", "state": {"running": {}}, "image": "i" * 300}] * 5
    full["status"]["podIPs"] = [{"ip": "10.0.0.1"}]
    return full


# --- trimming -------------------------------------------------------------------------------------------


def test_a_pod_with_large_annotations_env_and_status_is_stored_small() -> None:
    full = big_pod()
    trimmed = trim_pod(full)
    assert trimmed == {
        "metadata": {
            "namespace": "default",
            "name": "web-1",
            "labels": {"app": "web", "pod-template-hash": "abc"},
            "deletionTimestamp": True,
        },
        "spec": {
            "nodeName": "n1",
            "containers": [{"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "50m"}}, "restartPolicy": "Always"}],
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "reason": "Scheduled"},
                {"type": "Ready", "status": "True"},
            ],
        },
    }
    assert len(json.dumps(full)) > 50_000
    assert len(json.dumps(trimmed)) < 700


def test_a_trimmed_pod_counts_and_reserves_as_the_full_one() -> None:
    full = big_pod()
    full["metadata"].pop("deletionTimestamp")
    pending = pod("web-2", labels={"app": "web"}, unschedulable=True)
    for pods in ([full], [pending], [full, pending]):
        assert pod_counts([trim_pod(p) for p in pods]) == pod_counts(pods)
        assert capacity.used_by_node([trim_pod(p) for p in pods]) == capacity.used_by_node(pods)
    assert capacity.pod_requests(trim_pod(full)["spec"]) == capacity.pod_requests(full["spec"])


def test_nodes_and_hpas_are_trimmed() -> None:
    raw = node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule", "timeAdded": "t"}])
    raw["metadata"]["annotations"] = {"big": "x" * 5000}
    raw["status"]["conditions"].append({"type": "MemoryPressure", "status": "False"})
    raw["status"]["images"] = [{"names": ["i" * 200]}] * 50
    trimmed = trim_node(raw)
    assert trimmed == {
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "spec": {"unschedulable": False, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    raw["spec"]["taints"][0].pop("timeAdded")  # not kept: taint matching never reads it
    assert capacity.node_info(trimmed) == capacity.node_info(raw)
    h = hpa("h")
    h["metadata"].update({"resourceVersion": "7", "uid": "u", "managedFields": [{"m": "x" * 900}]})
    t = trim_hpa(h)
    assert set(t["metadata"]) == {"name", "namespace", "labels", "annotations", "resourceVersion", "uid"}
    assert t["spec"] == h["spec"] and t["status"] == h["status"]


# --- memory -----------------------------------------------------------------------------------------


def synthetic_pod(i: int) -> dict[str, Any]:
    workload = f"app-{i % 200}"
    full = pod(
        f"{workload}-{i:06d}",
        namespace=f"ns-{i % 20}",
        labels={"app": workload, "pod-template-hash": f"h{i % 200}", "team": f"t{i % 10}"},
        node_name=f"node-{i % 500}",
        cpu="100m",
        memory="128Mi",
    )
    full["metadata"]["annotations"] = {"big": "x" * 2000}
    # one label unique to each pod (as StatefulSets add): the worst case for sharing labels
    full["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = full["metadata"]["name"]
    full["spec"]["containers"].append(
        {"name": "side", "image": "s", "resources": {"requests": {"cpu": "10m"}}}
    )
    full["spec"]["tolerations"] = [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    return full


class StubTransport:
    """Pages built on demand from ``make(i)`` for i in range(count); watches end at once, empty."""

    def __init__(self, count: int, make: Callable[[int], dict[str, Any]], rv: str = "100") -> None:
        self.count, self.make, self.rv = count, make, rv
        self.queries: list[dict[str, Any]] = []
        self.expire_continue_once = False
        self.watch_queries: list[dict[str, Any]] = []

    def list_page(self, path: str, query: Mapping[str, Any]) -> Mapping[str, Any]:
        self.queries.append(dict(query))
        start = int(query.get("continue") or 0)
        if start and self.expire_continue_once:
            self.expire_continue_once = False
            raise GoneError("continue token expired")
        end = min(self.count, start + int(query["limit"]))
        meta: dict[str, Any] = {"resourceVersion": self.rv}
        if end < self.count:
            meta["continue"] = str(end)
        return {"metadata": meta, "items": [self.make(i) for i in range(start, end)]}

    def open_watch(self, path: str, query: Mapping[str, Any], read_timeout: float) -> Any:
        self.watch_queries.append(dict(query))
        return _EmptyStream()


class _EmptyStream:
    def lines(self) -> Iterator[str]:
        return iter(())

    def close(self) -> None:
        pass

    def release(self) -> None:
        pass


def test_ten_thousand_trimmed_pods_stay_under_budget() -> None:
    """Retained memory of the cache after listing 10,000 pods (each ~3 KiB as served) in pages of 500."""
    budget_mib = 40
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        cache = MemberCache("big", StubTransport(10_000, synthetic_pod), page_size=500)
        cache.pods_watch._list(threading.Event())
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(cache.pods_watch) == 10_000
    assert len(cache.pods_watch._store) == 10_000
    mib = used / 2**20
    print(f"\n10,000 trimmed pods retain {mib:.1f} MiB (budget {budget_mib} MiB)")
    assert mib < budget_mib


# --- pagination (stub) --------------------------------------------------------------------------------


def named(i: int) -> dict[str, Any]:
    return pod(f"p{i}", labels={"i": str(i)}, node_name="n1")


def test_the_list_is_read_in_pages() -> None:
    stub = StubTransport(10, named, rv="77")
    lw = ListWatch(stub, "/api/v1/pods", trim_pod, name="t", page_size=3)
    lw._list(threading.Event())
    assert [q.get("continue") for q in stub.queries] == [None, "3", "6", "9"]
    assert all(q["limit"] == 3 for q in stub.queries)
    assert lw.pages == 4 and len(lw) == 10 and lw.synced.is_set()
    assert lw.resource_version == "77"
    assert lw.relists == 0


def test_an_expired_continue_token_restarts_the_list_from_its_first_page() -> None:
    stub = StubTransport(7, named)
    stub.expire_continue_once = True
    lw = ListWatch(stub, "/api/v1/pods", trim_pod, name="t", page_size=3)
    lw._list(threading.Event())
    assert [q.get("continue") for q in stub.queries] == [None, "3", None, "3", "6"]
    assert sorted(k[1] for k in lw._store) == sorted(f"p{i}" for i in range(7))


def test_an_update_to_a_field_not_kept_is_not_reported() -> None:
    seen: list[tuple[str, tuple[str, str]]] = []
    stub = StubTransport(1, named)
    lw = ListWatch(stub, "/api/v1/pods", trim_pod, name="t", handler=lambda t, k, o, n: seen.append((t, k)))
    lw._list(threading.Event())
    assert seen == [("SYNC", ("default", "p0"))]  # the first list's objects: in the store, not news
    changed = named(0)
    changed["metadata"]["annotations"] = {"new": "x"}
    changed["metadata"]["resourceVersion"] = "101"
    lw._handle_line(json.dumps({"type": "MODIFIED", "object": changed}))
    assert lw.resource_version == "101" and len(seen) == 1
    changed["status"]["conditions"][1]["status"] = "False"
    lw._handle_line(json.dumps({"type": "MODIFIED", "object": changed}))
    lw._handle_line(json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "150"}}}))
    assert seen[-1] == ("MODIFIED", ("default", "p0")) and lw.resource_version == "150"
    with pytest.raises(GoneError):
        lw._handle_line(json.dumps({"type": "ERROR", "object": {"code": 410, "message": "too old"}}))


# --- against FakeKube over HTTP -----------------------------------------------------------------------


def populate(fake: FakeKube) -> None:
    fake.store.put("nodes", node("n1"))
    fake.store.put("pods", pod("web-a", labels={"app": "web"}, node_name="n1"))
    fake.store.put("pods", pod("web-b", labels={"app": "web"}, unschedulable=True))
    fake.store.put("pods", pod("other", labels={"app": "other"}, node_name="n1"))
    fake.store.put("pods", pod("elsewhere", namespace="kube-system", labels={"app": "web"}, node_name="n1"))
    fake.store.put("horizontalpodautoscalers", hpa("h1"))
    fake.store.put("horizontalpodautoscalers", hpa("h2", namespace="kube-system"))


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube(stall_seconds=5, bookmark_seconds=0.2) as fk:
        populate(fk)
        yield fk


def client_for(fake: FakeKube) -> KubeClient:
    config = fake.kubeconfig()
    config["users"][0]["user"] = {}  # plain HTTP: a kubeconfig with a credential would be refused
    return KubeClient("m1", build_api_client(config), Timeouts(connect=5, read=WAIT, probe=5))


class Running:
    def __init__(self, fake: FakeKube, **kwargs: Any) -> None:
        self.changes: list[tuple[str, tuple[str, str]]] = []
        kwargs.setdefault("backoff", FAST)
        kwargs.setdefault("min_watch_interval", 0.05)
        self.client = client_for(fake)
        self.cache = MemberCache.for_client(
            self.client, on_change=lambda c: self.changes.append((c.resource, c.key)), **kwargs
        )

    def __enter__(self) -> MemberCache:
        self.cache.start()
        return self.cache

    def __exit__(self, *exc: object) -> None:
        self.cache.stop()
        self.client.close()


def pod_list_requests(fake: FakeKube) -> list[Any]:
    return [r for r in fake.requests_matching("GET", r"^/api/v1/pods$") if "watch" not in r.query]


def pod_watch_requests(fake: FakeKube) -> list[Any]:
    return [r for r in fake.requests_matching("GET", r"^/api/v1/pods$") if "watch" in r.query]


def test_the_cache_answers_the_queries_observe_needs(fake: FakeKube) -> None:
    run = Running(fake)
    with run as cache:
        assert cache.wait_synced(WAIT)
        assert cache.synced
        web = cache.pods_matching("default", {"matchLabels": {"app": "web"}})
        assert sorted(p["metadata"]["name"] for p in web) == ["web-a", "web-b"]
        assert pod_counts(web) == (1, 1, 1)
        assert [p["metadata"]["name"] for p in cache.pods_matching("default", "app=other")] == ["other"]
        assert cache.pods_matching("default", {}) == []
        assert len(cache.all_pods()) == 4
        assert [n["metadata"]["name"] for n in cache.nodes()] == ["n1"]
        assert [h["metadata"]["name"] for h in cache.hpas("default")] == ["h1"]
        # the first lists are one notice per resource, not one change per object in them
        assert {(k, key) for k, key in run.changes} == {(POD, ("", "")), (NODE, ("", "")), (HPA, ("", ""))}
        fake.store.put("pods", pod("web-c", labels={"app": "web"}, node_name="n1"))
        wait_for(lambda: len(cache.pods_matching("default", "app=web")) == 3, "the new pod")
        assert (POD, ("default", "web-c")) in run.changes
        fake.store.delete("nodes", None, "n1")
        wait_for(lambda: cache.nodes() == [], "the node's deletion")
        assert pod_list_requests(fake) and all(
            r.query.get("limit") == ["500"] for r in pod_list_requests(fake)
        )
        watch = pod_watch_requests(fake)[0].query
        assert watch["allowWatchBookmarks"] == ["true"] and watch["resourceVersion"]


def test_synced_stays_false_until_every_first_list_completes(fake: FakeKube) -> None:
    fault = fake.faults.add("GET", r"^/api/v1/nodes$", status=500, times=-1)
    run = Running(fake)
    assert not run.cache.synced
    with run as cache:
        assert cache.pods_watch.synced.wait(WAIT)
        wait_for(lambda: cache.nodes_watch.failures >= 2, "two failed node lists")
        assert not cache.synced
        for query in (
            cache.all_pods,
            cache.nodes,
            lambda: cache.hpas("default"),
            lambda: cache.pods_matching("default", "app=web"),
        ):
            with pytest.raises(CacheNotSyncedError, match="nodes"):
                query()
        fault.times = 0
        assert cache.wait_synced(WAIT) and cache.synced
        assert len(cache.nodes()) == 1


def test_410_relists_and_an_object_deleted_meanwhile_disappears(fake: FakeKube) -> None:
    run = Running(fake)
    with run as cache:
        assert cache.wait_synced(WAIT)
        lw = cache.pods_watch
        failures = lw.failures
        fake.vanish()
        wait_for(lambda: lw.failures > failures, "a failed request while the member is gone")
        fake.store.delete("pods", "default", "web-a")  # unseen: no watch is connected
        fake.store.put("pods", pod("new", labels={"app": "web"}, node_name="n1"))
        fake.store.compact()  # the cache's resourceVersion is now too old
        fake.reappear()
        wait_for(lambda: lw.relists >= 1, "a relist after 410")
        wait_for(lambda: lw.get(("default", "web-a")) is None, "the deleted pod leaving the cache")

        def web() -> list[str] | None:
            try:
                return sorted(p["metadata"]["name"] for p in cache.pods_matching("default", "app=web"))
            except ClusterUnreachableError:  # the nodes or HPA watch may still be in its backoff
                return None

        wait_for(lambda: web() is not None, "every watch back after the member reappeared")
        assert web() == ["new", "web-b"]
        assert (POD, ("default", "web-a")) in run.changes


def test_a_500_then_recovery_resumes_the_watch_without_a_relist(fake: FakeKube) -> None:
    run = Running(fake, timeout_seconds=1)  # watches end each second: the next one meets the fault
    with run as cache:
        assert cache.wait_synced(WAIT)
        lw = cache.pods_watch
        rv = lw.resource_version
        fault = fake.faults.add("GET", r"^/api/v1/pods$", status=500, times=2)
        wait_for(lambda: fault.hits == 2, "the 500s")
        fake.store.put("pods", pod("after", labels={"app": "web"}, node_name="n1"))
        wait_for(lambda: lw.get(("default", "after")) is not None, "the pod created after the 500s")
        assert lw.failures >= 2 and lw.relists == 0 and lw.lists == 1
        assert len(pod_list_requests(fake)) == 1
        later = pod_watch_requests(fake)[-1].query
        assert int(later["resourceVersion"][0]) >= int(rv or 0)


def test_watches_ended_by_the_server_resume_from_the_last_version(fake: FakeKube) -> None:
    run = Running(fake, timeout_seconds=1)
    with run as cache:
        assert cache.wait_synced(WAIT)
        lw = cache.pods_watch
        wait_for(lambda: lw.watches >= 3, "three watches, each ended by the server's timeout")
        fake.store.put("pods", pod("late", labels={"app": "web"}, node_name="n1"))
        wait_for(lambda: lw.get(("default", "late")) is not None, "the pod created later")
        assert lw.relists == 0 and lw.failures == 0 and len(pod_list_requests(fake)) == 1
        assert all(r.query.get("resourceVersion") for r in pod_watch_requests(fake))
        assert all(r.query.get("timeoutSeconds") == ["1"] for r in pod_watch_requests(fake))


def test_a_stalled_watch_times_out_on_the_client_and_resumes(fake: FakeKube) -> None:
    run = Running(fake, timeout_seconds=1, read_slack_seconds=1.0)
    with run as cache:
        assert cache.wait_synced(WAIT)
        lw = cache.pods_watch
        fault = fake.faults.add("GET", r"^/api/v1/pods$", stall=5.0)
        wait_for(lambda: fault.hits == 1, "the stalled watch")
        wait_for(lambda: lw.failures >= 1, "the client's read timeout")
        assert lw.last_error is not None
        fake.store.put("pods", pod("late", labels={"app": "web"}, node_name="n1"))
        wait_for(lambda: lw.get(("default", "late")) is not None, "the pod created after the stall")
        assert lw.relists == 0 and len(pod_list_requests(fake)) == 1


def test_stop_ends_every_thread_promptly_even_mid_watch(fake: FakeKube) -> None:
    run = Running(fake)  # watches of 300 s: stop must not wait for them
    with run as cache:
        assert cache.wait_synced(WAIT)
        wait_for(lambda: all(lw.watches >= 1 for lw in cache.watches), "open watches")
    assert not any(t.is_alive() for t in run.cache._threads)


def test_the_cache_holds_exactly_the_trimmed_served_objects(fake: FakeKube) -> None:
    """What a query returns is the trim of what the server holds (and is read-only for callers)."""
    with Running(fake) as cache:
        assert cache.wait_synced(WAIT)
        served, _ = fake.store.list_objects("pods", "default")
        served_by_name = {p["metadata"]["name"]: p for p in served}
        for p in cache.all_pods():
            if p["metadata"]["namespace"] != "default":
                continue
            assert p == trim_pod(copy.deepcopy(served_by_name[p["metadata"]["name"]]))
