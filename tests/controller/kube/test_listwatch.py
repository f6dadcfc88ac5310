"""The list-then-watch loop: resourceVersion handling, bookmarks, 410 relists, backoff, stop, trims."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from kubernetes import config as kube_config

from controller.backoff import ExponentialBackoff
from controller.errors import GoneError, PortError
from controller.kube.control_plane import KubeControlPlane
from controller.kube.listwatch import DEFAULT_WATCH_TIMEOUT_SECONDS, OWN, SYNC, ListWatch, ObjectKey
from tests.support.fakekube import FakeKube
from tests.support.fakekube_store import Resource

GROUP = "autoscaling.karmada.io"
Event = tuple[str, ObjectKey, Any]


def obj(name: str, rv: str, ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": rv}}


def page(items: list[dict[str, Any]], rv: str) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}, "items": items}


class Stream:
    """A watch stream of JSON lines."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events
        self.closed = False

    def lines(self) -> Iterator[str]:
        for event in self.events:
            yield json.dumps(event)

    def close(self) -> None:
        self.closed = True

    def release(self) -> None:
        pass


class FakeServer:
    """A scripted transport: each request takes the next scripted answer and records its query."""

    def __init__(self, script: list[Any], stop: threading.Event) -> None:
        self.script = script
        self.calls: list[dict[str, Any]] = []
        self.stop = stop

    def _next(self, query: Mapping[str, Any]) -> Any:
        self.calls.append(dict(query))
        if not self.script:
            self.stop.set()
            return Stream([])
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def list_page(self, path: str, query: Mapping[str, Any]) -> Mapping[str, Any]:
        answer = self._next(query)
        assert isinstance(answer, dict), f"a list request got {answer!r}"
        return answer

    def open_watch(self, path: str, query: Mapping[str, Any], read_timeout: float) -> Stream:
        answer = self._next(query)
        assert isinstance(answer, Stream), f"a watch request got {answer!r}"
        return answer


