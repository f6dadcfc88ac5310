"""``/healthz``, ``/readyz`` and ``/metrics`` on a small HTTP server in a daemon thread.

Liveness and readiness are separate on purpose: ``/healthz`` fails only when the process is wedged
(the kubelet restarts it), ``/readyz`` fails while the controller cannot do its job (the control-plane
API has not answered recently, or, on the leader, the caches have not synced), which keeps it out of a
Service without a restart. A standby replica waiting for the leader Lease is ready as long as it can
reach the API: it is doing exactly what it should. A down API server never fails liveness: restarting
the controller would not bring the API server back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from controller.runtime.metrics import CONTENT_TYPE_LATEST, Metrics

log = logging.getLogger(__name__)

Check = Callable[[], tuple[bool, str]]
"""A named probe answers (ok, detail)."""


class Heartbeats:
    """Each long-running loop beats once per turn, saying when its next beat is due at the latest.

    A loop that misses its deadline is wedged (deadlocked, or stuck in a call without a timeout): a
    thread that is alive but no longer turning looks healthy to ``is_alive()``, so liveness asks here.
    """

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._due: dict[str, float] = {}

    def beat(self, name: str, within: float) -> None:
        """``name`` turned now; it must turn again within ``within`` seconds."""
        with self._lock:
            self._due[name] = self._monotonic() + within

    def forget(self, name: str) -> None:
        """``name`` ended on purpose (shutdown): it is no longer expected to beat."""
        with self._lock:
            self._due.pop(name, None)

    def overdue(self) -> dict[str, float]:
        """Loops past their deadline, with how many seconds late."""
        now = self._monotonic()
        with self._lock:
            return {name: now - due for name, due in self._due.items() if now > due}


class _BoundedServer(ThreadingHTTPServer):
    """A threading HTTP server that holds at most ``max_connections`` connections: one more is closed at
    once rather than given a thread (an idle-connection flood cannot grow threads without bound)."""

    max_connections = 64

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots = threading.BoundedSemaphore(self.max_connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class HealthServer:
    """/metrics, /healthz, /readyz over plain HTTP. Every connection has a socket timeout (an idle or
    slow client is dropped after ``idle_timeout`` seconds) and at most ``max_connections`` are served at
    once (review L4: without these, each idle connection held a thread forever).

    With ``probe_bind``, the probes are also served on a listener of their own, with its own connection
    slots and no /metrics: anyone who can reach the metrics port can fill its slots with idle
    connections, and a kubelet probe that then finds no slot fails and restarts a healthy controller.
    The probe port needs to be reachable only from the kubelet (the NetworkPolicy does not open it)."""

    def __init__(
        self,
        bind: str,
        metrics: Metrics,
        liveness: dict[str, Check] | None = None,
        readiness: dict[str, Check] | None = None,
        *,
        idle_timeout: float = 5.0,
        max_connections: int = 64,
        probe_bind: str | None = None,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self._address = _address(bind)
        self._probe_address = _address(probe_bind) if probe_bind else None
        self.metrics = metrics
        self.liveness = dict(liveness or {})
        self.readiness = dict(readiness or {})
        self._servers: list[ThreadingHTTPServer] = []
        self.probe_port: int | None = None

    def start(self) -> int:
        """Start serving; returns the metrics port (useful with port 0; ``probe_port`` is the other)."""
        port = self._serve(self._address, with_metrics=True)
        if self._probe_address is not None:
            self.probe_port = self._serve(self._probe_address, with_metrics=False)
        return port

    def _serve(self, address: tuple[str, int], with_metrics: bool) -> int:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = outer.idle_timeout  # applied to the socket: a silent client is dropped

            def log_message(self, format: str, *args: object) -> None:
                pass  # probes every few seconds would drown the log

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics" and with_metrics:
                    self._send(200, outer.metrics.render(), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/livez"):
                    self._send(*_run_checks(outer.liveness))
                elif path == "/readyz":
                    self._send(*_run_checks(outer.readiness))
                else:
                    self._send(404, b"not found\n")

            def _send(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(_BoundedServer):
            max_connections = outer.max_connections

        server = Server(address, Handler)
        server.daemon_threads = True
        self._servers.append(server)
        name = "health" if with_metrics else "probes"
        threading.Thread(target=server.serve_forever, name=name, daemon=True).start()
        port = int(server.server_address[1])
        log.info(f"{name} server listening", extra={"address": f"{address[0]}:{port}"})
        return port

    def stop(self) -> None:
        while self._servers:
            server = self._servers.pop()
            server.shutdown()
            server.server_close()


def _address(bind: str) -> tuple[str, int]:
    host, _, port = bind.rpartition(":")
    return host or "0.0.0.0", int(port)


WAITING_MARKS = ("waiting for", "not reached yet")
"""A check not passing whose detail says one of these is on its way (caches listing, the first answer of
the API at start), not broken."""


def _word(passed: bool, detail: str) -> str:
    """ok, waiting or failed: an operator who reads "failed" during a normal start goes looking for a
    fault; "waiting for fhpa" says what the process is doing and that it needs nothing."""
    if passed:
        return "ok"
    return "waiting" if any(mark in detail for mark in WAITING_MARKS) else "failed"


def _run_checks(checks: dict[str, Check]) -> tuple[int, bytes]:
    lines, words = [], []
    for name, check in sorted(checks.items()):
        try:
            passed, detail = check()
        except Exception as exc:  # a broken probe is a failed probe, never a crashed server
            passed, detail = False, f"{type(exc).__name__}"
        words.append(_word(passed, detail))
        lines.append(f"[{'+' if passed else '-'}]{name} {words[-1]}: {detail}")
    ok = all(w == "ok" for w in words)
    lines.append("ok" if ok else "failed" if "failed" in words else "waiting")
    return (200 if ok else 503), ("\n".join(lines) + "\n").encode()
