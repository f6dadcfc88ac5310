"""Takeover benchmark: how long the fleet goes unserved when the leader stops, warm standby against cold.

The world is bench/controller_scale.py's (N FederatedHPAs over M fake member servers of P pods each, a
FakeKube control plane), with leader election on: every controller runs ``fhpa controller run`` with its
production defaults and a metrics port of its own, except a Lease of 120 s renewed within 90 s: on a
busy shared machine the Python control plane can answer a renewal later than the default 10 s, and a
leader that loses its Lease mid-run exits. A SIGTERM releases the Lease, so the standby takes it at its
next retry (2 s) whatever the duration.

1. Controller A starts and leads, and controller B starts beside it as a warm standby (the default).
   A's initial sync ends as in controller_scale.py (a status row for every member in every
   FederatedHPA, then no member write for ``--quiet-seconds``); B is waited for until its ``/readyz``
   says its caches synced.
2. **warm**: A gets SIGTERM (it releases the Lease); once A has exited, pods of one FederatedHPA's
   workload in member0 turn Unschedulable (as in controller_scale.py's reactions). Timed: from the
   SIGTERM to B's first member write for that FederatedHPA.
3. **cold**: controller C starts with ``--no-warm-standby`` (it lists nothing until it leads); B gets
   SIGTERM, and the same is timed for C with another FederatedHPA.

Printed (``--json``): per scenario ``takeover_s`` (SIGTERM to the reacting member write), ``exit_s``
(SIGTERM to the old leader's exit), and the standby's RSS before it took over beside the leader's;
``initial_sync_s`` of A. The world is shared by both scenarios, so the member servers are seeded once.

    .venv/bin/python bench/takeover.py --json
    .venv/bin/python bench/takeover.py --fhpas 1000 --clusters 10 --pods 10000 --json

Limits: as controller_scale.py's (Python member servers, every process on the same cores); see
docs/scale.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from controller_scale import (
    REPO,
    SYSTEM,
    Run,
    fleet,
    fleet_arguments,
    free_port,
    log,
    peak_rss_mib,
    wait_initial_sync,
)


class Controller:
    """One ``fhpa controller run`` process with leader election and its own /readyz."""

    def __init__(self, name: str, kubeconfig: Path, workdir: Path, extra: list[str], log_level: str) -> None:
        self.name = name
        self.port = free_port()
        self.log = (workdir / f"{name}.log").open("wb")
        cmd = [
            sys.executable, "-m", "fhpa", "controller", "run",
            "--kubeconfig", str(kubeconfig),
            "--namespace", SYSTEM,
            "--metrics-bind", f"127.0.0.1:{self.port}",
            "--log-level", log_level,
            "--lease-duration", "120", "--renew-deadline", "90",
            *extra,
        ]  # fmt: skip
        log(f"starting controller {name}: {' '.join(cmd[3:])}")
        self.proc = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )

    def readyz(self) -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as resp:
                return str(resp.read().decode())
        except Exception as exc:  # not listening yet, or 503 while waiting
            body = getattr(exc, "read", None)
            return body().decode() if callable(body) else ""

    def rss_mib(self) -> float | None:
        return peak_rss_mib(self.proc.pid, field="VmRSS")

    def stop(self, timeout: float = 60.0) -> float:
        """SIGTERM; the seconds until the process exited."""
        start = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
        return time.monotonic() - start


def wait_standby(standby: Controller, want: str, timeout: float, leading: bool = False) -> float:
    """Until the controller's /readyz names ``want`` (and, with ``leading``, no longer says standby);
    the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if standby.proc.poll() is not None:
            raise RuntimeError(f"controller {standby.name} exited while waiting (see its log)")
        body = standby.readyz()
        if want in body and not (leading and "standby" in body):
            return time.monotonic() - start
        time.sleep(2.0)
    raise RuntimeError(f"controller {standby.name}: no {want!r} on /readyz within {timeout:.0f}s")


def take_over(
    run: Run, leader: Controller, standby: Controller, target: str, args: argparse.Namespace
) -> dict:
    """Stop the leader; pend pods of ``target`` in member0; time the standby's first write for it."""
    rss = {"leader_rss_mib": leader.rss_mib(), "standby_rss_mib": standby.rss_mib()}
    t_stop = time.monotonic()
    exit_s = leader.stop()
    per_deployment = max(1, args.pods // max(args.fhpas, 1))
    pended = run.members[0].call("pend", deployment=target, count=max(1, min(args.pending, per_deployment)))
    while time.monotonic() - t_stop < args.takeover_timeout:
        if standby.proc.poll() is not None:
            raise RuntimeError(f"controller {standby.name} exited during the takeover (see its log)")
        writes = [w for m in run.members for w in m.call("writes_since", t=t_stop)["writes"]]
        seen = [t for t, _method, path in writes if target in path.split("/")]
        if seen:
            run.members[0].call("restore", pods=pended["pods"])
            return {"takeover_s": round(min(seen) - t_stop, 2), "exit_s": round(exit_s, 2), **rss}
        time.sleep(0.2)
    return {"takeover_s": None, "exit_s": round(exit_s, 2), **rss}


def run_benchmark(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"fhpas": args.fhpas, "clusters": args.clusters, "pods_per_member": args.pods}
    workdir = Path(tempfile.mkdtemp(prefix="fhpa-takeover-"))
    targets = [f"w-{i}" for i in random.Random(5).sample(range(args.fhpas), 2)]
    started = time.monotonic()
    controllers: list[Controller] = []
    with fleet(args, workdir) as (run, kubeconfig):

        def start(name: str, *extra: str) -> Controller:
            controllers.append(Controller(name, kubeconfig, workdir, [*extra], args.log_level))
            return controllers[-1]

        try:
            a = start("a")
            run.controller = a.proc
            wait_standby(a, "control-plane-api ok", args.sync_timeout, leading=True)  # before b starts
            b = start("b")
            result["initial_sync_s"] = round(wait_initial_sync(run, args, args.quiet_seconds), 1)
            log(f"a synced after {result['initial_sync_s']}s")
            result["warm_standby_sync_s"] = round(wait_standby(b, "caches synced", args.sync_timeout), 1)
            log(f"b (warm standby) synced after {result['warm_standby_sync_s']}s; stopping a")
            result["warm"] = take_over(run, a, b, targets[0], args)
            log(f"warm takeover: {result['warm']}")
            c = start("c", "--no-warm-standby")
            wait_standby(c, "keeps no caches", args.sync_timeout)
            time.sleep(args.settle_seconds)  # b's first pass over every object is over before it stops
            log("c (cold standby) up; stopping b")
            result["cold"] = take_over(run, b, c, targets[1], args)
            log(f"cold takeover: {result['cold']}")
        finally:
            for controller in controllers:  # before the member servers go
                controller.stop(20)
    result["wall_s"] = round(time.monotonic() - started, 1)
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    if args.keep:
        result["workdir"] = str(workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fleet_arguments(p)
    p.add_argument("--pending", type=int, default=2, help="pods made Unschedulable at the takeover")
    p.add_argument("--sync-timeout", type=float, default=1800.0)
    p.add_argument("--takeover-timeout", type=float, default=1200.0)
    p.add_argument("--settle-seconds", type=float, default=30.0, help="pause before the cold takeover")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run_benchmark(args)
    print(
        json.dumps(result, sort_keys=True)
        if args.json
        else "\n".join(f"{k:24} {v}" for k, v in result.items())
    )
    warm, cold = result.get("warm") or {}, result.get("cold") or {}
    return 0 if warm.get("takeover_s") is not None and cold.get("takeover_s") is not None else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
