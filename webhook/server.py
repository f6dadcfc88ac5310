"""Run the webhook under gunicorn over TLS: `fhpa webhook serve` ends up here.

gunicorn is configured in code (no config file to ship): threaded workers, so one worker holds many
kept-alive connections from the API server without a thread each while they idle; the certificate
comes from `CertificateReloader` (hot reload); every limit a misbehaving client could lean on is set
(request line and header sizes here, the body limit in the app, read deadlines in the TLS sockets).

Idle-connection floods (review M4). gunicorn 27's gthread worker hands every new connection to a pool
thread that waits up to 5 s for its first byte before parking it on the poller; 16 idle connections
took a valid review from 0.01 s to 9.7 s. Here a new connection may hold a thread only
``first_byte_wait`` (0.05 s) before it is parked on the poller, where it costs no thread (a later first
byte is still served), and a parked or kept-alive connection that stays idle is closed after
``keepalive`` seconds; 500 idle connections now delay a review by 0.35 s at most. Each worker holds at most
``max_connections`` connections (gunicorn's ``worker_connections``), and 16 threads per worker serve
requests. The worker is `webhook.prefetch.PrefetchWorker`: a request is read whole on the worker's
poller, within ``request_timeout`` (the API server's own timeout), before a thread serves it, so slow
senders cost no thread; the TLS socket deadlines (``read_timeout`` per read, ``request_timeout`` in all)
still bound the answer's writing. The NetworkPolicy in manifests/webhook admits only port 8443, and only from
where the API server connects: the real fence against a flood from inside the cluster.

The module is also the process entry point (`python -m webhook.server`): `fhpa webhook serve` sets
PROMETHEUS_MULTIPROC_DIR and re-executes this module, because prometheus_client fixes its storage when
first imported and the `fhpa` command may already have imported it for another subcommand.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_BIND = "0.0.0.0:8443"
CERT_NAME = "tls.crt"
KEY_NAME = "tls.key"
METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


@dataclass(frozen=True)
class ServeOptions:
    """What `fhpa webhook serve` was asked for."""

    cert_dir: Path
    bind: str = DEFAULT_BIND
    workers: int = 2
    threads: int = 16
    read_timeout: float = 10.0
    request_timeout: float = 5.0
    keepalive: float = 15.0
    max_connections: int = 1000
    first_byte_wait: float = 0.05
    log_level: str = "info"
    log_format: str = "json"
    access_log: bool = False
    cert_expiry_threshold: float = 0.0

    def problems(self) -> list[str]:
        """What is wrong with these options, in words; empty when they can be served."""
        found = []
        for name in (CERT_NAME, KEY_NAME):
            if not (self.cert_dir / name).is_file():
                found.append(f"--cert-dir {self.cert_dir} has no {name} (run `fhpa certs generate`)")
        host, sep, port = self.bind.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            found.append(f"--bind {self.bind!r} must be HOST:PORT")
        if self.workers < 1 or self.threads < 1:
            found.append("--workers and --threads must be at least 1")
        if min(self.read_timeout, self.request_timeout, self.keepalive, self.first_byte_wait) <= 0:
            found.append("timeouts must be positive")
        if self.cert_expiry_threshold < 0:
            found.append("--cert-expiry-threshold cannot be negative")
        if self.max_connections <= self.threads:
            found.append("--max-connections must be more than --threads")
        return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `fhpa webhook serve` (and of `python -m webhook.server`)."""
    parser.add_argument("--cert-dir", required=True, type=Path, help="directory holding tls.crt and tls.key")
    parser.add_argument(
        "--bind", default=DEFAULT_BIND, help=f"HOST:PORT to listen on (default {DEFAULT_BIND})"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    parser.add_argument("--threads", type=int, default=16, help="threads per worker (default 16)")
    parser.add_argument(
        "--max-connections",
        type=int,
        default=1000,
        help="connections one worker holds open at most, idle ones included (default 1000)",
    )
    parser.add_argument(
        "--first-byte-wait",
        type=float,
        default=0.05,
        help="seconds a new connection may hold a thread before its first byte (default 0.05)",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=10.0,
        help="seconds a client may leave a started request without sending (default 10)",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=5.0,
        help="seconds a client may take to send a request and read the answer; the API server gives "
        "up after the webhook configurations' timeoutSeconds (default 5, as they ship)",
    )
    parser.add_argument(
        "--keepalive",
        type=float,
        default=15.0,
        help="seconds an idle connection (kept alive, or new and silent) stays open (default 15)",
    )
    parser.add_argument(
        "--cert-expiry-threshold",
        type=float,
        default=0.0,
        help="/readyz fails once the serving certificate expires within this many seconds "
        "(default 0: only once it has expired; every replica reads the same certificate, so a "
        "positive value makes them all unready together that much earlier)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument(
        "--log-format",
        default="json",
        choices=["json", "text"],
        help="json (default: one object per line, as the controller logs) or text",
    )
    parser.add_argument("--access-log", action="store_true", help="log every request (off by default)")


def options_from_args(args: argparse.Namespace) -> ServeOptions:
    return ServeOptions(
        cert_dir=args.cert_dir,
        bind=args.bind,
        workers=args.workers,
        threads=args.threads,
        read_timeout=args.read_timeout,
        request_timeout=args.request_timeout,
        keepalive=args.keepalive,
        max_connections=args.max_connections,
        first_byte_wait=args.first_byte_wait,
        log_level=args.log_level,
        log_format=args.log_format,
        access_log=args.access_log,
        cert_expiry_threshold=args.cert_expiry_threshold,
    )


def to_argv(options: ServeOptions) -> list[str]:
    argv = [
        "--cert-dir",
        str(options.cert_dir),
        "--bind",
        options.bind,
        "--workers",
        str(options.workers),
        "--threads",
        str(options.threads),
        "--read-timeout",
        str(options.read_timeout),
        "--request-timeout",
        str(options.request_timeout),
        "--keepalive",
        str(options.keepalive),
        "--max-connections",
        str(options.max_connections),
        "--first-byte-wait",
        str(options.first_byte_wait),
        "--log-level",
        options.log_level,
        "--log-format",
        options.log_format,
        "--cert-expiry-threshold",
        str(options.cert_expiry_threshold),
    ]
    return [*argv, "--access-log"] if options.access_log else argv


def exec_server(options: ServeOptions) -> None:
    """Replace this process with the gunicorn master, metrics storage set up first (see module doc)."""
    metrics_dir = tempfile.mkdtemp(prefix="fhpa-webhook-metrics-")
    env = {**os.environ, METRICS_DIR_ENV: metrics_dir}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "webhook.server", *to_argv(options)], env)


