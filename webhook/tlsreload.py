"""TLS for the webhook: certificate hot reload, and deadlines a slow client cannot stretch.

Hot reload. gunicorn (27) asks its `ssl_context` hook for a context on every connection it accepts.
`CertificateReloader.context()` answers from a cache keyed by the certificate files' identity (inode,
size, mtime; `stat` follows the symlinks Kubernetes swaps when it updates a Secret volume), and builds a
new context only when they change. Connections already open keep the context they were accepted with,
so requests in flight finish on the old certificate while new connections get the new one; no restart,
no dropped request. A half-renewed pair (new certificate, old key) fails to load and the previous
context stays in service until both files agree.

A pair that stays broken (review L3). Retrying the load on every connection and every /readyz, with a
WARNING each time, flooded the log. A failed load is now retried with a backoff kept for that file
identity (1 s, doubling to 60 s; a change of the files retries at once), and warned about once when the
identity is first seen failing and at most once a minute after that.

Expiry. The notAfter of the certificate in use is kept (`not_after`), handed to the listeners registered
with `on_certificate` (the webhook's expiry gauge), and `readiness()` fails once it is within
`expiry_threshold` seconds or past, saying which certificate is still served and why a newer one is not.

Deadlines. gunicorn's threaded worker waits at most a few seconds for a new connection's first bytes,
but once a request has started it reads headers and body with blocking calls and no limit. The sockets
made here carry a per-read timeout and a whole-request budget that starts when gunicorn switches the
socket to blocking mode to serve a request (gthread does so for each request on a kept-alive
connection); a client that stalls or trickles bytes is cut off, and the thread returns to the pool.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography import x509

log = logging.getLogger(__name__)

FileIdentity = tuple[tuple[int, int, int, int], ...]
MISSING: FileIdentity = ()
"""The identity of a pair whose files cannot be stat'ed (missing, or a directory we may not enter)."""

