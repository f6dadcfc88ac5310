"""The member cache's indexes and scopes (issue 13): what observe() reads must equal a scan of the store.

- the requests bound per node (the capacity estimate's "used"), kept as pods come and go, equal
  ``capacity.used_by_node`` over every pod, whatever the order of adds, updates and deletes (property);
- the label index answers ``pods_matching`` as a scan would (property);
- workloads are watched as referenced, trimmed, and found from a pod's labels (``workloads_selecting``);
- a member whose RBAC refuses the cluster-wide lists is watched per namespace, capacity unknown;
- a member that goes away is not answered from its old store (the watch is failing).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import ClusterUnreachableError
from controller.kube.member_cache import (
    POD,
    Change,
    MemberCache,
    trim_pod,
)
from controller.planning import capacity
from controller.planning.selectors import parse_selector, selector_matches
from tests.controller.kube.test_member_cache import FAST, WAIT, StubTransport, client_for, wait_for
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, node, pod

DEPLOY = ("apps", "Deployment")


def idle_cache() -> MemberCache:
    """A cache fed by hand through its handlers (no threads)."""
    return MemberCache("m", StubTransport(0, lambda i: {}))


def nonzero(used: dict[str, dict[str, Decimal]]) -> dict[str, dict[str, Decimal]]:
    out = {}
    for node_name, resources in used.items():
        kept = {r: q for r, q in resources.items() if q != 0}
        if kept:
            out[node_name] = kept
    return out


pod_events = st.lists(
    st.tuples(
        st.integers(0, 5),  # which pod
        st.sampled_from(["put", "delete"]),
        st.sampled_from([None, "n1", "n2"]),  # bound node
        st.sampled_from(["Running", "Succeeded", "Pending"]),
        st.sampled_from(["100m", "250m", "1"]),
        st.sampled_from(["web", "api"]),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(pod_events)
def test_the_bound_requests_per_node_equal_a_sum_over_every_pod(events: list[Any]) -> None:
    cache = idle_cache()
    store: dict[tuple[str, str], dict[str, Any]] = {}
    for i, action, node_name, phase, cpu, app in events:
        key = ("default", f"p{i}")
        old = store.get(key)
        if action == "delete":
            if old is None:
                continue
            del store[key]
            cache._pod_changed("DELETED", key, old, None)
            continue
        raw = pod(f"p{i}", labels={"app": app}, node_name=node_name, cpu=cpu)
        raw["status"]["phase"] = phase
        new = trim_pod(raw)
        store[key] = new
        cache._pod_changed("MODIFIED" if old else "ADDED", key, old, new)
    assert nonzero(cache._used) == nonzero(capacity.used_by_node(store.values()))
    for app in ("web", "api"):
        with_label = cache._pods_by_label.get(("default", "app", app), set())
        assert with_label == {k[1] for k, p in store.items() if p["metadata"]["labels"]["app"] == app}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries({"app": st.sampled_from("ab"), "tier": st.sampled_from("xy")}), max_size=12
    ),
    st.sampled_from(["app=a", "app=a,tier=y", "app in (a,b),tier!=x", "tier", "!tier", "app notin (a)"]),
)
def test_the_label_index_answers_as_a_scan(labels: list[dict[str, str]], selector: str) -> None:
    cache = idle_cache()
    cache._pods.cluster = cache._pods._watch("/api/v1/pods", "m/pods")
    cache._pods.cluster.synced.set()
    for family in (cache._nodes, cache._hpas):  # synced and empty
        family.cluster = family._watch("/x", family.name)
        family.cluster.synced.set()
    trimmed = []
    for i, lab in enumerate(labels):
        p = trim_pod(pod(f"p{i}", labels=lab, node_name="n1"))
        cache._pods.cluster._store[("default", f"p{i}")] = p
        cache._pod_changed("ADDED", ("default", f"p{i}"), None, p)
        trimmed.append(p)
    reqs = parse_selector(selector)
    assert reqs is not None
    expected = sorted(
        p["metadata"]["name"] for p in trimmed if selector_matches(reqs, p["metadata"]["labels"])
    )
    assert sorted(p["metadata"]["name"] for p in cache.pods_matching("default", selector)) == expected


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube(stall_seconds=5, bookmark_seconds=0.2) as fk:
        fk.store.put("nodes", node("n1", cpu="4"))
        fk.store.put("deployments", deployment("web", replicas=3))
        fk.store.put("pods", pod("web-1", labels={"app": "web"}, node_name="n1", cpu="500m"))
        yield fk


def started(fake: FakeKube, changes: list[Change] | None = None) -> tuple[MemberCache, Any]:
    client = client_for(fake)
    cache = MemberCache.for_client(
        client,
        backoff=FAST,
        min_watch_interval=0.05,
        denied_retry_seconds=0.2,
        on_change=(changes.append if changes is not None else None),
    )
    cache.start()
    return cache, client


def test_a_referenced_workload_kind_is_watched_trimmed_and_found_from_its_pods(fake: FakeKube) -> None:
    changes: list[Change] = []
    cache, client = started(fake, changes)
    try:
        assert cache.wait_synced(WAIT)
        cache.watch_workloads(DEPLOY, "/apis/apps/v1", "deployments")
        assert cache.ready_for("default", DEPLOY, timeout=WAIT)
        web = cache.workload(DEPLOY, "default", "web")
        assert web is not None and web["spec"]["replicas"] == 3 and web["metadata"]["resourceVersion"]
        assert web["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
        assert "status" not in web
        assert cache.workload(DEPLOY, "default", "absent") is None
        assert cache.workloads_selecting("default", {"app": "web", "x": "y"}) == [(DEPLOY, "web")]
        assert cache.workloads_selecting("default", {"app": "api"}) == []
        # 4 CPUs, 500m bound: seven more pods of 100m... bounded by the node's pod slots in the fake
        template = web["spec"]["template"]["spec"]
        fit = cache.fit(template)
        nodes = [capacity.node_info(n) for n in cache.nodes()]
        assert fit == capacity.fit_on_nodes(nodes, capacity.used_by_node(cache.all_pods()), template)
        fake.store.put("pods", pod("web-2", labels={"app": "web"}, node_name="n1", cpu="1"))
        wait_for(lambda: len(cache.pods_matching("default", "app=web")) == 2, "the second pod")
        scaled = fake.store.get("deployments", "default", "web")
        scaled["spec"]["replicas"] = 5
        fake.store.put("deployments", scaled)
        wait_for(lambda: (cache.workload(DEPLOY, "default", "web") or {})["spec"]["replicas"] == 5, "scale")
        assert any(c.kind == DEPLOY and c.key == ("default", "web") for c in changes)
        assert any(c.resource == POD and c.key == ("default", "web-2") for c in changes)
    finally:
        cache.stop()
        client.close()


def test_the_memoised_fit_counts_again_the_nodes_whose_pods_changed_and_only_those(
    fake: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fit is memoised node by node: after pods come to n1 (one of the template's size, one three
    times it, another team's) the fit equals a count over the store, and only n1 is counted again.
    Before, a memo was reused whole for two seconds across pod events: each pod bound since counted
    twice beside a fresh count of running pods (a real node of four pods read as room for six)."""
    fake.store.put("nodes", node("n2", cpu="2"))
    client = client_for(fake)
    cache = MemberCache.for_client(client, backoff=FAST, min_watch_interval=0.05)
    cache.start()
    counted: list[int] = []
    real_fit = capacity.replicas_that_fit

    def counting(free: Any, request: Any) -> int:
        counted.append(1)
        return real_fit(free, request)

    monkeypatch.setattr(capacity, "replicas_that_fit", counting)
    try:
        assert cache.wait_synced(WAIT)
        cache.watch_workloads(DEPLOY, "/apis/apps/v1", "deployments")
        assert cache.ready_for("default", DEPLOY, timeout=WAIT)
        template = (cache.workload(DEPLOY, "default", "web") or {})["spec"]["template"]["spec"]

        def recount() -> int:
            nodes = [capacity.node_info(n) for n in cache.nodes()]
            return capacity.fit_on_nodes(nodes, capacity.used_by_node(cache.all_pods()), template)

        before = cache.fit(template)
        assert len(counted) == 2  # both nodes, once
        assert before == recount()
        fake.store.put("pods", pod("web-2", labels={"app": "web"}, node_name="n1"))  # 100m, the template's
        fake.store.put("pods", pod("big", labels={"app": "other"}, node_name="n1", cpu="300m"))
        wait_for(lambda: len(cache.all_pods()) == 3, "the two new pods")
        counted.clear()
        assert cache.fit(template) == before - 4
        assert len(counted) == 1  # n1 alone: n2's pods did not change
        counted.clear()
        assert cache.fit(template) == before - 4 and counted == []  # nothing changed: the memo answers
        assert cache.fit(template) == recount()
    finally:
        cache.stop()
        client.close()


