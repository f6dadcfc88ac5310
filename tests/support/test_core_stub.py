"""The core stub's list/watch contract, in-process (no apiserver build needed).

client-go inside the apiserver depends on these details: JSON content type, WatchList's initial
ADDED events closed by an annotated BOOKMARK, replays from a resourceVersion, and changes to the
webhook configurations streamed as ADDED/MODIFIED/DELETED.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.core_stub import StubServer, serve

VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with serve() as server:
        yield server


def call(stub: StubServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", stub.server_address[1], timeout=10)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body).encode())
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def open_watch(stub: StubServer, path: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", stub.server_address[1], timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "application/json"
    return conn, resp


def next_event(resp: http.client.HTTPResponse) -> dict[str, Any]:
    line = resp.readline()
    assert line, "watch stream ended"
    return dict(json.loads(line))


def test_default_namespace_is_listed_with_a_resource_version(stub: StubServer) -> None:
    status, body = call(stub, "GET", "/api/v1/namespaces")
    assert status == 200
    assert body["kind"] == "NamespaceList"
    assert [ns["metadata"]["name"] for ns in body["items"]] == ["default"]
    assert int(body["metadata"]["resourceVersion"]) >= 1
    assert body["items"][0]["status"] == {"phase": "Active"}


def test_watchlist_sends_added_then_initial_events_end_bookmark(stub: StubServer) -> None:
    stub.store.replace_all("validatingwebhookconfigurations", [{"metadata": {"name": "a"}, "webhooks": []}])
    conn, resp = open_watch(stub, f"{VWC}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true")
    try:
        added = next_event(resp)
        assert added["type"] == "ADDED"
        assert added["object"]["metadata"]["name"] == "a"
        bookmark = next_event(resp)
        assert bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["kind"] == "ValidatingWebhookConfiguration"
        assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    finally:
        conn.close()


def test_replace_streams_added_modified_deleted(stub: StubServer) -> None:
    _, listed = call(stub, "GET", VWC)
    conn, resp = open_watch(stub, f"{VWC}?watch=true&resourceVersion={listed['metadata']['resourceVersion']}")
    try:
        answers: list[Any] = []

        def replace(items: list[dict[str, Any]]) -> None:
            answers.append(
                call(
                    stub, "PUT", "/_stub/collections/validatingwebhookconfigurations?wait=5", {"items": items}
                )
            )

        first = {"metadata": {"name": "w"}, "webhooks": [{"name": "one"}]}
        for items in ([first], [first], [{"metadata": {"name": "w"}, "webhooks": [{"name": "two"}]}], []):
            worker = threading.Thread(target=replace, args=(items,))
            worker.start()
            worker.join()
        events = [next_event(resp) for _ in range(3)]
        assert [(e["type"], e["object"]["webhooks"][0]["name"]) for e in events] == [
            ("ADDED", "one"),
            ("MODIFIED", "two"),
            ("DELETED", "two"),
        ]
        assert all(status == 200 and body["watchersUpdated"] == 1 for status, body in answers)
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert rvs == sorted(rvs)
    finally:
        conn.close()


def test_watch_replays_from_resource_version_and_honours_timeout(stub: StubServer) -> None:
    stub.store.put("namespaces", {"metadata": {"name": "team-a"}})
    conn, resp = open_watch(stub, "/api/v1/namespaces?watch=true&resourceVersion=1&timeoutSeconds=1")
    try:
        event = next_event(resp)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "team-a")
        assert resp.readline() == b""  # stream closed at timeoutSeconds
    finally:
        conn.close()


def test_namespaces_and_services_crud(stub: StubServer) -> None:
    status, created = call(stub, "POST", "/api/v1/namespaces", {"metadata": {"name": "x"}})
    assert status == 201
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "x"}
    assert call(stub, "POST", "/api/v1/namespaces", {"metadata": {"name": "x"}})[0] == 409
    status, svc = call(stub, "POST", "/api/v1/namespaces/x/services", {"metadata": {"name": "hook"}})
    assert status == 201
    assert svc["metadata"]["namespace"] == "x"
    assert call(stub, "GET", "/api/v1/namespaces/x/services/hook")[0] == 200
    assert len(call(stub, "GET", "/api/v1/services")[1]["items"]) == 1
    assert call(stub, "DELETE", "/api/v1/namespaces/x/services/hook")[0] == 200
    assert call(stub, "GET", "/api/v1/namespaces/x/services/hook")[0] == 404
    assert call(stub, "GET", "/api/v1/pods")[0] == 404


def test_idle_watches_do_not_wake_each_other(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Open watches with nothing to send must sleep: one waking the others in a loop burns a core.

    With no writes, a watch looks at its collection once when it starts and then only when its
    one-second wait runs out; far more looks mean the watches keep waking each other."""
    stub.store.put("services", {"metadata": {"name": "hook", "namespace": "default"}})
    looks = 0
    real_events_after = stub.store.events_after

    def counting(name: str, rv: int, namespace: str | None) -> list[tuple[int, str, Any]]:
        nonlocal looks
        looks += 1
        return real_events_after(name, rv, namespace)

    monkeypatch.setattr(stub.store, "events_after", counting)
    watches = [
        open_watch(stub, "/api/v1/namespaces?watch=true&resourceVersion=0"),
        open_watch(stub, "/api/v1/services?watch=true&resourceVersion=0"),
        open_watch(stub, VWC + "?watch=true&resourceVersion=0"),
    ]
    try:
        stub.store.wait_delivered("services", stub.store.rv, timeout=10)
        before = looks
        threading.Event().wait(0.5)
        assert looks - before <= 2 * len(watches)
    finally:
        for conn, _ in watches:
            conn.close()
