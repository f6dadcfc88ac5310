"""Our own member writes, noted in the cache, are not news: neither the note nor the watch event that
echoes the write tells the listeners (which would plan the FederatedHPA again), while a write by anyone
else still does. Driven by hand through the watches' handlers (no threads, no server)."""

from __future__ import annotations

import json
import threading
from typing import Any

from controller.kube.listwatch import ListWatch
from controller.kube.member_cache import HPA, WORKLOAD, Change, MemberCache
from tests.controller.kube.test_member_cache import StubTransport, hpa
from tests.support.fakekube_builders import deployment

DEPLOY = ("apps", "Deployment")


def synced_cache(changes: list[Change]) -> MemberCache:
    cache = MemberCache("m", StubTransport(0, lambda i: {}), on_change=changes.append)
    for lw in (cache.pods_watch, cache.nodes_watch, cache.hpas_watch):
        lw._list(threading.Event())
    return cache


def served(obj: dict[str, Any], rv: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}


def event(kind: str, obj: dict[str, Any]) -> str:
    return json.dumps({"type": kind, "object": obj})


def keys(changes: list[Change], resource: str) -> list[tuple[str, str]]:
    return [c.key for c in changes if c.resource == resource and not c.synced]


def test_an_hpa_we_wrote_and_its_watch_echo_are_not_reported() -> None:
    changes: list[Change] = []
    cache = synced_cache(changes)
    lw = cache.hpas_watch
    lw._handle_line(event("ADDED", served(hpa("h1"), "2")))
    assert keys(changes, HPA) == [("default", "h1")]  # someone else's HPA: news
    written = served(hpa("h1"), "3")
    written["spec"]["maxReplicas"] = 9
    cache.note_hpa("default", "h1", written, "2")
    assert cache.hpa("default", "h1")["spec"]["maxReplicas"] == 9  # read at once by the next pass
    lw._handle_line(event("MODIFIED", written))  # the echo of our write
    assert keys(changes, HPA) == [("default", "h1")]
    foreign = served(hpa("h1"), "4")
    foreign["spec"]["maxReplicas"] = 4
    lw._handle_line(event("MODIFIED", foreign))  # someone else changed it back: news again
    assert keys(changes, HPA) == [("default", "h1"), ("default", "h1")]


def test_an_hpa_we_deleted_is_not_reported() -> None:
    changes: list[Change] = []
    cache = synced_cache(changes)
    cache.hpas_watch._handle_line(event("ADDED", served(hpa("h1"), "2")))
    cache.note_hpa("default", "h1", None, "2")
    cache.hpas_watch._handle_line(event("DELETED", served(hpa("h1"), "3")))
    assert cache.hpa("default", "h1") is None
    assert keys(changes, HPA) == [("default", "h1")]


def watching_web(changes: list[Change]) -> tuple[MemberCache, ListWatch]:
    """A synced cache watching Deployments, and the Deployment web (2 replicas) at rv 2 in it."""
    cache = synced_cache(changes)
    cache.watch_workloads(DEPLOY, "/apis/apps/v1", "deployments")
    lw = cache._wait_cluster_watch(cache._workloads[DEPLOY])
    lw._list(threading.Event())
    lw._handle_line(event("ADDED", served(deployment("web", replicas=2), "2")))
    return cache, lw


def test_a_scale_we_wrote_and_its_watch_echo_are_not_reported() -> None:
    changes: list[Change] = []
    cache, lw = watching_web(changes)
    assert keys(changes, WORKLOAD) == [("default", "web")]
    cache.note_scale(
        DEPLOY, "default", "web", {"metadata": {"resourceVersion": "3"}, "spec": {"replicas": 5}}, "2"
    )
    assert cache.workload(DEPLOY, "default", "web")["spec"]["replicas"] == 5
    # the echo: the workload as the server holds it after the Scale write (its status unchanged)
    echoed = served(deployment("web", replicas=5), "3")
    echoed["status"] = {"replicas": 2}
    lw._handle_line(event("MODIFIED", echoed))
    assert keys(changes, WORKLOAD) == [("default", "web")]


