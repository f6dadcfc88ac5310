"""FakeKube through the official client over HTTP: the semantics member and control-plane tests rely on."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client, watch
from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment, pod
from tests.support.fakekube_patches import json_patch, merge_patch
from tests.support.fakekube_selectors import label_selector_matches


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    fk = FakeKube(watch_max_seconds=5, bookmark_seconds=0.2, stall_seconds=5)
    fk.start()
    yield fk
    fk.stop()


@pytest.fixture
def api(fake: FakeKube) -> client.ApiClient:
    return kube_config.new_client_from_config_dict(fake.kubeconfig())


def core_api(api: client.ApiClient) -> Any:
    return client.CoreV1Api(api)


def raw(api: client.ApiClient, method: str, path: str, body: Any = None, ctype: str | None = None) -> Any:
    headers = {"Content-Type": ctype} if ctype else {}
    resp = api.call_api(*api.param_serialize(method, path, header_params=headers, body=body))
    data = resp.read()
    if not 200 <= resp.status <= 299:
        raise ApiException(status=resp.status, reason=resp.reason, body=data.decode())
    return json.loads(data) if data else None


def test_discovery_lists_groups_resources_and_subresources(api: client.ApiClient) -> None:
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name: [v.version for v in g.versions] for g in client.ApisApi(api).get_api_versions().groups}
    assert groups["apps"] == ["v1"] and groups["autoscaling"] == ["v2"]
    names = {r.name for r in client.AppsV1Api(api).get_api_resources().resources}
    assert {"deployments", "deployments/scale", "statefulsets/status"} <= names
    assert raw(api, "GET", "/version")["gitVersion"].startswith("v1.")


def test_v2beta2_is_served_from_the_same_storage_only_when_configured() -> None:
    with FakeKube(hpa_versions=("v2", "v2beta2")) as fk:
        api = kube_config.new_client_from_config_dict(fk.kubeconfig())
        hpa = {
            "metadata": {"name": "h"},
            "spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "X", "name": "x"}},
        }
        raw(api, "POST", "/apis/autoscaling/v2beta2/namespaces/default/horizontalpodautoscalers", hpa)
        got = raw(api, "GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/h")
        assert got["apiVersion"] == "autoscaling/v2"
    with FakeKube() as fk:
        api = kube_config.new_client_from_config_dict(fk.kubeconfig())
        with pytest.raises(ApiException) as err:
            raw(api, "GET", "/apis/autoscaling/v2beta2/namespaces/default/horizontalpodautoscalers")
        assert err.value.status == 404


def test_create_answers_201_and_a_duplicate_409(api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    assert created is not None and created.metadata.uid and created.metadata.resource_version
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert err.value.status == 409 and "AlreadyExists" in str(err.value.body)


def test_create_in_a_missing_namespace_is_404(api: client.ApiClient) -> None:
    with pytest.raises(ApiException) as err:
        core_api(api).create_namespaced_config_map("nowhere", {"metadata": {"name": "c"}})
    assert err.value.status == 404


def test_a_stale_resource_version_is_a_conflict(api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    first = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    body = {"metadata": {"name": "c", "resourceVersion": first.metadata.resource_version}, "data": {"a": "2"}}
    second = core.replace_namespaced_config_map("c", "default", body)
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("c", "default", body)  # the first resourceVersion again
    assert err.value.status == 409
    stale_patch = {"metadata": {"resourceVersion": first.metadata.resource_version}, "data": {"a": "3"}}
    with pytest.raises(ApiException) as err:
        raw(
            api,
            "PATCH",
            "/api/v1/namespaces/default/configmaps/c",
            stale_patch,
            "application/merge-patch+json",
        )
    assert err.value.status == 409


def test_status_is_isolated_and_generation_follows_spec(fake: FakeKube, api: client.ApiClient) -> None:
    fake.store.put("deployments", deployment("web", replicas=2))
    path = "/apis/apps/v1/namespaces/default/deployments/web"
    merge = "application/merge-patch+json"
    before = raw(api, "GET", path)
    after = raw(api, "PATCH", path, {"status": {"replicas": 99}, "metadata": {"labels": {"x": "y"}}}, merge)
    assert after["status"] == before["status"] and after["metadata"]["generation"] == 1
    after = raw(
        api, "PATCH", path + "/status", {"status": {"readyReplicas": 2}, "spec": {"replicas": 7}}, merge
    )
    assert after["spec"]["replicas"] == 2 and after["status"]["readyReplicas"] == 2
    after = raw(api, "PATCH", path, {"spec": {"replicas": 3}}, merge)
    assert after["metadata"]["generation"] == 2


def test_label_and_field_selectors_filter_lists(fake: FakeKube, api: client.ApiClient) -> None:
    fake.store.put("pods", pod("a", labels={"app": "web", "tier": "1"}, node_name="n1"))
    fake.store.put("pods", pod("b", labels={"app": "web"}, unschedulable=True))
    fake.store.put("pods", pod("c", labels={"app": "db"}, node_name="n1"))
    core: Any = client.CoreV1Api(api)
    names = lambda **kw: sorted(p.metadata.name for p in core.list_namespaced_pod("default", **kw).items)  # noqa: E731
    assert names(label_selector="app=web") == ["a", "b"]
    assert names(label_selector="app in (web,db),!tier") == ["b", "c"]
    assert names(field_selector="spec.nodeName=n1") == ["a", "c"]
    assert names(field_selector="status.phase!=Pending") == ["a", "c"]


def test_label_selector_syntax() -> None:
    labels = {"a": "1", "b": "2"}
    assert label_selector_matches("a=1,b==2", labels)
    assert not label_selector_matches("a!=1", labels)
    assert label_selector_matches("c!=1", labels)
    assert label_selector_matches("a notin (2,3), b", labels)
    assert not label_selector_matches("!b", labels)
    assert not label_selector_matches("c", labels)


def test_scale_subresource_reads_and_writes_replicas(fake: FakeKube, api: client.ApiClient) -> None:
    fake.store.put("deployments", deployment("web", replicas=2))
    apps: Any = client.AppsV1Api(api)
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 2 and scale.status.selector == "app=web"
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    assert fake.store.get("deployments", "default", "web")["spec"]["replicas"] == 5
    body = {"metadata": {"name": "web", "resourceVersion": "1"}, "spec": {"replicas": 6}}
    with pytest.raises(ApiException) as err:
        apps.replace_namespaced_deployment_scale("web", "default", body)
    assert err.value.status == 409


def test_custom_scalable_kind(fake: FakeKube, api: client.ApiClient) -> None:
    fake.add_scalable_kind("example.com", "v1", "widgets", "Widget")
    fake.store.put("widgets", {"metadata": {"name": "w", "namespace": "default"}, "spec": {"replicas": 1}})
    path = "/apis/example.com/v1/namespaces/default/widgets/w/scale"
    raw(api, "PATCH", path, {"spec": {"replicas": 4}}, "application/merge-patch+json")
    assert raw(api, "GET", path)["spec"]["replicas"] == 4


def test_json_patch_and_apply(fake: FakeKube, api: client.ApiClient) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    ops = [{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/a"}]
    raw(api, "POST", path, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    out = raw(api, "PATCH", path + "/c", ops, "application/json-patch+json")
    assert out["data"] == {"b": "2"}
    with pytest.raises(ApiException) as err:
        raw(
            api,
            "PATCH",
            path + "/c",
            [{"op": "test", "path": "/data/b", "value": "9"}],
            "application/json-patch+json",
        )
    assert err.value.status == 422
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"x": "1"}}
    with pytest.raises(ApiException) as err:
        raw(api, "PATCH", path + "/d", applied, "application/apply-patch+yaml")
    assert err.value.status == 400  # fieldManager is required
    out = raw(api, "PATCH", path + "/d?fieldManager=me", applied, "application/apply-patch+yaml")
    assert out["metadata"]["managedFields"][0]["manager"] == "me"
    assert fake.store.get("configmaps", "default", "d")["data"] == {"x": "1"}


def test_patch_helpers() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    doc = {"l": [1, 2]}
    assert json_patch(
        doc, [{"op": "add", "path": "/l/-", "value": 3}, {"op": "move", "from": "/l/0", "path": "/m"}]
    ) == {
        "l": [2, 3],
        "m": 1,
    }
    assert doc == {"l": [1, 2]}


def test_delete_waits_for_finalizers(fake: FakeKube, api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "c", "finalizers": ["x/y"]}})
    core.delete_namespaced_config_map("c", "default")
    held = fake.store.get("configmaps", "default", "c")
    assert held["metadata"]["deletionTimestamp"]
    raw(api, "PATCH", "/api/v1/namespaces/default/configmaps/c", {"metadata": {"finalizers": None}},
        "application/merge-patch+json")  # fmt: skip
    assert fake.store.find("configmaps", "default", "c") is None


def test_watch_from_a_list_then_410_after_compaction(fake: FakeKube, api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    listed = core.list_namespaced_config_map("default")
    rv = listed.metadata.resource_version

    def later() -> None:
        time.sleep(0.2)
        fake.store.create("configmaps", {"metadata": {"name": "new", "namespace": "default"}})

    threading.Thread(target=later, daemon=True).start()
    w = watch.Watch()
    seen = []
    for event in w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=3):
        seen.append((event["type"], event["object"].metadata.name))
        w.stop()
    assert seen == [("ADDED", "new")]
    fake.store.compact()
    resp = api.call_api(
        *api.param_serialize("GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}")
    )
    first = json.loads(resp.read().splitlines()[0])
    assert first["type"] == "ERROR" and first["object"]["code"] == 410


def test_watch_sends_bookmarks_when_asked(api: client.ApiClient) -> None:
    query = "watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=1"
    resp = api.call_api(*api.param_serialize("GET", f"/api/v1/namespaces/default/pods?{query}"))
    types = {json.loads(line)["type"] for line in resp.read().splitlines()}
    assert types == {"BOOKMARK"}


def test_injected_status_faults_hit_the_next_matching_requests(fake: FakeKube, api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    fake.faults.add("GET", r"/configmaps$", status=500, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            core.list_namespaced_config_map("default")
        assert err.value.status == 500
    assert core.list_namespaced_config_map("default").items == []
    assert fake.faults.pending == []


def test_stall_and_drop_and_vanish(fake: FakeKube, api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)
    api.configuration.retries = False
    api.rest_client = client.rest.RESTClientObject(api.configuration)
    fake.faults.add("GET", "/configmaps", stall=3)
    t0 = time.monotonic()
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespaced_config_map("default", _request_timeout=0.3)
    assert time.monotonic() - t0 < 2
    fake.faults.add("GET", "/configmaps", drop=True)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespaced_config_map("default", _request_timeout=2)
    fake.vanish()
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespaced_config_map("default", _request_timeout=2)
    fake.reappear()
    assert core.list_namespaced_config_map("default", _request_timeout=2).items == []


def test_readyz_follows_the_ready_flag(fake: FakeKube, api: client.ApiClient) -> None:
    resp = api.call_api(*api.param_serialize("GET", "/readyz"))
    assert resp.status == 200
    fake.ready = False
    assert api.call_api(*api.param_serialize("GET", "/readyz")).status == 500


def test_requests_are_recorded_without_credentials(fake: FakeKube, api: client.ApiClient) -> None:
    client.CoreV1Api(api).list_namespaced_pod("default")
    rec = fake.requests_matching("GET", "/pods")[-1]
    assert rec.headers["authorization"] == "<present>"
    assert "fake-token" not in json.dumps(rec.headers)


def test_a_selector_watch_sees_objects_enter_and_leave_the_selection(fake: FakeKube) -> None:
    cm = {"metadata": {"name": "c", "namespace": "default", "labels": {"pick": "yes"}}}
    rv = fake.store.create("configmaps", cm)["metadata"]["resourceVersion"]
    for value in ("no", "yes"):
        obj = fake.store.get("configmaps", "default", "c")
        obj["metadata"]["labels"]["pick"] = value
        fake.store.update("configmaps", obj)
    fake.store.put("configmaps", {"metadata": {"name": "other", "namespace": "default"}})
    api = kube_config.new_client_from_config_dict(fake.kubeconfig())
    query = f"watch=true&labelSelector=pick%3Dyes&timeoutSeconds=1&resourceVersion={rv}"
    resp = api.call_api(*api.param_serialize("GET", f"/api/v1/namespaces/default/configmaps?{query}"))
    events = [(e["type"], e["object"]["metadata"]["name"]) for e in map(json.loads, resp.read().splitlines())]
    assert events == [("DELETED", "c"), ("ADDED", "c")]


def test_concurrent_writers_with_one_resource_version_exactly_one_wins(fake: FakeKube) -> None:
    created = fake.store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}, "data": {}})
    rv = created["metadata"]["resourceVersion"]
    results: list[int] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        api = kube_config.new_client_from_config_dict(fake.kubeconfig())
        body = {"metadata": {"name": "c", "resourceVersion": rv}, "data": {"writer": str(i)}}
        try:
            raw(api, "PUT", "/api/v1/namespaces/default/configmaps/c", body)
            status = 200
        except ApiException as exc:
            status = exc.status
        with lock:
            results.append(status)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200] + [409] * 7


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(min_size=1, max_size=3), json_values, max_size=4)


@settings(max_examples=200)
@given(target=json_objects, patch=json_objects)
def test_merge_patch_is_idempotent(target: dict[str, Any], patch: dict[str, Any]) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once


@settings(max_examples=200)
@given(
    doc=json_objects,
    key=st.text(min_size=1, max_size=3).filter(lambda k: "/" not in k and "~" not in k),
    value=json_values,
)
def test_json_patch_add_then_remove_restores_a_new_key(doc: dict[str, Any], key: str, value: Any) -> None:
    doc.pop(key, None)
    added = json_patch(doc, [{"op": "add", "path": f"/{key}", "value": value}])
    assert added[key] == value
    assert json_patch(added, [{"op": "remove", "path": f"/{key}"}]) == doc
