"""Cluster DNS and kube-proxy in one loopback process, for the real API server's calls to Services.

The realapi tier's API server resolves a webhook's ``clientConfig.service`` the way every generic API
server without a Service lister does: to ``https://<service>.<namespace>.svc:<port><path>``, a name only
cluster DNS knows. Started with ``HTTPS_PROXY`` pointing here (``RealAPIServer(apiserver_env=...)``),
its HTTP client sends ``CONNECT <service>.<namespace>.svc:<port>`` instead of resolving the name; this
proxy asks ``resolve`` for the loopback address of a ready endpoint of that Service port and then
relays bytes both ways. TLS stays end to end: the server still checks the webhook's certificate for
the Service's DNS name against the configuration's caBundle, as in a cluster. Loopback addresses are
never proxied by Go's HTTP client, so etcd and the core stub are reached directly.
"""

from __future__ import annotations

import contextlib
import io
import re
import select
import socket
import socketserver
import threading
from collections.abc import Callable

# (namespace, service, port) -> a ready endpoint's (host, port), or None when there is none
Resolver = Callable[[str, str, int], tuple[str, int] | None]
SERVICE_HOST = re.compile(r"^(?P<service>[a-z0-9-]+)\.(?P<namespace>[a-z0-9-]+)\.svc(\.cluster\.local)?$")


class ServiceProxy:
    """``ServiceProxy(resolve).start()`` → its ``http://`` URL, for ``HTTPS_PROXY``. ``stop()`` ends it."""

    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve
        self.connects: list[tuple[str, int, bool]] = []  # (host, port, routed?) of every CONNECT
        self._server: socketserver.ThreadingTCPServer | None = None

    def start(self) -> str:
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                owner._handle(self.connection, self.rfile)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="service-proxy", daemon=True).start()
        return self.url

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _handle(self, client: socket.socket, rfile: io.BufferedIOBase) -> None:
        request = rfile.readline().decode("latin-1").split()
        while rfile.readline() not in (b"\r\n", b"\n", b""):
            pass  # headers: nothing in them matters here
        if len(request) < 2 or request[0] != "CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host, _, port = request[1].rpartition(":")
        match = SERVICE_HOST.match(host)
        target = self.resolve(match["namespace"], match["service"], int(port)) if match else None
        self.connects.append((host, int(port), target is not None))
        if target is None:  # what a Service without ready endpoints looks like: the connection fails
            client.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
            return
        try:
            upstream = socket.create_connection(target, timeout=10)
        except OSError:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        with upstream:
            _relay(client, upstream)


def _relay(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    peers = {a: b, b: a}
    while True:
        readable, _, _ = select.select(list(peers), [], [], 60)
        if not readable:
            return
        for sock in readable:
            try:
                data = sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            with contextlib.suppress(OSError):
                peers[sock].sendall(data)
