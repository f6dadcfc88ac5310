"""MemberCache (controller/kube/member_cache.py) against real watches of v1.20.2 members.

The cache's unit tests drive its list/watch loop with a stub transport; here the other end is a
real kube-apiserver: paginated lists with continue tokens, bookmarks, watch events written by the
real controllers and scheduler, and a 410 Gone after etcd compaction, which must lead to a relist
whose diff against the store reports what changed meanwhile. Then KubeMemberCluster observed from
its cache must say what it says from direct reads.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable

import pytest

from controller.backoff import ExponentialBackoff
from controller.kube.clients import KubeClient, build_api_client
from controller.kube.member import KubeMemberCluster
from controller.kube.member_cache import MemberCache
from controller.planning.member_hpa import render_spec
from controller.ports import ClusterIdentity
from tests.e2e.kube.test_member import TARGET, make_fhpa
from tests.support.kubemember import KubeMember, NodeSpec, wait_for

pytestmark = pytest.mark.kube


def start_cache(member: KubeMember, **options: object) -> tuple[MemberCache, KubeClient]:
    client = KubeClient(member.name, build_api_client(member.kubeconfig()))
    cache = MemberCache.for_client(client, hpa_version="v2beta2", **options)
    cache.start()
    assert cache.wait_synced(30), "the member cache did not sync against a real member"
    return cache, client


def names(pods: list[dict[str, object]]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}  # type: ignore[index]


def api_pod_names(member: KubeMember, namespace: str, app: str) -> set[str]:
    return {p["metadata"]["name"] for p in member.pods(namespace, app)}


def test_lists_in_pages_and_follows_real_watch_events(
    kube_members: dict[str, KubeMember], kube_namespace: str
) -> None:
    member = kube_members["m1"]
    member.create_deployment(kube_namespace, "web", replicas=3, cpu="200m")
    wait_for(lambda: member.pod_summary(kube_namespace, "web")["ready"] == 3, 60, "three ready pods")
    m1_cache, client = start_cache(member, page_size=2)  # three pods at least: the list takes pages
    try:
        _follow_watch_events(member, kube_namespace, m1_cache)
    finally:
        m1_cache.stop(timeout=5)
        client.close()


def _follow_watch_events(member: KubeMember, kube_namespace: str, m1_cache: MemberCache) -> None:
    assert m1_cache.pods_watch.pages >= 2
    assert {n["metadata"]["name"] for n in m1_cache.nodes()} == {"m1-node-a"}

    def ready_in_cache() -> int:
        pods = m1_cache.pods_matching(kube_namespace, "app=web")
        return sum(
            1
            for p in pods
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in p["status"].get("conditions", [])
            )
        )

    wait_for(
        lambda: ready_in_cache() == 3,
        30,
        "the cache sees the three pods Ready (status written by the stand-in)",
    )
    assert names(m1_cache.pods_matching(kube_namespace, {"matchLabels": {"app": "web"}})) == api_pod_names(
        member, kube_namespace, "web"
    )

    fhpa = make_fhpa(kube_namespace)
    member.create(
        f"/apis/autoscaling/v2beta2/namespaces/{kube_namespace}/horizontalpodautoscalers",
        {"metadata": {"name": "web"}, "spec": render_spec(fhpa, 1, 3)},
    )
    wait_for(
        lambda: [h["metadata"]["name"] for h in m1_cache.hpas(kube_namespace)] == ["web"], 30, "HPA in cache"
    )

    member.check(  # the real controllers delete two pods; the stand-in kubelet finishes the deletions
        "PATCH",
        f"/apis/apps/v1/namespaces/{kube_namespace}/deployments/web/scale",
        {"spec": {"replicas": 1}},
        "application/merge-patch+json",
    )
    wait_for(lambda: len(api_pod_names(member, kube_namespace, "web")) == 1, 60, "scaled down to one pod")
    wait_for(
        lambda: (
            names(m1_cache.pods_matching(kube_namespace, "app=web"))
            == api_pod_names(member, kube_namespace, "web")
        ),
        30,
        "deletions reach the cache",
    )
    assert m1_cache.pods_watch.relists == 0


def test_a_410_after_etcd_compaction_relists_and_the_diff_reports_what_changed(
    kube_member_factory: Callable[..., KubeMember],
) -> None:
    # Without the watch cache the apiserver serves watches from etcd itself, so a resourceVersion
    # etcd has compacted away answers 410 Gone: the real path, not a stub's.
    member = kube_member_factory(
        "compact", nodes=[NodeSpec("compact-node", cpu="2")], extra_apiserver_args=["--watch-cache=false"]
    )
    member.create_namespace("c")
    member.create_deployment("c", "web", replicas=3, cpu="100m")
    wait_for(lambda: member.pod_summary("c", "web")["ready"] == 3, 60, "three ready pods")
    changes: list[object] = []
    cache, client = start_cache(member, backoff=ExponentialBackoff(base=0.2, maximum=1.0, jitter=0.2))
    try:
        cache.add_listener(lambda *event: changes.append(event))
        wait_for(lambda: len(cache.pods_matching("c", "app=web")) == 3, 30, "three pods cached")
        for i in range(2):  # writes the pod watch does not see, so its version falls behind etcd's
            member.create("/api/v1/namespaces/c/configmaps", {"metadata": {"name": f"bump-{i}"}})
        held = cache.pods_watch.resource_version
        assert held
        member.stop_apiserver()  # every open watch breaks; the cache retries with backoff
        revision = member.compact_etcd()
        member.start_apiserver()
        # the server side of the story: the version the cache held is compacted away now
        assert first_watch_event(member, f"/api/v1/pods?watch=1&resourceVersion={held}")["code"] == 410
        gone = member.pods("c", "web")[0]["metadata"]["name"]
        member.check("DELETE", f"/api/v1/namespaces/c/pods/{gone}", {"gracePeriodSeconds": 0})
        wait_for(
            lambda: cache.pods_watch.relists >= 1, 60, f"a relist after the compaction at revision {revision}"
        )
        wait_for(
            lambda: names(cache.pods_matching("c", "app=web")) == api_pod_names(member, "c", "web"),
            30,
            "the cache equal to the API after the relist",
        )
        assert gone not in names(cache.pods_matching("c", "app=web"))
        assert changes, "the relist and the watch reported no change to the listeners"
        assert cache.synced
    finally:
        cache.stop(timeout=5)
        client.close()


def first_watch_event(member: KubeMember, path: str) -> dict[str, object]:
    """The first event of a raw watch, as the status it carries: ``{"code": ...}`` of an ERROR event or
    of a refused request, else ``{"code": 200, "type": ...}``."""
    status, body = member.request("GET", path + "&timeoutSeconds=2", timeout=10)
    if status != 200:
        return {"code": status}
    first = (body if isinstance(body, str) else json.dumps(body)).splitlines()[0]
    event = json.loads(first)
    if event.get("type") == "ERROR":
        return {"code": event["object"].get("code")}
    return {"code": 200, "type": event.get("type")}


WATCHING = "watch" in inspect.signature(KubeMemberCluster.__init__).parameters


@pytest.mark.skipif(
    not WATCHING, reason="KubeMemberCluster has no watch-backed observe yet (issue 13 wiring)"
)
def test_observe_from_the_cache_equals_observe_from_direct_reads(
    kube_members: dict[str, KubeMember], kube_namespace: str
) -> None:
    member = kube_members["m2"]  # two nodes: capacity node by node
    member.create_deployment(kube_namespace, "web", replicas=6, cpu="400m")
    wait_for(
        lambda: (s := member.pod_summary(kube_namespace, "web"))["ready"] == 5 and s["unschedulable"] == 1,
        60,
        "five ready, one Unschedulable",
    )
    fhpa = make_fhpa(kube_namespace)
    clients = [KubeClient(member.name, build_api_client(member.kubeconfig())) for _ in range(2)]
    direct = KubeMemberCluster(ClusterIdentity(name=member.name), clients[0], capacity_ttl_seconds=0.0)
    cached = KubeMemberCluster(
        ClusterIdentity(name=member.name), clients[1], capacity_ttl_seconds=0.0, watch=True
    )
    try:
        cached.start()
        direct.apply_hpa(fhpa, render_spec(fhpa, 1, 6))

        def same() -> object:
            a, b = direct.observe(fhpa), cached.observe(fhpa)
            keys = ("current_replicas", "ready_replicas", "pending_replicas", "available_replicas")
            left, right = [getattr(a, k) for k in keys], [getattr(b, k) for k in keys]
            hpa_same = (a.hpa is not None and b.hpa is not None) and (
                (a.hpa.min_replicas, a.hpa.max_replicas, a.hpa.owned)
                == (b.hpa.min_replicas, b.hpa.max_replicas, b.hpa.owned)
            )
            return (left == right and hpa_same) and (left, right)

        left, _ = wait_for(same, 180, "the cached observation equal to the direct one")
        assert left == [6, 5, 1, 5]
        cached.scale_workload(kube_namespace, TARGET, 2)
        wait_for(lambda: cached.observe(fhpa).ready_replicas == 2 and same(), 60, "both see the scale-down")
    finally:
        cached.close()
        direct.close()
