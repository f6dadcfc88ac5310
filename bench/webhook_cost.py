"""The webhook under worst-case reviews: peak memory of the whole server, and a normal review's latency.

Starts `fhpa webhook serve` on loopback as shipped (2 workers, 16 threads each), sends ``--heavy``
concurrent reviews of about 3 MiB each (half of them the 780,000-item `spec.metrics: [{}]` body, half
the most JSON containers a body may hold and still be parsed, padded to the size limit), and meanwhile
times normal reviews one after another. The server's resident memory (master and workers, summed) is
sampled every 20 ms.

    .venv/bin/python bench/webhook_cost.py --heavy 32
    .venv/bin/python bench/webhook_cost.py --heavy 32 --source /path/to/another/checkout   # to compare
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import webhook_latency as shared  # bench/ is on the path when this file runs as a script

sys.path.insert(0, str(shared.REPO))

from tests.support.reviews import fhpa, review
from webhook.app import MAX_BODY_BYTES

MiB = 1024 * 1024
CONTAINER_CAP = 150_000  # webhook.cost.MAX_CONTAINERS; fixed here so an older checkout gets the same bodies


def heavy_bodies() -> list[bytes]:
    """The two worst cases: most containers in a body, and most containers the cap lets through."""
    many = json.dumps(review(fhpa(metrics=[{}] * 780_000))).encode()
    items = CONTAINER_CAP - 100
    pad = "x" * ((MAX_BODY_BYTES - 4096) // items - 12)
    capped = json.dumps(review(fhpa(metrics=[{"p": pad}] * items))).encode()
    assert max(len(many), len(capped)) <= MAX_BODY_BYTES
    return [many, capped]


def rss_of_group(leader: int) -> int:
    """Resident bytes of the server: the process and its children (gunicorn's workers)."""
    pids = [leader]
    children = Path(f"/proc/{leader}/task/{leader}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def post(port: int, ca: Path, body: bytes, timeout: float = 60) -> tuple[int, float]:
    started = time.perf_counter()
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=shared._client_context(ca), timeout=timeout)
    try:
        conn.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
        status = conn.getresponse().status
    except OSError:
        status = 0
    finally:
        conn.close()
    return status, time.perf_counter() - started


def measure(port: int, ca: Path, leader: int, heavy: int) -> dict[str, object]:
    bodies = heavy_bodies()
    normal = json.dumps(review(fhpa())).encode()
    baseline = rss_of_group(leader)
    peak = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_of_group(leader))
            time.sleep(0.02)

    statuses: Counter[int] = Counter()
    heavy_seconds: list[float] = []

    def send(i: int) -> None:
        status, seconds = post(port, ca, bodies[i % 2])
        statuses[status] += 1
        heavy_seconds.append(seconds)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    senders = [threading.Thread(target=send, args=(i,)) for i in range(heavy)]
    for thread in senders:
        thread.start()
    normal_seconds = []
    while any(t.is_alive() for t in senders):
        status, seconds = post(port, ca, normal)
        normal_seconds.append(seconds if status == 200 else float("inf"))
    for thread in senders:
        thread.join()
    done.set()
    sampler.join()
    return {
        "heavy reviews": heavy,
        "heavy statuses": dict(sorted(statuses.items())),
        "heavy seconds (max)": round(max(heavy_seconds), 2),
        "baseline RSS MiB": round(baseline / MiB, 1),
        "peak RSS MiB": round(peak[0] / MiB, 1),
        "normal reviews timed": len(normal_seconds),
        "normal p50 s": round(statistics.median(normal_seconds), 3),
        "normal max s": round(max(normal_seconds), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--heavy", type=int, default=32, help="concurrent worst-case reviews")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--source", type=Path, default=shared.REPO, help="checkout whose webhook to run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fhpa-bench-") as tmp:
        certs = shared.generate_certs(Path(tmp) / "certs")
        ca, port = certs / "ca.crt", shared._free_port()
        argv = shared.our_server(certs, port, args.workers, args.threads)
        with open(Path(tmp) / "server.log", "wb") as log:
            server = subprocess.Popen(argv, cwd=args.source, stdout=log, stderr=subprocess.STDOUT)
        try:
            shared._wait_ready(port, ca, server)
            time.sleep(1)
            print(json.dumps(measure(port, ca, server.pid, args.heavy), indent=2))
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
