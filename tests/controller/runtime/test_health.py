"""/healthz, /readyz and /metrics over HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request

from controller.runtime.health import HealthServer
from controller.runtime.metrics import Metrics


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_probes_report_their_checks_and_metrics_are_served() -> None:
    ready = {"value": False}
    metrics = Metrics()
    metrics.on_action("create", "member1", True)

    def broken() -> tuple[bool, str]:
        raise RuntimeError("boom")

    server = HealthServer(
        "127.0.0.1:0",
        metrics,
        liveness={"workers": lambda: (True, "ok")},
        readiness={"informers": lambda: (ready["value"], "down")},
    )
    port = server.start()
    try:
        assert get(port, "/healthz")[0] == 200
        code, body = get(port, "/readyz")
        assert code == 503 and "[-]informers failed: down" in body
        ready["value"] = True
        assert get(port, "/readyz")[0] == 200
        code, body = get(port, "/metrics")
        assert code == 200 and 'fhpa_member_actions_total{action="create",result="success"} 1.0' in body
        assert get(port, "/nope")[0] == 404
        server.liveness["broken"] = broken
        code, body = get(port, "/healthz")
        assert code == 503 and "[-]broken failed: RuntimeError" in body
    finally:
        server.stop()


def test_idle_connections_time_out_and_are_bounded() -> None:
    """L4: each idle connection held a thread forever (200 connections, 202 threads). Now a silent
    client is dropped after the idle timeout, connections beyond the bound are closed at once, and
    probes are answered meanwhile."""
    import socket
    import threading
    import time

    server = HealthServer("127.0.0.1:0", Metrics(), idle_timeout=1.0, max_connections=8)
    port = server.start()
    baseline = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(12)]
    try:
        time.sleep(0.3)
        assert threading.active_count() <= baseline + 8  # bounded, not one thread each
        time.sleep(1.5)  # past the idle timeout: the held ones were dropped
        assert get(port, "/healthz")[0] == 200
        for sock in idle:
            sock.settimeout(2)
            assert sock.recv(1) == b""  # closed by the server
        assert threading.active_count() <= baseline + 1
    finally:
        for sock in idle:
            sock.close()
        server.stop()


def test_readyz_says_waiting_while_the_controller_starts_not_failed() -> None:
    """At start the caches list and the API has not answered yet: not ready, but nothing is broken, and
    the body says what it waits for; one broken check among them still reads failed."""
    checks = {
        "caches": lambda: (False, "control-plane API reachable; waiting for fhpa, cronfhpa"),
        "api": lambda: (False, "control-plane API not reached yet"),
    }
    server = HealthServer("127.0.0.1:0", Metrics(), readiness=dict(checks))
    port = server.start()
    try:
        code, body = get(port, "/readyz")
        assert code == 503
        assert body.splitlines() == [
            "[-]api waiting: control-plane API not reached yet",
            "[-]caches waiting: control-plane API reachable; waiting for fhpa, cronfhpa",
            "waiting",
        ]
        server.readiness["api"] = lambda: (False, "control-plane API not reached for 40.0s (window 30s)")
        code, body = get(port, "/readyz")
        assert code == 503 and body.splitlines()[0].startswith("[-]api failed:")
        assert body.splitlines()[-1] == "failed"
    finally:
        server.stop()


def test_probes_on_their_own_port_pass_while_idle_connections_hold_the_metrics_port() -> None:
    """N7: idle connections to the metrics port took every slot, and kubelet probes sent there failed
    (the controller would have been restarted). The probe port has slots of its own.

    A small slot count stands for the default 64: filling 64 slots meant 200 connects, and the listen
    backlog made the client wait a SYN retry (1 s) every few connects."""
    import socket

    server = HealthServer(
        "127.0.0.1:0",
        Metrics(),
        liveness={"loops": lambda: (True, "ok")},
        readiness={"informers": lambda: (True, "ok")},
        idle_timeout=60.0,
        max_connections=4,
        probe_bind="127.0.0.1:0",
    )
    port = server.start()
    assert server.probe_port is not None
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
    try:
        codes = [get(server.probe_port, path)[0] for _ in range(15) for path in ("/healthz", "/readyz")]
        assert codes == [200] * 30
        assert get(server.probe_port, "/metrics")[0] == 404  # metrics only where they are scraped
        try:  # the flood works against the shared port: its slots are all taken
            shared = get(port, "/healthz")[0]
        except OSError:
            shared = 0
        assert shared != 200
    finally:
        for sock in idle:
            sock.close()
        server.stop()
