"""A loopback HTTP front that makes one "control plane" out of the real API server and a FakeKube.

Why: the real API server of the test tier (tests/support/realapi.py) serves CRDs only, with no core/v1
(Events, Secrets) and no coordination.k8s.io (Leases). The controller under test wants one kubeconfig
for its control plane. The front listens on plain HTTP on 127.0.0.1 (no credentials needed by the
client) and routes:

- ``/api``, ``/api/...`` and ``/apis/coordination.k8s.io/...``  →  the FakeKube (plain HTTP);
- everything else (CRDs, the ScaleTarget scale subresource, discovery of CRD groups)  →  the real
  server over TLS, with the admin client certificate and the server's CA.

Responses stream through unchanged (chunked), so watches work end to end and the real server's
timeoutSeconds closes them as usual.

It also records every request (method, path, query, backend, status) for tests that compare what the
controller calls with what its RBAC grants, and it injects faults on the real-server side, which has
no fault hooks of its own: an HTTP status for the next N matching requests (409 storms, 500s), a watch
answered with one ``ERROR 410 Expired`` event (the watch must relist), a stalled request (a timeout),
or a dropped connection.

Subclasses route to more backends (``route``) and answer some requests themselves (``answer``), and the
front may serve HTTPS (``tls``) for clients that accept nothing else, such as in-cluster configuration:
tests/support/install_cluster.py does all three.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException, HTTPResponse, HTTPSConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

CORE_PATH = re.compile(r"^/api(/|$)|^/apis/coordination\.k8s\.io(/|$)")
BODILESS = frozenset({204, 304})
"""Statuses that carry no body (RFC 9112 §6.3): relayed with headers only."""
JSONish = dict[str, Any]
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "trailer"}


@dataclass
class FrontFault:
    method: str  # regex on the method
    path: str  # regex searched in the path
    action: str  # "status", "gone" (a watch answered with ERROR 410), "stall", "drop"
    status: int = 500
    times: int = 1  # -1: forever
    seconds: float = 30.0
    watch: bool | None = None  # None: any request; True/False: only watch / only non-watch requests
    hits: int = 0


@dataclass
class FrontRecord:
    method: str
    path: str
    query: dict[str, list[str]]
    backend: str  # "real" or "fake"
    status: int | None = None
    at: float = field(default_factory=time.monotonic)

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch", [""])[-1] in ("true", "1")


@dataclass
class Backend:
    host: str
    port: int
    tls: ssl.SSLContext | None = None

    @classmethod
    def http(cls, url: str) -> Backend:
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or 80)

    @classmethod
    def https(cls, url: str, ca: Path, cert: Path, key: Path) -> Backend:
        parts = urlsplit(url)
        context = ssl.create_default_context(cafile=str(ca))
        context.load_cert_chain(str(cert), str(key))
        return cls(parts.hostname or "127.0.0.1", parts.port or 443, context)

    def connect(self, timeout: float | None) -> HTTPConnection:
        if self.tls is not None:
            return HTTPSConnection(self.host, self.port, timeout=timeout, context=self.tls)
        return HTTPConnection(self.host, self.port, timeout=timeout)


class Front:
    """``Front(real=Backend.https(...), fake=Backend.http(fake.url)).start()`` → its URL."""

    def __init__(self, real: Backend, fake: Backend, *, tls: ssl.SSLContext | None = None) -> None:
        self.real = real
        self.fake = fake
        self.tls = tls  # a server context: serve HTTPS (as in-cluster clients require) instead of HTTP
        self.records: list[FrontRecord] = []
        self._faults: list[FrontFault] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._upstream: set[HTTPConnection] = set()  # open backend connections (watches among them)

    # -- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> str:
        front = self

        class Handler(_Handler):
            owner = front

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if self.tls is not None:
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, name="front", daemon=True).start()
        return self.url

    @property
    def url(self) -> str:
        assert self._server is not None
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving and cut the backend connections still open: a relayed watch would otherwise
        hold its backend's request open until the watch times out, and delay that server's own stop."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            upstream, self._upstream = list(self._upstream), set()
        for conn in upstream:
            if conn.sock is not None:
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)

    def kubeconfig(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "front", "cluster": {"server": self.url}}],
            "users": [{"name": "front", "user": {}}],
            "contexts": [{"name": "front", "context": {"cluster": "front", "user": "front"}}],
            "current-context": "front",
        }

    def write_kubeconfig(self, path: Path) -> Path:
        path.write_text(json.dumps(self.kubeconfig()))
        return path

    # -- faults and records -------------------------------------------------------------------------

    def fault(
        self,
        method: str = ".*",
        path: str = ".*",
        *,
        status: int | None = None,
        gone: bool = False,
        stall: float | None = None,
        drop: bool = False,
        times: int = 1,
        watch: bool | None = None,
    ) -> FrontFault:
        """Fail the next ``times`` real-server requests matching ``method``/``path`` (one kind of fault)."""
        chosen = [status is not None, gone, stall is not None, drop]
        if sum(chosen) != 1:
            raise ValueError("give exactly one of status=, gone=True, stall= or drop=True")
        if gone:
            fault = FrontFault(method, path, "gone", times=times, watch=True)
        elif stall is not None:
            fault = FrontFault(method, path, "stall", seconds=stall, times=times, watch=watch)
        elif drop:
            fault = FrontFault(method, path, "drop", times=times, watch=watch)
        else:
            fault = FrontFault(method, path, "status", status=int(status or 500), times=times, watch=watch)
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str, path: str, is_watch: bool) -> FrontFault | None:
        with self._lock:
            for fault in self._faults:
                if (
                    fault.times == 0
                    or not re.fullmatch(fault.method, method)
                    or not re.search(fault.path, path)
                ):
                    continue
                if fault.watch is not None and fault.watch != is_watch:
                    continue
                fault.hits += 1
                if fault.times > 0:
                    fault.times -= 1
                return fault
        return None

    # -- routing and admission (subclasses: more backends, authentication) -------------------------

    def route(self, path: str) -> tuple[str, Backend]:
        """The backend a request path goes to, and its name in the records."""
        if CORE_PATH.search(path):
            return "fake", self.fake
        return "real", self.real

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: Any, body: bytes | None
    ) -> JSONish | None:
        """A body to answer with instead of forwarding, its HTTP status its ``code`` (200 without one),
        as a Status carries it. This front forwards everything."""
        return None

    def record(self, rec: FrontRecord) -> None:
        with self._lock:
            self.records.append(rec)

    def requests(self, method: str = ".*", path: str = ".*") -> list[FrontRecord]:
        with self._lock:
            return [r for r in self.records if re.fullmatch(method, r.method) and re.search(path, r.path)]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: Front

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._proxy("GET")

    def do_POST(self) -> None:
        self._proxy("POST")

    def do_PUT(self) -> None:
        self._proxy("PUT")

    def do_PATCH(self) -> None:
        self._proxy("PATCH")

    def do_DELETE(self) -> None:
        self._proxy("DELETE")

    def _proxy(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        backend_name, backend = self.owner.route(parts.path)
        rec = FrontRecord(method, parts.path, parse_qs(parts.query), backend_name)
        self.owner.record(rec)
        reply = self.owner.answer(method, parts.path, rec.query, self.headers, body)
        if reply is not None:
            rec.status = int(reply.get("code", 200))
            self._simple(rec.status, reply)
            return
        if backend_name == "real":
            fault = self.owner._take_fault(method, parts.path, rec.is_watch)
            if fault is not None and self._misbehave(fault, rec):
                return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        headers.pop("Authorization", None)  # the real server gets the admin client cert instead
        conn = backend.connect(timeout=None if rec.is_watch else 60)
        with self.owner._lock:
            self.owner._upstream.add(conn)
        try:
            conn.request(method, self.path, body=body, headers=headers)
            resp = conn.getresponse()
        except OSError:
            rec.status = 502
            self._simple(502, {"kind": "Status", "code": 502, "message": "front: backend unreachable"})
            with self.owner._lock:
                self.owner._upstream.discard(conn)
            conn.close()
            return
        rec.status = resp.status
        try:
            self._relay(resp)
        except (OSError, HTTPException):
            self.close_connection = True  # one side went away mid-stream (a watch closed, a server stopped)
        finally:
            with self.owner._lock:
                self.owner._upstream.discard(conn)
            conn.close()

    def _relay(self, resp: HTTPResponse) -> None:
        self.send_response(resp.status)
        for key, value in resp.getheaders():
            if key.lower() not in HOP_HEADERS:
                self.send_header(key, value)
        if resp.status in BODILESS or 100 <= resp.status < 200:
            # RFC 9112: no body, so no chunked terminator either (kubectl read a stray "0" after a
            # 304 Not Modified as the next response: "malformed HTTP response")
            self.end_headers()
            self.wfile.flush()
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while True:
            chunk = resp.read1(65536)
            if not chunk:
                break
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _misbehave(self, fault: FrontFault, rec: FrontRecord) -> bool:
        """Carry out ``fault``; True when the request is answered (or dropped) here."""
        if fault.action == "status":
            rec.status = fault.status
            reason = {
                409: "Conflict",
                500: "InternalError",
                503: "ServiceUnavailable",
                429: "TooManyRequests",
            }
            self._simple(
                fault.status,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "code": fault.status,
                    "reason": reason.get(fault.status, "Failure"),
                    "message": f"injected by the test front ({fault.status})",
                },
            )
            return True
        if fault.action == "gone":
            rec.status = 200
            event = {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "code": 410,
                    "reason": "Expired",
                    "message": "too old resource version (injected)",
                },
            }
            line = (json.dumps(event) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n0\r\n\r\n")
            self.wfile.flush()
            return True
        if fault.action == "stall":
            time.sleep(fault.seconds)
        self._drop()
        return True

    def _drop(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _simple(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