class RecordingBackoff(ExponentialBackoff):
    """Records the failure count of every backoff asked for; waits nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []

    def delay(self, failures: int) -> float:
        self.asked.append(failures)
        return 0.0


def keep(item: Mapping[str, Any]) -> dict[str, Any]:
    return dict(item)


def loop(server: FakeServer, events: list[Event], **kwargs: Any) -> ListWatch:
    def handler(kind: str, key: ObjectKey, old: Any, new: Any) -> None:
        events.append((kind, key, new if new is not None else old))

    kwargs.setdefault("min_watch_interval", 0.0)
    return ListWatch(server, "/things", kwargs.pop("trim", keep), name="test", handler=handler, **kwargs)


def run(script: list[Any], **kwargs: Any) -> tuple[FakeServer, list[Event], ListWatch]:
    stop = threading.Event()
    server = FakeServer(script, stop)
    events: list[Event] = []
    watch = loop(server, events, **kwargs)
    thread = threading.Thread(target=watch.run, args=(stop,))
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    return server, events, watch


def test_lists_then_watches_from_the_lists_version_with_bookmarks() -> None:
    server, events, watch = run(
        [
            page([obj("a", "5")], "10"),
            Stream(
                [
                    {"type": "ADDED", "object": obj("b", "11")},
                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
                    {"type": "MODIFIED", "object": obj("a", "16")},
                    {"type": "DELETED", "object": obj("b", "17")},
                ]
            ),
            Stream([]),  # the server's timeoutSeconds ended the stream: watch again, no list
        ]
    )
    assert [(kind, key) for kind, key, _ in events] == [
        (SYNC, ("ns", "a")),  # the first list's objects: not news, and said so
        ("ADDED", ("ns", "b")),
        ("MODIFIED", ("ns", "a")),
        ("DELETED", ("ns", "b")),
    ]
    assert "watch" not in server.calls[0]
    assert server.calls[1]["resourceVersion"] == "10"
    assert server.calls[1]["allowWatchBookmarks"] is True
    assert server.calls[1]["watch"] is True
    assert server.calls[2]["resourceVersion"] == "17"  # last event, after the bookmark's 15
    assert watch.keys() == [("ns", "a")]
    assert watch.relists == 0


def test_a_bookmark_moves_the_version_on() -> None:
    server, _, _ = run(
        [
            page([], "3"),
            Stream([{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "42"}}}]),
            Stream([]),
        ]
    )
    assert server.calls[2]["resourceVersion"] == "42"


def test_410_error_event_relists_and_reports_what_was_deleted_meanwhile() -> None:
    relists: list[int] = []
    server, events, watch = run(
        [
            page([obj("a", "1"), obj("b", "2")], "2"),
            Stream([{"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}]),
            page([obj("a", "1"), obj("c", "30")], "31"),
            Stream([]),
        ],
        on_relist=lambda: relists.append(1),
    )
    assert [(kind, key[1]) for kind, key, _ in events] == [
        (SYNC, "a"),
        (SYNC, "b"),
        ("ADDED", "c"),
        ("DELETED", "b"),
    ]
    assert "watch" not in server.calls[2]
    assert server.calls[3]["resourceVersion"] == "31"
    assert watch.relists == 1 and relists == [1]


def test_only_watch_events_are_asked_whether_they_echo_our_writes() -> None:
    asked: list[tuple[ObjectKey, Any]] = []

    def is_own(key: ObjectKey, old: Any) -> bool:
        asked.append((key, old))
        return True

    _, events, _ = run(
        [
            page([obj("a", "1")], "1"),
            Stream([{"type": "MODIFIED", "object": obj("a", "2")}]),
            GoneError("gone"),
            page([obj("a", "5"), obj("b", "4")], "5"),  # a's difference may fold others' writes in
            Stream([]),
        ],
        is_own=is_own,
    )
    assert [(kind, key[1]) for kind, key, _ in events] == [
        (SYNC, "a"),
        (OWN, "a"),  # the watch event: our echo
        ("MODIFIED", "a"),  # the relist's differences: never
        ("ADDED", "b"),
    ]
    assert asked == [(("ns", "a"), obj("a", "1"))]


def test_410_on_the_watch_request_relists() -> None:
    server, _, watch = run([page([], "2"), GoneError("gone"), page([obj("a", "9")], "9"), Stream([])])
    assert "watch" not in server.calls[2]
    assert watch.keys() == [("ns", "a")]


def test_a_list_is_read_in_pages_and_its_version_is_the_last_pages() -> None:
    page_one = {"metadata": {"resourceVersion": "7", "continue": "next"}, "items": [obj("a", "1")]}
    server, events, watch = run([page_one, page([obj("b", "2")], "8"), Stream([])], page_size=1)
    assert server.calls[0]["limit"] == 1 and server.calls[1]["continue"] == "next"
    assert server.calls[2]["resourceVersion"] == "8"
    assert sorted(watch.keys()) == [("ns", "a"), ("ns", "b")]
    assert [kind for kind, _, _ in events] == [SYNC, SYNC]


def test_errors_back_off_and_resume_from_the_last_version_without_listing() -> None:
    backoff = RecordingBackoff()
    server, events, _ = run(
        [
            page([obj("a", "1")], "4"),
            PortError("HTTP 500"),
            Stream([{"type": "ERROR", "object": {"code": 500, "reason": "InternalError"}}]),
            ConnectionResetError("peer reset"),
            PortError("HTTP 503"),
            Stream([{"type": "MODIFIED", "object": obj("a", "8")}]),
            ConnectionResetError("peer reset again"),  # after a watch that carried lines: starts over
            Stream([]),
        ],
        backoff=backoff,
    )
    assert [c.get("resourceVersion") for c in server.calls[1:6]] == ["4", "4", "4", "4", "4"]
    assert [bool(c.get("watch")) for c in server.calls].count(False) == 1  # one list, never again
    assert events[-1][0] == "MODIFIED"
    assert backoff.asked == [1, 2, 3, 4, 1]  # type: ignore[attr-defined]


def test_an_initial_list_failure_is_retried() -> None:
    _, events, watch = run(
        [PortError("HTTP 503"), page([obj("a", "1")], "1"), Stream([])], backoff=RecordingBackoff()
    )
    assert watch.synced.is_set()
    assert [kind for kind, _, _ in events] == [SYNC]


def test_a_failing_handler_does_not_end_the_watch() -> None:
    stop = threading.Event()
    server = FakeServer([page([obj("a", "1"), obj("b", "2")], "2"), Stream([])], stop)
    seen: list[str] = []

    def handler(kind: str, key: ObjectKey, old: Any, new: Any) -> None:
        seen.append(key[1])
        raise RuntimeError("boom")

    ListWatch(server, "/things", keep, name="t", handler=handler, min_watch_interval=0.0).run(stop)
    assert seen == ["a", "b"]


def test_label_selector_is_sent_on_list_and_watch() -> None:
    server, _, _ = run([page([], "1"), Stream([])], label_selector="x=y")
    assert all(c["labelSelector"] == "x=y" for c in server.calls)


def test_the_store_keeps_the_trim_and_on_full_sees_the_whole_object() -> None:
    """What a Secret informer needs: the registry reads the data as it passes, the store never keeps it."""
    secret = {**obj("s", "1"), "data": {"kubeconfig": "c2VjcmV0"}}
    changed = {**obj("s", "2"), "data": {"kubeconfig": "bmV3"}}
    whole: list[tuple[str, Any]] = []
    _, events, watch = run(
        [page([secret], "1"), Stream([{"type": "MODIFIED", "object": changed}]), Stream([])],
        trim=lambda item: {"metadata": item["metadata"]},
        on_full=lambda kind, item: whole.append((kind, item.get("data"))),
    )
    assert whole == [("ADDED", secret["data"]), ("MODIFIED", changed["data"])]
    assert all("data" not in item for item in watch.items())
    assert all("data" not in item for _, _, item in events)


def test_stop_ends_the_loop_between_events() -> None:
    stop = threading.Event()
    seen: list[str] = []

    def handler(kind: str, key: ObjectKey, old: Any, new: Any) -> None:
        seen.append(key[1])
        stop.set()

    server = FakeServer(
        [page([], "1"), Stream([{"type": "ADDED", "object": obj(n, "2")} for n in "abc"])], stop
    )
    ListWatch(server, "/things", keep, name="t", handler=handler).run(stop)
    assert seen == ["a"]


def test_streams_that_end_at_once_without_events_do_not_hot_loop() -> None:
    """A proxy that ends every watch at once with nothing in it gets a watch every interval, not a spin."""
    stop = threading.Event()
    server = FakeServer([page([], "1"), *[Stream([]) for _ in range(1000)]], stop)
    watch = ListWatch(server, "/things", keep, name="t", min_watch_interval=0.2)
    thread = threading.Thread(target=watch.run, args=(stop,), daemon=True)
    thread.start()
    time.sleep(1.0)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert 2 <= len(server.calls) <= 8  # about 1 s / 0.2 s watches, plus the list; a spin makes ~1000


def test_close_unblocks_an_idle_control_plane_watch_at_once_with_the_default_watch_timeout() -> None:
    """An idle watch over real HTTP (no events, no bookmarks) on the control plane's transport, with the
    default 300 s timeout: close() must return and end the loop at once, not when the server ends it."""
    fake = FakeKube(watch_max_seconds=1000, bookmark_seconds=1000)
    fake.store.add_resource(Resource(GROUP, "v1alpha1", "federatedhpas", "FederatedHPA", status=True))
    fake.start()
    try:
        plane = KubeControlPlane(
            kube_config.new_client_from_config_dict(fake.kubeconfig()), reporting_instance="t"
        )
        watch = ListWatch(
            plane.watch_transport(30.0), plane.collection_path("federatedhpas"), keep, name="idle"
        )
        assert watch.pacing.timeout_seconds == DEFAULT_WATCH_TIMEOUT_SECONDS == 300
        stop = threading.Event()
        thread = threading.Thread(target=watch.run, args=(stop,), daemon=True)
        thread.start()
        assert watch.synced.wait(10)
        deadline = time.monotonic() + 10
        while len(fake.requests_matching("GET", "federatedhpas")) < 2 or not watch.streaming:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)  # the watch request is open and idle
        started = time.monotonic()
        stop.set()
        closer = threading.Thread(target=watch.close, daemon=True)
        closer.start()
        closer.join(5)
        thread.join(5)
        took = time.monotonic() - started
        assert not closer.is_alive(), "close() blocked on the idle watch"
        assert not thread.is_alive(), "the watch loop did not end"
        assert took < 3.0
    finally:
        fake.stop()


def test_a_watch_error_event_is_scrubbed_as_an_http_error_would_be() -> None:
    """N13: the member's ERROR text went into logs unredacted, credentials and identities included."""
    from controller.kube.listwatch import WatchError

    watch = loop(FakeServer([], threading.Event()), [])
    secret = 'User "system:serviceaccount:ops:deployer" cannot watch; Authorization: Bearer abcdef0123456789'
    line = {"type": "ERROR", "object": {"code": 500, "reason": "Internal\x1b[2J", "message": secret}}
    with pytest.raises(WatchError) as raised:
        watch._handle_line(json.dumps(line))
    text = str(raised.value)
    assert "deployer" not in text and "abcdef0123456789" not in text and "\x1b" not in text
    assert "<redacted>" in text
    gone = {"type": "ERROR", "object": {"code": 410, "message": "too old " + "x" * 5000}}
    with pytest.raises(GoneError) as expired:
        watch._handle_line(json.dumps(gone))
    assert len(str(expired.value)) <= 200
