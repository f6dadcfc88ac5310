"""Admission latency and throughput of the webhook, against the floor that TLS, HTTP and JSON set.

Starts two servers on loopback with the same gunicorn shape (gthread workers, TLS with certificates from
`fhpa certs generate`):

* ours: `fhpa webhook serve`, answering real AdmissionReviews (defaulting on /mutate, the full rule set
  on /validate, metrics, certificate reload checks);
* the floor: a bare Flask app under gunicorn that reads the body, parses the JSON and returns a fixed
  AdmissionReview; nothing the webhook does can be cheaper than that.

Then sends N AdmissionReviews at concurrency C to each (keep-alive connections, as the API server
keeps them), alternating the two for several rounds so both see the same background load, and
reports p50, p99 and throughput. The client runs in several processes so that it is not the
bottleneck; it shares the machine's cores with the servers, as a real API server would not.

    .venv/bin/python bench/webhook_latency.py --requests 4000 --concurrency 8 --out docs/webhook-benchmark.md
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import http.client
import json
import multiprocessing
import os
import platform
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FIXED_ANSWER = json.dumps(
    {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "00000000-0000-0000-0000-000000000000", "allowed": True},
    }
).encode()


def floor_app() -> Any:
    """The floor: gunicorn loads this factory (`webhook_latency:floor_app()`)."""
    from flask import Flask, Response, request

    app = Flask("floor")

    @app.post("/<path:_path>")
    def answer(_path: str) -> Response:
        json.loads(request.get_data())
        return Response(FIXED_ANSWER, status=200, content_type="application/json")

    @app.get("/readyz")
    def ready() -> Response:
        return Response(b"{}", status=200, content_type="application/json")

    return app


# --- the reviews sent -----------------------------------------------------------------------------


def _fhpa(name: str, **spec: Any) -> dict[str, Any]:
    body = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "maxReplicas": 20,
        "minReplicas": 2,
        "federatedHPAAssignment": {
            "federatedHPAAssignmentType": "StaticWeighted",
            "clusterAutoscalingPreference": [
                {"targetCluster": {"clusterNames": ["eu-1"]}, "staticWeight": 2},
                {"targetCluster": {"clusterNames": ["us-1"]}, "staticWeight": 1},
            ],
        },
    }
    body.update(spec)
    return {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": body,
    }


def _cron(name: str, schedule: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "CronFederatedHPA",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "autoscaling.karmada.io/v1alpha1",
                "kind": "FederatedHPA",
                "name": "web",
            },
            "rules": [
                {"name": "up", "schedule": schedule, "timeZone": "Europe/Berlin", "targetMinReplicas": 10},
                {"name": "down", "schedule": "0 22 * * *", "targetMinReplicas": 2},
            ],
        },
    }


def review_bodies() -> list[tuple[str, bytes]]:
    """A mix like real traffic: creates and updates of both kinds, defaulting and validation, a denial."""
    from fhpa_api.defaulting import apply_defaults

    objects = [
        _fhpa("web"),
        _cron("nightly", "30 7 * * MON-FRI"),
        _fhpa("bad", minReplicas=30),
        _cron("bad", "61 * * * *"),
    ]
    bodies = []
    for obj in objects:
        for path, sent in (("/mutate", obj), ("/validate", apply_defaults(obj))):
            for operation in ("CREATE", "UPDATE"):
                kind = sent["kind"]
                resource = {
                    "group": "autoscaling.karmada.io",
                    "version": "v1alpha1",
                    "resource": kind.lower() + "s",
                }
                gvk = {"group": "autoscaling.karmada.io", "version": "v1alpha1", "kind": kind}
                request = {
                    "uid": str(uuid.uuid4()),
                    "kind": gvk,
                    "resource": resource,
                    "requestKind": gvk,
                    "requestResource": resource,
                    "name": sent["metadata"]["name"],
                    "namespace": "shop",
                    "operation": operation,
                    "userInfo": {"username": "admin"},
                    "object": sent,
                    "oldObject": copy.deepcopy(sent) if operation == "UPDATE" else None,
                    "dryRun": False,
                }
                review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
                bodies.append((path, json.dumps(review).encode()))
    return bodies


# --- servers ----------------------------------------------------------------------------------------


def generate_certs(out: Path) -> Path:
    """A CA and a serving pair for 127.0.0.1 in ``out``, from `fhpa certs generate`."""
    command = [sys.executable, "-m", "fhpa", "certs", "generate", "--out", str(out), "--service", "bench"]
    command += ["--namespace", "bench", "--ip", "127.0.0.1"]
    subprocess.run(command, cwd=REPO, check=True, capture_output=True)
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _client_context(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


def _wait_ready(port: int, ca: Path, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    stop = time.monotonic() + timeout
    while time.monotonic() < stop:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=_client_context(ca), timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server not ready")


@contextmanager
def serve(argv: list[str], port: int, ca: Path, log: Path) -> Iterator[None]:
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_ready(port, ca, process)
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def our_server(certs: Path, port: int, workers: int, threads: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "fhpa",
        "webhook",
        "serve",
        "--cert-dir",
        str(certs),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--log-level",
        "warning",
    ]


def floor_server(certs: Path, port: int, workers: int, threads: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "--chdir",
        str(REPO / "bench"),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--worker-class",
        "gthread",
        "--threads",
        str(threads),
        "--keep-alive",
        "30",
        "--certfile",
        str(certs / "tls.crt"),
        "--keyfile",
        str(certs / "tls.key"),
        "--no-control-socket",
        "--log-level",
        "warning",
        "webhook_latency:floor_app()",
    ]


# --- load -------------------------------------------------------------------------------------------


def _client_worker(args: tuple[int, str, int, int, int, float, list[tuple[str, bytes]]]) -> list[float]:
    """One client process: `connections` keep-alive connections on threads, `count` requests in all."""
    import threading

    port, ca, connections, count, offset, start_at, bodies = args
    latencies: list[float] = []
    lock = threading.Lock()
    per_connection = [
        count // connections + (1 if i < count % connections else 0) for i in range(connections)
    ]

    def run(index: int, n: int) -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=_client_context(Path(ca)), timeout=30)
        conn.connect()
        mine = []
        while time.time() < start_at:
            time.sleep(0.001)
        for i in range(n):
            path, body = bodies[(offset + index + i * connections) % len(bodies)]
            began = time.perf_counter()
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            mine.append(time.perf_counter() - began)
            if resp.status != 200 or b'"response"' not in data:
                raise RuntimeError(f"HTTP {resp.status}: {data[:200]!r}")
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=run, args=(i, n)) for i, n in enumerate(per_connection) if n]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


@dataclass
class Result:
    latencies: list[float]
    seconds: float

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_load(
    port: int, ca: Path, total: int, concurrency: int, processes: int, bodies: list[tuple[str, bytes]]
) -> Result:
    processes = max(1, min(processes, concurrency))
    conns = [concurrency // processes + (1 if i < concurrency % processes else 0) for i in range(processes)]
    counts = [total * c // concurrency for c in conns]
    counts[0] += total - sum(counts)
    start_at = time.time() + 0.5
    jobs = [(port, str(ca), conns[i], counts[i], i * 7, start_at, bodies) for i in range(processes)]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        parts = pool.map(_client_worker, jobs)
    finished = time.time()
    latencies = [x for part in parts for x in part]
    return Result(latencies, finished - start_at)


# --- report -----------------------------------------------------------------------------------------


def _row(name: str, result: Result) -> str:
    return (
        f"| {name} | {len(result.latencies)} | {result.percentile(0.5) * 1000:.2f} | "
        f"{result.percentile(0.99) * 1000:.2f} | {result.throughput:.0f} |"
    )


def report(args: argparse.Namespace, rounds: list[tuple[Result, Result]]) -> str:
    ours = Result([x for r in rounds for x in r[0].latencies], sum(r[0].seconds for r in rounds))
    floor = Result([x for r in rounds for x in r[1].latencies], sum(r[1].seconds for r in rounds))
    ratio = ours.percentile(0.99) / floor.percentile(0.99)
    lines = [
        "# Webhook latency benchmark",
        "",
        f"`bench/webhook_latency.py --requests {args.requests} --concurrency {args.concurrency} "
        f"--workers {args.workers} --threads {args.threads} --rounds {args.rounds}`, run "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} cores "
        f"({platform.processor() or platform.machine()}), Python {platform.python_version()}.",
        "",
        "Both servers: gunicorn gthread, TLS on loopback with certificates from `fhpa certs generate` "
        "(ECDSA P-256), keep-alive connections (as the API server keeps them). The client runs on the same "
        "cores. The mix: creates and updates of FederatedHPA and CronFederatedHPA to /mutate and /validate, "
        "a quarter of them invalid (denials).",
        "",
        f"Load average when the run ended: {os.getloadavg()[0]:.1f} (other work on the machine competes "
        "for the same cores; the p99s of both servers mostly measure that, which is why they are compared "
        "round by round under the same load).",
        "",
        "| server | reviews | p50 ms | p99 ms | reviews/s |",
        "| --- | ---: | ---: | ---: | ---: |",
        _row("webhook (`fhpa webhook serve`)", ours),
        _row("floor (bare gunicorn + flask, fixed answer)", floor),
        "",
        "Per round (alternating, so both see the same background load):",
        "",
        "| round | webhook p50 / p99 ms | webhook reviews/s | floor p50 / p99 ms | floor reviews/s |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for i, (o, f) in enumerate(rounds, 1):
        lines.append(
            f"| {i} | {o.percentile(0.5) * 1000:.2f} / {o.percentile(0.99) * 1000:.2f} | "
            f"{o.throughput:.0f} | {f.percentile(0.5) * 1000:.2f} / {f.percentile(0.99) * 1000:.2f} | "
            f"{f.throughput:.0f} |"
        )
    verdict_p99 = "met" if ratio <= 1.5 else "NOT met"
    verdict_rate = "met" if ours.throughput >= 500 else "NOT met"
    lines += [
        "",
        f"Targets: p99 within 1.5x of the floor: **{verdict_p99}** (ratio {ratio:.2f}); "
        f"at least 500 reviews/s with 2 workers: **{verdict_rate}** ({ours.throughput:.0f}/s).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=4000, help="reviews per server per round")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent keep-alive connections")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the Markdown report here too")
    args = parser.parse_args(argv)

    bodies = review_bodies()
    with tempfile.TemporaryDirectory(prefix="fhpa-bench-") as tmp:
        certs = generate_certs(Path(tmp) / "certs")
        ca = certs / "ca.crt"
        ours_port, floor_port = _free_port(), _free_port()
        with (
            serve(
                our_server(certs, ours_port, args.workers, args.threads),
                ours_port,
                ca,
                Path(tmp) / "ours.log",
            ),
            serve(
                floor_server(certs, floor_port, args.workers, args.threads),
                floor_port,
                ca,
                Path(tmp) / "floor.log",
            ),
        ):
            for port in (ours_port, floor_port):  # warm up: imports, first handshakes, caches
                run_load(port, ca, 400, args.concurrency, args.client_processes, bodies)
            rounds = []
            for _ in range(args.rounds):
                ours = run_load(ours_port, ca, args.requests, args.concurrency, args.client_processes, bodies)
                floor = run_load(
                    floor_port, ca, args.requests, args.concurrency, args.client_processes, bodies
                )
                rounds.append((ours, floor))
                print(
                    f"round: ours p50 {ours.percentile(0.5) * 1000:.2f} ms"
                    f" p99 {ours.percentile(0.99) * 1000:.2f} ms {ours.throughput:.0f}/s"
                    f" | floor p50 {floor.percentile(0.5) * 1000:.2f} ms"
                    f" p99 {floor.percentile(0.99) * 1000:.2f} ms {floor.throughput:.0f}/s",
                    flush=True,
                )
    text = report(args, rounds)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
