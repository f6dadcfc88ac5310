"""The list-then-watch loop: resourceVersion handling, bookmarks, 410 relists, backoff, stop."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client.exceptions import ApiException

from controller.kube.control_plane import KubeControlPlane
from controller.runtime.watch import DEFAULT_WATCH_TIMEOUT_SECONDS, Watcher, WatchEvent
from controller.runtime.workqueue import ExponentialBackoff
from tests.support.fakekube import FakeKube, Resource

GROUP = "autoscaling.karmada.io"


def obj(name: str, rv: str, ns: str = "ns") -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": rv}}


class ListResponse:
    def __init__(self, items: list[dict[str, Any]], rv: str) -> None:
        self.data = json.dumps({"metadata": {"resourceVersion": rv}, "items": items}).encode()


class StreamResponse:
    """Stands in for the urllib3 response of a watch: a chunked stream of JSON lines."""

    def __init__(self, events: list[dict[str, Any]], on_end: threading.Event | None = None) -> None:
        self.events = events
        self.closed = False
        self.on_end = on_end

    def stream(self, amt: Any = None, decode_content: Any = None) -> Iterator[bytes]:
        for event in self.events:
            line = json.dumps(event) + "\n"
            yield line[:5].encode()  # split across chunks on purpose
            yield line[5:].encode()
        if self.on_end is not None:
            self.on_end.set()

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


class FakeServer:
    """A scripted list function: each call takes the next scripted answer and records its kwargs."""

    def __init__(self, script: list[Any], stop: threading.Event) -> None:
        self.script = script
        self.calls: list[dict[str, Any]] = []
        self.stop = stop

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if not self.script:
            self.stop.set()
            return StreamResponse([])
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def run(script: list[Any]) -> tuple[FakeServer, list[WatchEvent], Watcher]:
    stop = threading.Event()
    server = FakeServer(script, stop)
    events: list[WatchEvent] = []
    watcher = Watcher(
        server,
        events.append,
        name="test",
        backoff=ExponentialBackoff(base=0.001, maximum=0.01),
        min_watch_interval=0.0,
    )
    thread = threading.Thread(target=watcher.run, args=(stop,))
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    return server, events, watcher


def test_lists_then_watches_from_the_lists_version_with_bookmarks() -> None:
    server, events, watcher = run(
        [
            ListResponse([obj("a", "5")], "10"),
            StreamResponse(
                [
                    {"type": "ADDED", "object": obj("b", "11")},
                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
                    {"type": "MODIFIED", "object": obj("a", "16")},
                    {"type": "DELETED", "object": obj("b", "17")},
                ]
            ),
            StreamResponse([]),  # the server's timeoutSeconds ended the stream: watch again, no list
        ]
    )
    assert [(e.type, e.key) for e in events] == [
        ("ADDED", ("ns", "a")),
        ("ADDED", ("ns", "b")),
        ("MODIFIED", ("ns", "a")),
        ("DELETED", ("ns", "b")),
    ]
    assert "watch" not in server.calls[0]
    assert server.calls[1]["resource_version"] == "10"
    assert server.calls[1]["allow_watch_bookmarks"] is True
    assert server.calls[1]["watch"] is True
    assert server.calls[2]["resource_version"] == "17"  # last event, after the bookmark's 15
    assert set(watcher.snapshot()) == {("ns", "a")}
    assert watcher.relists == 0


def test_a_bookmark_moves_the_version_on() -> None:
    server, _, _ = run(
        [
            ListResponse([], "3"),
            StreamResponse([{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "42"}}}]),
            StreamResponse([]),
        ]
    )
    assert server.calls[2]["resource_version"] == "42"


def test_410_error_event_relists_and_reports_what_was_deleted_meanwhile() -> None:
    server, events, watcher = run(
        [
            ListResponse([obj("a", "1"), obj("b", "2")], "2"),
            StreamResponse(
                [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}]
            ),
            ListResponse([obj("a", "1"), obj("c", "30")], "31"),
            StreamResponse([]),
        ]
    )
    assert [(e.type, e.key[1]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("ADDED", "c"),
        ("DELETED", "b"),
    ]
    assert "watch" not in server.calls[2]
    assert server.calls[3]["resource_version"] == "31"
    assert watcher.relists == 1


def test_a_relist_is_reported() -> None:
    stop = threading.Event()
    server = FakeServer(
        [
            ListResponse([], "1"),
            StreamResponse([{"type": "ERROR", "object": {"code": 410}}]),
            ListResponse([], "5"),
            StreamResponse([]),
        ],
        stop,
    )
    relists: list[int] = []
    Watcher(server, lambda e: None, name="t", on_relist=lambda: relists.append(1)).run(stop)
    assert relists == [1]


def test_http_410_on_the_watch_request_relists() -> None:
    server, _, watcher = run(
        [
            ListResponse([], "2"),
            ApiException(status=410, reason="Gone"),
            ListResponse([obj("a", "9")], "9"),
            StreamResponse([]),
        ]
    )
    assert "watch" not in server.calls[2]
    assert set(watcher.snapshot()) == {("ns", "a")}


class RecordingStop(threading.Event):
    """The watcher's stop event, whose ``wait`` (the watcher's only sleep: backoff and the minimum watch
    interval) records the delay asked for and returns at once, so real backoff delays cost no time."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float("inf") if timeout is None else timeout)
        return self.is_set()


