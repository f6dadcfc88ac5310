"""The API server's stand-in for cluster DNS and kube-proxy: a CONNECT to `<service>.<namespace>.svc`
reaches the endpoint the resolver names, and a Service without one is refused."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from tests.support.service_proxy import ServiceProxy


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(self.request.recv(1024).upper())


@pytest.fixture
def proxy() -> Iterator[tuple[ServiceProxy, int]]:
    echo = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=echo.serve_forever, daemon=True).start()
    port = echo.server_address[1]
    routes = {("system", "hook", 443): ("127.0.0.1", port)}
    service_proxy = ServiceProxy(lambda ns, name, p: routes.get((ns, name, p)))
    service_proxy.start()
    yield service_proxy, int(service_proxy.url.rsplit(":", 1)[1])
    service_proxy.stop()
    echo.shutdown()


def connect(port: int, target: str) -> tuple[bytes, socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    return head, sock


def test_a_service_name_is_relayed_to_its_endpoint(proxy: tuple[ServiceProxy, int]) -> None:
    service_proxy, port = proxy
    head, sock = connect(port, "hook.system.svc:443")
    with sock:
        assert head.startswith(b"HTTP/1.1 200")
        sock.sendall(b"ping")
        assert sock.recv(16) == b"PING"
    assert service_proxy.connects == [("hook.system.svc", 443, True)]


@pytest.mark.parametrize("target", ["other.system.svc:443", "hook.system.svc:80", "example.com:443"])
def test_a_name_without_a_ready_endpoint_is_refused(proxy: tuple[ServiceProxy, int], target: str) -> None:
    head, sock = connect(proxy[1], target)
    sock.close()
    assert head.startswith(b"HTTP/1.1 503")