def test_refused_cluster_wide_lists_fall_back_to_the_namespace_and_capacity_is_unknown(
    fake: FakeKube,
) -> None:
    fake.faults.add("GET", r"^/api/v1/(pods|nodes)$", status=403, times=-1)
    fake.faults.add("GET", r"^/apis/autoscaling/v2/horizontalpodautoscalers$", status=403, times=-1)
    cache, client = started(fake)
    try:
        assert cache.wait_synced(WAIT)  # refused lists count as answered
        with pytest.raises(ClusterUnreachableError):
            cache.all_pods()
        assert cache.ready_for("default", timeout=WAIT)  # starts the namespace's own watches
        assert [p["metadata"]["name"] for p in cache.pods_matching("default", "app=web")] == ["web-1"]
        assert cache.hpas("default") == []
        assert not cache.capacity_known() and cache.fit({"containers": []}) is None
        assert fake.requests_matching("GET", r"^/api/v1/namespaces/default/pods$")
    finally:
        cache.stop()
        client.close()


def test_a_member_that_goes_away_is_not_answered_from_its_old_store(fake: FakeKube) -> None:
    cache, client = started(fake)
    try:
        assert cache.wait_synced(WAIT)
        assert cache.pods_matching("default", "app=web")
        fake.vanish()  # every request and open watch dropped
        wait_for(lambda: any(lw.failing for lw in cache.watches), "a failing watch")
        with pytest.raises(ClusterUnreachableError, match="failing"):
            cache.pods_matching("default", "app=web")
        fake.reappear()
        wait_for(lambda: not any(lw.failing for lw in cache.watches), "the watches back")
        assert cache.pods_matching("default", "app=web")
    finally:
        cache.stop()
        client.close()


def test_stop_is_prompt_with_per_namespace_watches(fake: FakeKube) -> None:
    fake.faults.add("GET", r"^/api/v1/pods$", status=403, times=-1)
    cache, client = started(fake)
    assert cache.wait_synced(WAIT) and cache.ready_for("default", timeout=WAIT)
    done = threading.Event()
    threading.Thread(target=lambda: (cache.stop(), done.set()), daemon=True).start()
    assert done.wait(WAIT)
    client.close()