def gunicorn_settings(options: ServeOptions, reloader: Any) -> dict[str, Any]:
    """gunicorn settings for these options; `reloader` supplies the TLS contexts."""
    from webhook.logs import gunicorn_logger_class
    from webhook.metrics import worker_exited

    tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return {
        "bind": [options.bind],
        "workers": options.workers,
        "worker_class": "webhook.prefetch.PrefetchWorker",
        "threads": options.threads,
        "worker_connections": options.max_connections,
        "keepalive": max(1, round(options.keepalive)),
        # The arbiter restarts a worker whose main loop stops checking in; gthread's loop never blocks
        # on a client, so this only catches a wedged worker.
        "timeout": 30,
        "graceful_timeout": 10,
        "limit_request_line": 8190,
        "limit_request_fields": 100,
        "limit_request_field_size": 8190,
        "certfile": str(options.cert_dir / CERT_NAME),
        "keyfile": str(options.cert_dir / KEY_NAME),
        "ssl_context": reloader.gunicorn_hook,
        "do_handshake_on_connect": False,
        "worker_tmp_dir": tmp_dir,
        "control_socket_disable": True,
        "proc_name": "fhpa-webhook",
        "loglevel": options.log_level,
        "logger_class": gunicorn_logger_class(options.log_format),
        "errorlog": "-",
        "accesslog": "-" if options.access_log else None,
        "child_exit": lambda _arbiter, worker: worker_exited(worker.pid),
    }


def bound_first_byte_wait(seconds: float) -> bool:
    """Set how long gthread lets a new, silent connection hold a pool thread (gunicorn 27 keeps it in a
    module constant, read at each use, so the forked workers inherit it). False if this gunicorn has no
    such setting (then its own behaviour applies, and the NetworkPolicy is the remaining fence)."""
    from gunicorn.workers import gthread

    if not hasattr(gthread, "DEFAULT_WORKER_DATA_TIMEOUT"):
        logging.getLogger(__name__).warning("this gunicorn has no first-byte wait to bound")
        return False
    gthread.DEFAULT_WORKER_DATA_TIMEOUT = seconds
    return True


def bind_problem(bind: str) -> str | None:
    """Why ``bind`` cannot be listened on (a port in use, an address not on this host), or None.

    Checked before gunicorn starts: its master retries a busy port five times, a second apart, logging
    each, and then exits with a line that does not say which flag to change.
    """
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
            probe.bind(address)
    except OSError as exc:
        return f"cannot listen on --bind {bind}: {exc.strerror or exc}"
    return None


def run_gunicorn(options: ServeOptions) -> int:
    """Serve until gunicorn's master exits (SIGTERM/SIGINT)."""
    from gunicorn.app.base import BaseApplication

    from webhook import logs, prefetch
    from webhook.app import MAX_BODY_BYTES, create_app
    from webhook.cost import BUDGET_BYTES
    from webhook.metrics import WebhookMetrics
    from webhook.tlsreload import CertificateReloader

    logs.configure(options.log_level, options.log_format)  # before the reloader logs its first load
    reloader = CertificateReloader(
        options.cert_dir / CERT_NAME,
        options.cert_dir / KEY_NAME,
        options.read_timeout,
        options.request_timeout,
        expiry_threshold=options.cert_expiry_threshold,
    )
    problem = reloader.readiness()
    if problem:
        print(f"fhpa webhook serve: {problem}", file=sys.stderr)
        if reloader.not_after is None:  # nothing to serve; an expiring certificate starts, unready
            return 2
    busy = bind_problem(options.bind)
    if busy:
        print(f"fhpa webhook serve: {busy}", file=sys.stderr)
        return 1
    settings = gunicorn_settings(options, reloader)
    bound_first_byte_wait(options.first_byte_wait)
    prefetch.configure(MAX_BODY_BYTES, options.request_timeout, BUDGET_BYTES)

    class WebhookServer(BaseApplication):
        def load_config(self) -> None:
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self) -> Any:  # in each worker: the worker's own metrics follow its reloads
            metrics = WebhookMetrics()
            reloader.on_certificate(metrics.set_certificate_expiry)
            return create_app(readiness=reloader.readiness, metrics=metrics)

    try:
        WebhookServer().run()
    finally:
        metrics_dir = os.environ.get(METRICS_DIR_ENV, "")
        if Path(metrics_dir).name.startswith("fhpa-webhook-metrics-"):
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webhook.server", description=__doc__)
    add_arguments(parser)
    options = options_from_args(parser.parse_args(argv))
    problems = options.problems()
    if problems:
        for problem in problems:
            print(f"fhpa webhook serve: {problem}", file=sys.stderr)
        return 2
    return run_gunicorn(options)


if __name__ == "__main__":
    sys.exit(main())
