"""Run the real webhook for tests and the benchmark: certificates from `fhpa certs generate`, the server
from `fhpa webhook serve` on loopback, and an HTTPS client that verifies it against the generated CA."""

from __future__ import annotations

import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.processes import free_port

REPO = Path(__file__).resolve().parents[2]
SERVICE = "fhpa-webhook"
NAMESPACE = "fhpa-system"


def fhpa_command(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the `fhpa` command as a user would (through the package's entry point)."""
    return subprocess.run(
        [sys.executable, "-m", "fhpa", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=check,
        timeout=120,
    )


def generate_certs(out: Path, *extra: str) -> str:
    """`fhpa certs generate` for loopback; returns the printed caBundle."""
    result = fhpa_command(
        "certs",
        "generate",
        "--out",
        str(out),
        "--service",
        SERVICE,
        "--namespace",
        NAMESPACE,
        "--ip",
        "127.0.0.1",
        *extra,
    )
    return result.stdout.strip()


def client_context(*ca_files: Path) -> ssl.SSLContext:
    """A client context trusting only these CAs, checking the certificate's IP SAN."""
    context = ssl.create_default_context(cafile=None)
    context.load_verify_locations(cadata="".join(Path(f).read_text() for f in ca_files))
    return context


@dataclass
class RunningWebhook:
    port: int
    cert_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def connection(self, *ca_files: Path, timeout: float = 10) -> http.client.HTTPSConnection:
        context = client_context(*(ca_files or (self.cert_dir / "ca.crt",)))
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=timeout)

    def request(
        self, method: str, path: str, body: Any = None, *ca_files: Path, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """One request on a fresh connection; JSON answers are decoded."""
        conn = self.connection(*ca_files)
        try:
            data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
            conn.request(
                method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})}
            )
            resp = conn.getresponse()
            raw = resp.read()
            kind = resp.getheader("Content-Type", "")
            return resp.status, json.loads(raw) if kind.startswith("application/json") else raw.decode()
        finally:
            conn.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def wait_ready(server: RunningWebhook, deadline: float = 30, statuses: Sequence[int] = (200,)) -> None:
    """Until /readyz answers with one of `statuses` (200: ready; (200, 503): serving at all)."""
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        if server.process.poll() is not None:
            raise RuntimeError(f"webhook exited with {server.process.returncode}:\n{server.log()}")
        try:
            if server.request("GET", "/readyz")[0] in statuses:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"webhook not ready after {deadline}s:\n{server.log()}")


@contextmanager
def run_webhook(
    cert_dir: Path,
    log_dir: Path,
    extra: Sequence[str] = (),
    workers: int = 2,
    command: Sequence[str] | None = None,
    port: int | None = None,
    ready_statuses: Sequence[int] = (200,),
) -> Iterator[RunningWebhook]:
    """`fhpa webhook serve` on a free loopback port, stopped (by its own pid) on exit."""
    port = port or free_port()
    log_path = log_dir / f"webhook-{port}.log"
    argv = list(command or [sys.executable, "-m", "fhpa", "webhook", "serve"])
    argv += ["--cert-dir", str(cert_dir), "--bind", f"127.0.0.1:{port}", "--workers", str(workers), *extra]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv,
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    server = RunningWebhook(port, cert_dir, process, log_path)
    try:
        wait_ready(server, statuses=ready_statuses)
        yield server
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the gunicorn master we started, then its own process group if it lingers."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
