"""FakeKube's HTTP side: the request handler (faults, records, JSON and chunked watch streams) and the
threading server; every request is answered by ``FakeKube.dispatch``."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.support.fakekube_errors import ApiError
from tests.support.fakekube_faults import RequestRecord
from tests.support.fakekube_store import Resource

if TYPE_CHECKING:
    from tests.support.fakekube import FakeKube

Obj = dict[str, Any]


@dataclass
class Route:
    res: Resource
    version: str
    namespace: str | None
    name: str | None
    subresource: str | None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read fake.requests instead

    # entry points
    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        fake = self.server.fake
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        raw = self._read_body()
        record = RequestRecord(method, url.path, query, self.headers.get("Content-Type"), None)
        record.headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
        record.headers["authorization"] = "<present>" if self.headers.get("Authorization") else ""
        record.client_cn = peer_common_name(self.connection)
        fake.record(record)
        if fake.faults.vanished:
            self._misbehave(fake.faults.vanished, fake.stall_seconds)
            return
        fault = fake.faults.take(method, url.path)
        if fault is not None and fault.action != "status":
            self._misbehave(fault.action, fault.seconds)
            return
        try:
            if fault is not None:
                raise ApiError(fault.status, reason_for(fault.status), f"injected fault: HTTP {fault.status}")
            body = self._decode(raw)
            record.body = body
            status, payload = fake.dispatch(
                method, url.path, query, body, self.headers.get("Content-Type"), self
            )
        except ApiError as err:
            status, payload = err.code, err.status()
        except Exception as exc:  # a bug in the fake must show as a 500, never hang the client
            status, payload = 500, ApiError(500, "InternalError", f"fake API server error: {exc!r}").status()
        record.status = status
        if payload is STREAMED:
            return
        self._send_json(status, payload)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _decode(self, raw: bytes) -> Any:
        if not raw:
            return None
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            if ctype.endswith("yaml"):
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiError(400, "BadRequest", f"request body is not valid {ctype or 'JSON'}: {exc}") from exc

    def _misbehave(self, action: str, seconds: float) -> None:
        if action == "stall":
            self.server.fake.stopping.wait(seconds)
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(2)

    def _send_json(self, status: int, payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        ctype = "text/plain" if isinstance(payload, bytes) else "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    # streaming (watch)
    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, event: Obj) -> bool:
        data = json.dumps(event).encode() + b"\n"
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except OSError:
            return False
        return True

    def end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True


def peer_common_name(connection: Any) -> str | None:
    getpeercert = getattr(connection, "getpeercert", None)
    if getpeercert is None:
        return None
    try:
        cert = getpeercert()
    except (ValueError, OSError):
        return None
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


def reason_for(status: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        409: "Conflict",
        410: "Expired",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(status, "Unknown")


STREAMED = object()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeKube

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (timeouts, dropped faults) is expected here; keep test output clean."""