def test_the_echo_of_a_write_in_flight_is_not_reported_even_before_its_answer() -> None:
    changes: list[Change] = []
    cache = synced_cache(changes)
    lw = cache.hpas_watch
    lw._handle_line(event("ADDED", served(hpa("h1"), "2")))
    written = served(hpa("h1"), "3")
    written["spec"]["maxReplicas"] = 9
    with cache.own_writes.writing(HPA, ("default", "h1"), "2"):
        lw._handle_line(event("MODIFIED", written))  # the echo overtakes the write's answer
        cache.note_hpa("default", "h1", written, "2")
    assert cache.hpa("default", "h1")["spec"]["maxReplicas"] == 9
    assert keys(changes, HPA) == [("default", "h1")]
    after = served(hpa("h1"), "4")
    lw._handle_line(event("MODIFIED", after))  # the next change is someone else's
    assert keys(changes, HPA) == [("default", "h1"), ("default", "h1")]


def h1(rv: str, max_replicas: int = 5, **status: int) -> dict[str, Any]:
    """HPA h1 as served at ``rv``, with ``max_replicas`` and (when given) this status."""
    obj = served(hpa("h1"), rv)
    obj["spec"]["maxReplicas"] = max_replicas
    if status:
        obj["status"] = status
    return obj


def test_a_write_answer_read_after_later_events_does_not_roll_the_store_back() -> None:
    changes: list[Change] = []
    cache = synced_cache(changes)
    lw = cache.hpas_watch
    lw._handle_line(event("ADDED", h1("2")))
    written, status = h1("3", 9), h1("4", 9, desiredReplicas=7, currentReplicas=3)
    with cache.own_writes.writing(HPA, ("default", "h1"), "2"):
        lw._handle_line(event("MODIFIED", written))  # the echo
        lw._handle_line(event("MODIFIED", status))  # the member's HPA controller writes its status
        cache.note_hpa("default", "h1", written, "2")  # our answer, read only now
    got = cache.hpa("default", "h1")
    assert got["metadata"]["resourceVersion"] == "4"  # the watch will not send rv 4 again
    assert got["status"]["desiredReplicas"] == 7


def test_a_create_answer_does_not_replace_an_object_the_watch_moved_on() -> None:
    changes: list[Change] = []
    cache = synced_cache(changes)
    lw = cache.hpas_watch
    made = h1("3")
    lw._handle_line(event("ADDED", made))
    lw._handle_line(event("MODIFIED", h1("4", desiredReplicas=7)))
    cache.note_hpa("default", "h1", made, None)
    assert cache.hpa("default", "h1")["metadata"]["resourceVersion"] == "4"


def test_a_deletion_answer_does_not_remove_an_object_created_again_since() -> None:
    changes: list[Change] = []
    cache = synced_cache(changes)
    lw = cache.hpas_watch
    lw._handle_line(event("ADDED", h1("2")))
    lw._handle_line(event("DELETED", h1("3")))  # our deletion's echo
    lw._handle_line(event("ADDED", h1("4")))  # someone creates it again
    cache.note_hpa("default", "h1", None, "2")
    assert cache.hpa("default", "h1") is not None


def test_a_scale_answer_does_not_roll_the_workload_back() -> None:
    changes: list[Change] = []
    cache, lw = watching_web(changes)
    lw._handle_line(event("MODIFIED", served(deployment("web", replicas=5), "3")))  # our write's echo
    lw._handle_line(event("MODIFIED", served(deployment("web", replicas=6), "4")))  # then another's
    cache.note_scale(
        DEPLOY, "default", "web", {"metadata": {"resourceVersion": "3"}, "spec": {"replicas": 5}}, "2"
    )
    got = cache.workload(DEPLOY, "default", "web")
    assert (got["metadata"]["resourceVersion"], got["spec"]["replicas"]) == ("4", 6)


def test_a_relist_during_a_write_is_news_though_it_starts_from_the_version_written_against() -> None:
    changes: list[Change] = []
    cache = synced_cache(changes)
    lw = cache.hpas_watch
    lw._handle_line(event("ADDED", h1("2")))
    before = len(keys(changes, HPA))
    listed = h1("5", 9, desiredReplicas=7)  # our write (rv 3), then the HPA controller's status (rv 4, 5)
    transport = cache.transport
    assert isinstance(transport, StubTransport)
    transport.count, transport.make = 1, lambda i: listed
    with cache.own_writes.writing(HPA, ("default", "h1"), "2"):
        lw._list(threading.Event())  # the watch expired (410): one MODIFIED from rv 2 to rv 5
    assert len(keys(changes, HPA)) == before + 1
    assert cache.hpa("default", "h1")["metadata"]["resourceVersion"] == "5"
