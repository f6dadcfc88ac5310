"""TLS for the webhook: certificate hot reload, and deadlines a slow client cannot stretch.

Hot reload. gunicorn (27) asks its `ssl_context` hook for a context on every connection it accepts.
`CertificateReloader.context()` answers from a cache keyed by the certificate files' identity (inode,
size, mtime; `stat` follows the symlinks Kubernetes swaps when it updates a Secret volume), and builds a
new context only when they change. Connections already open keep the context they were accepted with,
so requests in flight finish on the old certificate while new connections get the new one; no restart,
no dropped request. A half-renewed pair (new certificate, old key) fails to load and the previous
context stays in service until both files agree.

Deadlines. gunicorn's threaded worker waits at most a few seconds for a new connection's first bytes,
but once a request has started it reads headers and body with blocking calls and no limit. The sockets
made here carry a per-read timeout and a whole-request budget that starts when gunicorn switches the
socket to blocking mode to serve a request (gthread does so for each request on a kept-alive
connection); a client that stalls or trickles bytes is cut off, and the thread returns to the pool.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FileIdentity = tuple[tuple[int, int, int, int], ...]


class DeadlineSSLSocket(ssl.SSLSocket):
    """An SSLSocket whose blocking reads and writes obey `io_timeout` each and `request_budget` in all,
    counted from the moment the socket is put (back) into blocking mode."""

    io_timeout: float = 10.0
    request_budget: float = 30.0
    _deadline: float = float("inf")

    def settimeout(self, value: float | None) -> None:
        if value is None:  # "blocking": becomes bounded, and a new request's budget starts
            self._deadline = time.monotonic() + self.request_budget
            value = self.io_timeout
        super().settimeout(value)

    def setblocking(self, flag: bool) -> None:
        if flag:
            self.settimeout(None)
        else:
            super().setblocking(False)

    def _check_deadline(self) -> None:
        current = self.gettimeout()
        if not current:  # non-blocking (the worker's poller): no deadline applies
            return
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the client took longer than the request deadline")
        if remaining < current:
            super().settimeout(remaining)

    def read(self, len: int = 1024, buffer: Any = None) -> Any:
        self._check_deadline()
        return super().read(len, buffer)

    def write(self, data: Any) -> int:
        self._check_deadline()
        return super().write(data)

    def do_handshake(self, block: bool = False) -> None:
        self._check_deadline()
        super().do_handshake(block)


def socket_class(io_timeout: float, request_budget: float) -> type[DeadlineSSLSocket]:
    """A DeadlineSSLSocket subclass with these limits (a class, because SSLContext builds the sockets)."""
    if io_timeout <= 0 or request_budget <= 0:
        raise ValueError("timeouts must be positive")
    return type(
        "BoundedSSLSocket", (DeadlineSSLSocket,), {"io_timeout": io_timeout, "request_budget": request_budget}
    )


class CertificateReloader:
    """Serves an SSLContext for the current tls.crt/tls.key, rebuilt when the files change."""

    def __init__(
        self, cert_file: Path, key_file: Path, io_timeout: float = 10.0, request_budget: float = 30.0
    ) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._socket_class = socket_class(io_timeout, request_budget)
        self._lock = threading.Lock()
        self._identity: FileIdentity | None = None
        self._context: ssl.SSLContext | None = None
        self._last_error: str | None = None
        self.loads = 0

    def _file_identity(self) -> FileIdentity | None:
        try:
            stats = [os.stat(self.cert_file), os.stat(self.key_file)]
        except OSError:
            return None
        return tuple((s.st_ino, s.st_dev, s.st_size, s.st_mtime_ns) for s in stats)

    def _build(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(certfile=str(self.cert_file), keyfile=str(self.key_file))
        context.sslsocket_class = self._socket_class
        return context

    def context(self) -> ssl.SSLContext:
        """The context for a new connection; reloads first if the files changed since the last call.
        Raises ssl.SSLError/OSError only if no certificate has ever loaded."""
        identity = self._file_identity()
        if self._context is not None and identity == self._identity:
            return self._context
        with self._lock:
            if identity is not None and identity != self._identity:
                self._try_reload(identity)
            if self._context is None:
                raise ssl.SSLError(f"no usable certificate in {self.cert_file}: {self._last_error}")
            return self._context

    def _try_reload(self, identity: FileIdentity) -> None:
        try:
            context = self._build()
        except (OSError, ssl.SSLError, ValueError) as exc:
            # Often a renewal caught between writing the key and the certificate; retried on the next
            # connection. The previous context (if any) keeps serving meanwhile.
            self._last_error = f"{type(exc).__name__}: {exc}"
            log.warning(
                "cannot load %s with %s (%s); keeping the previous certificate",
                self.cert_file,
                self.key_file,
                self._last_error,
            )
            return
        if self._context is not None:
            log.info("certificate %s changed; new connections use the new one", self.cert_file)
        self._context, self._identity, self._last_error = context, identity, None
        self.loads += 1

    def readiness(self) -> str | None:
        """None once a certificate is loaded (checking the files for a renewal), else why not."""
        try:
            self.context()
        except (OSError, ssl.SSLError) as exc:
            return f"TLS certificate not loaded: {exc}"
        return None

    def gunicorn_hook(self, _config: Any, _default_factory: Any) -> ssl.SSLContext:
        """gunicorn's `ssl_context(config, default_ssl_context_factory)` setting."""
        return self.context()
