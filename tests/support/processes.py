"""The process side of the real-server harnesses (tests/support/realapi.py, tests/support/kubemember.py).

Both start a handful of server processes for one test "cluster": each in its own process group (so a
stop kills the children a server forks too), its output in ``<workdir>/<component>.log``, on loopback
ports probed just before the start. What a start failure needs to be understood is the end of a log,
so the errors quote it. Each serves HTTPS on its port to an admin client certificate: the base class
holds that client and the wait for ``/readyz`` as well. A cluster started and never stopped (a test
interrupted, a fixture that raised) is stopped at interpreter exit, never left running on a shared
machine.
"""

from __future__ import annotations

import atexit
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

LOOPBACK_NAMES = "127.0.0.1,localhost,::1"


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports free now (a child may still lose one to another process)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port() -> int:
    """One loopback port free now (for a process that binds it itself: a metrics or serving port)."""
    return free_ports(1)[0]


def stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process group, then SIGKILL what is left after ``grace`` seconds."""
    if proc.poll() is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # stray children of a dead leader
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log, or why it cannot be read."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"({path} not readable)"
    return "\n".join(text[-lines:])


def etcd_argv(etcd: Path, data_dir: Path, port: int, peer_port: int) -> list[str]:
    """A single-member etcd on loopback for one test cluster, logging only warnings (to its log file)."""
    url, peer = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer_port}"
    return [
        str(etcd),
        "--name", "default",
        "--data-dir", str(data_dir),
        "--listen-client-urls", url,
        "--advertise-client-urls", url,
        "--listen-peer-urls", peer,
        "--initial-advertise-peer-urls", peer,
        "--initial-cluster", f"default={peer}",
        "--logger", "zap",
        "--log-outputs", "stderr",
        "--log-level", "warn",
    ]  # fmt: skip


def child_env() -> dict[str, str]:
    """This environment without the user's KUBE* settings, with loopback kept off any proxy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    for var in ("NO_PROXY", "no_proxy"):
        env[var] = f"{env[var]},{LOOPBACK_NAMES}" if env.get(var) else LOOPBACK_NAMES
    return env


# Strong references: a cluster that was started but never stopped is still stopped at exit.
_RUNNING: set[ServerProcesses] = set()
_RUNNING_LOCK = threading.Lock()


@atexit.register
def _stop_all_at_exit() -> None:
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for cluster in running:
        with contextlib.suppress(Exception):
            cluster.stop()


class ServerProcesses:
    """Base of a harness cluster: its work directory, its processes by component, their logs.

    A subclass sets ``name``, ``port`` and ``ready_timeout``, gives its admin credentials in
    ``_ssl_context()``, and calls ``_open_workdir`` in its ``start()`` and ``_close_workdir`` at the end
    of its ``stop()``, which must be safe to call twice."""

    name: str
    port: int
    ready_timeout: float
    _workdir: Path | None = None

    def __init__(self) -> None:
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._workdir = None

    def stop(self) -> None:
        raise NotImplementedError

    def _ssl_context(self) -> ssl.SSLContext:
        raise NotImplementedError

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            raise RuntimeError(f"{type(self).__name__} {self.name} is not started")
        return self._workdir

    def log_path(self, component: str) -> Path:
        return self.workdir / f"{component}.log"

    def pids(self) -> dict[str, int]:
        """Process ids of the running components (each leads its own process group)."""
        return {comp: proc.pid for comp, proc in self._procs.items() if proc.poll() is None}

    def _open_workdir(self, prefix: str) -> None:
        self._workdir = Path(tempfile.mkdtemp(prefix=prefix))
        with _RUNNING_LOCK:
            _RUNNING.add(self)

    def _close_workdir(self, *, keep: bool, label: str) -> None:
        with _RUNNING_LOCK:
            _RUNNING.discard(self)
        if self._workdir is None:
            return
        if keep:
            sys.stderr.write(f"[{label}] work directory and logs kept in {self._workdir}\n")
        else:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None

    def _spawn(
        self,
        component: str,
        cmd: list[str],
        *,
        stdout: int | IO[bytes] | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``component`` in its own process group, stderr (and stdout unless given) to its log."""
        log = open(self.log_path(component), "ab")  # noqa: SIM115 - handed to the child
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log if stdout is None else stdout,
                stderr=log,
                cwd=self.workdir,
                env={**child_env(), **(env or {})},
                start_new_session=True,  # own process group: a stop kills the whole group
            )
        finally:
            log.close()
        self._procs[component] = proc
        return proc

    def _stop_component(self, component: str, grace: float) -> None:
        proc = self._procs.pop(component, None)
        if proc is not None:
            stop_group(proc, grace)

    def _exited(self, components: tuple[str, ...] | None = None) -> str | None:
        """Why the first of ``components`` (default: all) that is no longer running ended, with its log."""
        for comp, proc in self._procs.items():
            if (components is None or comp in components) and proc.poll() is not None:
                return (
                    f"{comp} exited with {proc.returncode}; last lines of "
                    f"{self.log_path(comp)}:\n{tail(self.log_path(comp))}"
                )
        return None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        *,
        timeout: float = 30,
    ) -> tuple[int, Any]:
        """A raw HTTPS request with the admin cert; ``(status, parsed JSON or text)``."""
        conn = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self._ssl_context(), timeout=timeout
        )
        try:
            headers = {"Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw.decode(errors="replace")

    def _wait_readyz(
        self, error: type[Exception], apiserver: str, watched: tuple[str, ...] | None = None
    ) -> None:
        """Return once ``/readyz`` answers 200; raise ``error`` with the log's end when one of ``watched``
        (default: every component) exits first or ``ready_timeout`` passes."""
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            exited = self._exited(watched)
            if exited is not None:
                raise error(f"{self.name}: during start-up: {exited}")
            try:
                status, body = self.request("GET", "/readyz", timeout=5)
                if status == 200:
                    return
                last = f"HTTP {status}: {str(body)[-300:]}"
            except (OSError, http.client.HTTPException) as exc:
                last = repr(exc)
            time.sleep(0.2)
        log = self.log_path(apiserver)
        raise error(
            f"{self.name}: {apiserver} not ready after {self.ready_timeout:.0f}s ({last}); "
            f"last lines of {log}:\n{tail(log)}"
        )