RETRY_FIRST = 1.0  # seconds before retrying a pair that failed to load
RETRY_MAX = 60.0
WARN_INTERVAL = 60.0  # at most one warning a minute about the same broken pair
DEFAULT_EXPIRY_THRESHOLD = 24 * 3600.0


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
    """Serves an SSLContext for the current tls.crt/tls.key, rebuilt when the files change.

    `monotonic` and `wall_clock` are injectable for tests (retry backoff and expiry respectively)."""

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        io_timeout: float = 10.0,
        request_budget: float = 30.0,
        *,
        expiry_threshold: float = DEFAULT_EXPIRY_THRESHOLD,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if expiry_threshold < 0:
            raise ValueError("the expiry threshold cannot be negative")
        self.cert_file = cert_file
        self.key_file = key_file
        self.expiry_threshold = expiry_threshold
        self._socket_class = socket_class(io_timeout, request_budget)
        self._monotonic = monotonic
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._identity: FileIdentity | None = None
        self._context: ssl.SSLContext | None = None
        self._last_error: str | None = None
        # the broken pair being backed off: its identity, failures in a row, when to try again
        self._failed_identity: FileIdentity | None = None
        self._failures = 0
        self._retry_at = 0.0
        self._warned_at: float | None = None
        self._listeners: list[Callable[[float], None]] = []
        self.not_after: float | None = None  # POSIX time of the served certificate's notAfter
        self.loads = 0
        self.attempts = 0  # loads tried, failed ones included (tests check the backoff with it)

    def _file_identity(self) -> FileIdentity:
        try:
            stats = [os.stat(self.cert_file), os.stat(self.key_file)]
        except OSError:
            return MISSING
        return tuple((s.st_ino, s.st_dev, s.st_size, s.st_mtime_ns) for s in stats)

    def _build(self) -> tuple[ssl.SSLContext, float]:
        """A context for the files, and the notAfter of the leaf certificate it serves."""
        cert_pem = self.cert_file.read_bytes()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(certfile=str(self.cert_file), keyfile=str(self.key_file))
        context.sslsocket_class = self._socket_class
        leaf = x509.load_pem_x509_certificates(cert_pem)[0]  # the chain starts with the leaf
        return context, leaf.not_valid_after_utc.timestamp()

    def on_certificate(self, listener: Callable[[float], None]) -> None:
        """Call `listener(not_after)` now if a certificate is loaded, and after every reload."""
        with self._lock:
            self._listeners.append(listener)
            not_after = self.not_after
        if not_after is not None:
            listener(not_after)

    def context(self) -> ssl.SSLContext:
        """The context for a new connection; reloads first if the files changed since the last call.
        Raises ssl.SSLError/OSError only if no certificate has ever loaded."""
        identity = self._file_identity()
        if self._context is not None and identity == self._identity:
            return self._context
        with self._lock:
            if identity != self._identity and self._may_try(identity):
                self._try_reload(identity)
            if self._context is None:
                raise ssl.SSLError(f"no usable certificate in {self.cert_file}: {self._last_error}")
            return self._context

    def _may_try(self, identity: FileIdentity) -> bool:
        """False while a pair that already failed, unchanged since, is being backed off."""
        return identity != self._failed_identity or self._monotonic() >= self._retry_at

    def _try_reload(self, identity: FileIdentity) -> None:
        self.attempts += 1
        try:
            if identity == MISSING:
                raise FileNotFoundError(f"{self.cert_file} or {self.key_file} cannot be found or read")
            context, not_after = self._build()
            if self._file_identity() != identity:  # changed while being read: try again next time
                raise ValueError("the files changed while they were being loaded")
        except (OSError, ssl.SSLError, ValueError) as exc:
            # Often a renewal caught between writing the key and the certificate. The previous context
            # (if any) keeps serving meanwhile.
            self._failed(identity, f"{type(exc).__name__}: {exc}")
            return
        if self._context is not None:
            log.info("certificate %s changed; new connections use the new one", self.cert_file)
        self._context, self._identity, self._last_error = context, identity, None
        self._failed_identity, self._failures, self._warned_at = None, 0, None
        self.not_after = not_after
        self.loads += 1
        for listener in self._listeners:
            listener(not_after)

    def _failed(self, identity: FileIdentity, error: str) -> None:
        now = self._monotonic()
        new_pair = identity != self._failed_identity
        self._failures = 1 if new_pair else self._failures + 1
        self._failed_identity = identity
        self._retry_at = now + min(RETRY_FIRST * 2 ** (self._failures - 1), RETRY_MAX)
        self._last_error = error
        if new_pair or self._warned_at is None or now - self._warned_at >= WARN_INTERVAL:
            self._warned_at = now
            log.warning(
                "cannot load %s with %s (%s; %d attempt(s)); %s",
                self.cert_file,
                self.key_file,
                error,
                self._failures,
                "keeping the previous certificate" if self._context is not None else "nothing to serve",
            )

    def readiness(self) -> str | None:
        """None while a certificate is loaded and not within `expiry_threshold` of its notAfter (checking
        the files for a renewal first), else why not."""
        try:
            self.context()
        except (OSError, ssl.SSLError) as exc:
            return f"TLS certificate not loaded: {exc}"
        not_after = self.not_after
        if not_after is None:
            return None
        left = not_after - self._wall_clock()
        if left > self.expiry_threshold:
            return None
        when = dt.datetime.fromtimestamp(not_after, dt.UTC).isoformat(timespec="seconds")
        state = f"expired at {when}" if left <= 0 else f"expires at {when}, in {_duration(left)}"
        reason = f"the TLS certificate in use ({self.cert_file}) {state}; it is still being served"
        with self._lock:
            pending = self._last_error if self._failed_identity is not None else None
        if pending:
            return f"{reason}, because the files on disk cannot be loaded: {pending}"
        return f"{reason}: renew it (`fhpa certs generate` or cert-manager)"

    def gunicorn_hook(self, _config: Any, _default_factory: Any) -> ssl.SSLContext:
        """gunicorn's `ssl_context(config, default_ssl_context_factory)` setting."""
        return self.context()


def _duration(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m"