def test_errors_back_off_and_resume_from_the_last_version_without_listing() -> None:
    stop = RecordingStop()
    server = FakeServer(
        [
            ListResponse([obj("a", "1")], "4"),
            ApiException(status=500, reason="Internal Server Error"),
            StreamResponse([{"type": "ERROR", "object": {"code": 500, "reason": "InternalError"}}]),
            ConnectionResetError("peer reset"),
            ApiException(status=503, reason="Unavailable"),
            StreamResponse([{"type": "MODIFIED", "object": obj("a", "8")}]),
            ConnectionResetError("peer reset again"),  # after a success: the backoff starts over
            StreamResponse([]),
        ],
        stop,
    )
    events: list[WatchEvent] = []
    watcher = Watcher(
        server,
        events.append,
        name="test",
        backoff=ExponentialBackoff(base=0.5, maximum=3.0),  # real delays: only the fake wait skips them
        min_watch_interval=0.0,
    )
    thread = threading.Thread(target=watcher.run, args=(stop,))
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    assert [c.get("resource_version") for c in server.calls[1:6]] == ["4", "4", "4", "4", "4"]
    assert [bool(c.get("watch")) for c in server.calls].count(False) == 1  # one list, never again
    assert all(c.get("watch") for c in server.calls[1:])
    assert events[-1].type == "MODIFIED"
    # each failure in a row waits twice as long (capped), and a successful watch resets the backoff
    assert stop.waits == [0.5, 1.0, 2.0, 3.0, 0.5]


def test_an_initial_list_failure_is_retried() -> None:
    _server, events, watcher = run(
        [
            ApiException(status=503, reason="Unavailable"),
            ListResponse([obj("a", "1")], "1"),
            StreamResponse([]),
        ]
    )
    assert watcher.synced.is_set()
    assert [e.type for e in events] == ["ADDED"]


def test_a_failing_handler_does_not_end_the_watch() -> None:
    stop = threading.Event()
    server = FakeServer([ListResponse([obj("a", "1"), obj("b", "2")], "2"), StreamResponse([])], stop)
    seen: list[str] = []

    def handler(event: WatchEvent) -> None:
        seen.append(event.key[1])
        raise RuntimeError("boom")

    Watcher(server, handler, name="t", min_watch_interval=0.0).run(stop)
    assert seen == ["a", "b"]


def test_label_selector_is_sent_on_list_and_watch() -> None:
    stop = threading.Event()
    server = FakeServer([ListResponse([], "1"), StreamResponse([])], stop)
    Watcher(server, lambda e: None, name="t", label_selector="x=y", min_watch_interval=0.0).run(stop)
    assert all(c["label_selector"] == "x=y" for c in server.calls)


def test_stop_ends_the_loop_between_events() -> None:
    stop = threading.Event()
    seen: list[str] = []

    def handler(event: WatchEvent) -> None:
        seen.append(event.key[1])
        stop.set()

    server = FakeServer(
        [ListResponse([], "1"), StreamResponse([{"type": "ADDED", "object": obj(n, "2")} for n in "abc"])],
        stop,
    )
    Watcher(server, handler, name="t").run(stop)
    assert seen == ["a"]


def test_streams_that_end_at_once_without_events_do_not_hot_loop() -> None:
    """L10: a proxy that ends every watch at once with nothing in it gets one watch a second, not a spin."""
    stop = threading.Event()
    server = FakeServer([ListResponse([], "1"), *[StreamResponse([]) for _ in range(1000)]], stop)
    watcher = Watcher(server, lambda e: None, name="t", min_watch_interval=0.2)
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    time.sleep(1.0)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert 2 <= len(server.calls) <= 8  # about 1 s / 0.2 s watches, plus the list; a spin makes ~1000


def test_close_unblocks_an_idle_watch_at_once_with_the_default_watch_timeout() -> None:
    """7(b): an idle watch over real HTTP (no events, no bookmarks) with the default 300 s timeout;
    close() must return and end the loop at once, not when the server ends the watch."""
    fake = FakeKube(watch_max_seconds=1000, bookmark_seconds=1000)
    fake.store.add_resource(Resource(GROUP, "v1alpha1", "federatedhpas", "FederatedHPA", status=True))
    fake.start()
    try:
        plane = KubeControlPlane(
            kube_config.new_client_from_config_dict(fake.kubeconfig()), reporting_instance="t"
        )
        watcher = Watcher(plane.list_func("federatedhpas"), lambda e: None, name="idle")
        assert watcher._timeout_seconds == DEFAULT_WATCH_TIMEOUT_SECONDS == 300
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        assert watcher.synced.wait(10)
        deadline = time.monotonic() + 10
        while (
            not fake.requests_matching("GET", "federatedhpas")
            or len(fake.requests_matching("GET", "federatedhpas")) < 2
        ):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)  # the watch request is open and idle
        started = time.monotonic()
        stop.set()
        closer = threading.Thread(target=watcher.close, daemon=True)
        closer.start()
        closer.join(5)
        thread.join(5)
        took = time.monotonic() - started
        assert not closer.is_alive(), "close() blocked on the idle watch"
        assert not thread.is_alive(), "the watch loop did not end"
        assert took < 3.0
    finally:
        fake.stop()
