"""A member API server on loopback that misbehaves in one chosen way, for the bulkhead tests.

It serves what a member cache lists and watches (pods, nodes, autoscaling/v2 HPAs) and ``/readyz``;
``mode`` picks how the pods list or watch goes wrong (the other resources stay honest):

- ``honest``: a few pods; watches send a bookmark every ``beat`` seconds until their timeout;
- ``trickle``: the pods list answers one byte every ``beat`` seconds (Content-Length of the whole body);
- ``trickle_watch``: the pods watch sends one byte every ``beat`` seconds, never a whole line;
- ``giant_page``: the pods list ignores ``limit`` and answers ``count`` pods in one page;
- ``endless_continue``: every pods page has ``limit`` new pods and another ``continue`` token;
- ``long_line``: the pods watch sends one line that never ends;
- ``flood``: the pods watch sends ADDED events for new pods without end;
- ``garbage``: the pods list answers random bytes without end.

Everything is bounded in time: a response ends at ``lifetime`` seconds or at ``stop()``, and a
streamed one also after ``max_bytes``, so a test that fails leaves nothing running.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from controller.kube.clients import KubeClient, Timeouts, build_api_client

MODES = (
    "honest",
    "trickle",
    "trickle_watch",
    "giant_page",
    "endless_continue",
    "long_line",
    "flood",
    "garbage",
)
PATHS = {
    "/api/v1/pods": "pods",
    "/api/v1/nodes": "nodes",
    "/apis/autoscaling/v2/horizontalpodautoscalers": "hpas",
}


def pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "default", "name": name, "labels": {"app": "web"}, "resourceVersion": "1"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {"phase": "Running"},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        member = self.server.member
        member.requests.append(url.path)
        if url.path in ("/readyz", "/healthz"):
            self._send(b"ok", "text/plain")
            return
        resource = PATHS.get(url.path)
        if resource is None:
            self._send(json.dumps({"kind": "Status", "code": 404}).encode(), status=404)
            return
        hostile = resource == "pods" and member.mode != "honest"
        try:
            if query.get("watch") == "true":
                self._watch(query, hostile)
            else:
                self._list(query, hostile)
        except OSError:
            self.close_connection = True

    # -- lists -----------------------------------------------------------------------------------------

    def _list(self, query: dict[str, str], hostile: bool) -> None:
        member = self.server.member
        mode = member.mode if hostile else "honest"
        limit = int(query.get("limit") or 500)
        if mode == "garbage":
            self._stream(iter(lambda: os.urandom(64 * 1024), b""))
            return
        if mode == "giant_page":
            items = [pod(f"giant-{i}") for i in range(member.count)]
            self._send(json.dumps({"metadata": {"resourceVersion": "1"}, "items": items}).encode())
            return
        if mode == "endless_continue":
            page = int(query.get("continue") or 0)
            items = [pod(f"page{page}-{i}") for i in range(limit)]
            meta = {"resourceVersion": "1", "continue": str(page + 1)}
            self._send(json.dumps({"metadata": meta, "items": items}).encode())
            return
        pods = PATHS.get(urlsplit(self.path).path) == "pods"
        items = [pod(f"web-{i}") for i in range(member.count)] if pods else []
        body = json.dumps({"metadata": {"resourceVersion": "1"}, "items": items}).encode()
        if mode == "trickle":
            self._trickle(body)
            return
        self._send(body)

    def _trickle(self, body: bytes) -> None:
        member = self.server.member
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for i in range(len(body)):
            if member.stopping.wait(member.beat) or member.expired():
                break
            self.wfile.write(body[i : i + 1])
            self.wfile.flush()
        self.close_connection = True

    # -- watches ---------------------------------------------------------------------------------------

    def _watch(self, query: dict[str, str], hostile: bool) -> None:
        member = self.server.member
        mode = member.mode if hostile else "honest"
        if mode == "trickle_watch":
            self._stream(iter(lambda: b" " if not member.stopping.wait(member.beat) else b"", b""))
            return
        if mode == "long_line":
            self._stream(iter(lambda: b'{"type":"ADDED","object":{"metadata":{"name":"' + b"x" * 65536, b""))
            return
        if mode == "flood":
            counter = iter(range(1 << 62))
            self._stream(
                iter(
                    lambda: (
                        json.dumps({"type": "ADDED", "object": pod(f"f{next(counter)}")}).encode() + b"\n"
                    ),
                    b"",
                )
            )
            return
        ends = time.monotonic() + min(float(query.get("timeoutSeconds") or 60), member.lifetime)
        bookmark = json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "1"}}}) + "\n"
        self._start_chunked()
        while time.monotonic() < ends and not member.stopping.wait(member.beat):
            self._chunk(bookmark.encode())
        self._end_chunked()

    # -- writing ---------------------------------------------------------------------------------------

    def _send(self, data: bytes, ctype: str = "application/json", status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, pieces: Iterator[bytes]) -> None:
        """Chunked pieces until ``max_bytes``, ``lifetime`` or ``stop()``: the member never ends it."""
        member = self.server.member
        self._start_chunked()
        sent = 0
        for piece in pieces:
            if member.stopping.is_set() or member.expired() or sent > member.max_bytes:
                break
            self._chunk(piece)
            sent += len(piece)
            member.sent += len(piece)
        self.close_connection = True

    def _start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    member: HostileMember

    def handle_error(self, request: Any, client_address: Any) -> None:
        """The client cut us off (that is the point): keep test output clean."""


class HostileMember:
    """One loopback member server; a context manager that starts and stops it."""

    def __init__(
        self,
        mode: str = "honest",
        *,
        count: int = 3,
        beat: float = 0.5,
        lifetime: float = 30.0,
        max_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        assert mode in MODES, mode
        self.mode, self.count, self.beat, self.lifetime, self.max_bytes = (
            mode,
            count,
            beat,
            lifetime,
            max_bytes,
        )
        self.stopping = threading.Event()
        self.started = time.monotonic()
        self.requests: list[str] = []
        self.sent = 0  # bytes of hostile streams sent
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.member = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"hostile-{mode}", daemon=True
        )

    def expired(self) -> bool:
        return time.monotonic() - self.started > self.lifetime

    def __enter__(self) -> HostileMember:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def client(self, name: str, read: float = 30.0) -> KubeClient:
        """A client of this member over plain HTTP (no credential: one would be refused over HTTP)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": {}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        }
        return KubeClient(name, build_api_client(config), Timeouts(connect=2.0, read=read, probe=2.0))
