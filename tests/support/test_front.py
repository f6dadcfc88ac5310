"""The test front relays bodiless answers without a body (issue 12, item 7e).

kubectl failed now and then with ``malformed HTTP response "0"``: the front relayed a 304 Not Modified
with ``Transfer-Encoding: chunked`` and a ``0`` terminator, which the client read as the start of the
next response on the kept-alive connection. And stopping the front ends the watches it relays, which
would otherwise keep their backend's requests open (and its stop waiting) until they time out.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.front import Backend, Front


class _Backend(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if "not-modified" in self.path:
            self.send_response(304)
            self.send_header("ETag", '"v1"')
            self.end_headers()
        elif "no-content" in self.path:
            self.send_response(204)
            self.end_headers()
        else:
            data = b'{"kind":"APIGroupList"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


@pytest.fixture
def front() -> Iterator[str]:
    backend = ThreadingHTTPServer(("127.0.0.1", 0), _Backend)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{backend.server_address[1]}"
    proxy = Front(real=Backend.http(url), fake=Backend.http(url))
    try:
        yield proxy.start()
    finally:
        proxy.stop()
        backend.shutdown()


@pytest.mark.parametrize("path", ["/apis/not-modified", "/apis/no-content"])
def test_a_bodiless_answer_leaves_the_connection_clean_for_the_next_request(front: str, path: str) -> None:
    host, port = front.removeprefix("http://").split(":")
    conn = HTTPConnection(host, int(port), timeout=10)
    for _ in range(3):  # on one kept-alive connection, as kubectl does
        conn.request("GET", path)
        first = conn.getresponse()
        assert first.status in (204, 304) and first.read() == b""
        conn.request("GET", "/apis")
        second = conn.getresponse()
        assert second.status == 200 and second.read() == b'{"kind":"APIGroupList"}'
    conn.close()


@pytest.mark.parametrize("path", ["/apis/not-modified", "/apis/no-content"])
def test_nothing_follows_the_headers_of_a_bodiless_answer(front: str, path: str) -> None:
    host, port = front.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        sock.settimeout(0.5)
        with contextlib.suppress(TimeoutError):
            rest += sock.recv(65536)
    assert b"transfer-encoding" not in head.lower()
    assert rest == b"", f"bytes after a {head.split()[1].decode()} answer: {rest!r}"


class _EndlessWatch(BaseHTTPRequestHandler):
    """A watch that streams until its connection is cut, and says when that happened."""

    protocol_version = "HTTP/1.1"
    cut = threading.Event()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b"3\r\n{}\n\r\n")
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            type(self).cut.set()


def test_stopping_the_front_cuts_the_watches_it_relays() -> None:
    backend = ThreadingHTTPServer(("127.0.0.1", 0), _EndlessWatch)
    backend.daemon_threads = True
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{backend.server_address[1]}"
    proxy = Front(real=Backend.http(url), fake=Backend.http(url))
    host, port = proxy.start().removeprefix("http://").split(":")
    client = HTTPConnection(host, int(port), timeout=10)
    try:
        client.request("GET", "/apis/g/v1/things?watch=true")
        assert client.getresponse().read(3) == b"{}\n"
        proxy.stop()  # the client stays connected: only the front can end the backend's request
        assert _EndlessWatch.cut.wait(5), "the backend's watch request is still open"
    finally:
        client.close()
        backend.shutdown()
