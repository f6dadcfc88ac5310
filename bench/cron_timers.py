"""Benchmark: 10,000 cron rules on one timer heap; p99 firing delay must stay under 1 s.

The rules (one per CronFederatedHPA, each raising a FederatedHPA's minReplicas) are spread over the
minutes of the hour, as a fleet's pre-scaling rules are. The driver is the controller's own loop: one
TimerQueue for every object, ``CronController.reconcile`` against the simulator's in-memory API server.

Virtual time stands still while the controller is idle (the driver jumps to the next deadline) and moves
with the real time the controller spends working, so a fire's delay is exactly the backlog the controller
builds up: time spent on earlier fires of the same moment, heap operations, status writes.

    .venv/bin/python bench/cron_timers.py [--rules 10000] [--hours 1]

Prints the delay percentiles and the throughput; exits 1 when p99 >= 1 s or a fire was lost or repeated.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.cron_controller import CronController
from controller.planning.cron import SCALE_SUCCEEDED
from controller.runtime.timers import TimerQueue
from fhpa_api import API_VERSION
from fhpa_api.models import CronFederatedHPA, FederatedHPA
from simulator.clock import VirtualClock
from simulator.control_plane import SimulatedControlPlane

NAMESPACE = "bench"
START = datetime(2026, 6, 1, 7, 59, 30, tzinfo=UTC)
TARGETS = 100
P99_LIMIT_SECONDS = 1.0

Key = tuple[str, str]


def build(rules: int) -> SimulatedControlPlane:
    """``rules`` CronFederatedHPAs of one rule each, over 60 minutes and 5 zones, on 100 FederatedHPAs."""
    plane = SimulatedControlPlane(VirtualClock(START), {})
    for i in range(TARGETS):
        spec = {
            "scaleTargetRef": {"kind": "Deployment", "name": f"app{i}"},
            "minReplicas": 1,
            "maxReplicas": 1000,
        }
        plane.create(
            FederatedHPA.model_validate(
                {"metadata": {"name": f"app{i}", "namespace": NAMESPACE}, "spec": spec}
            )
        )
    zones = ["UTC", "Europe/London", "America/Los_Angeles", "Asia/Shanghai", "Australia/Sydney"]
    for i in range(rules):
        rule = {
            "name": "pre-scale",
            "schedule": f"{i % 60} * * * *",
            "timeZone": zones[i % len(zones)],
            "targetMinReplicas": 2 + i % 50,
            "maxDelaySeconds": 30,
        }
        ref = {"apiVersion": API_VERSION, "kind": "FederatedHPA", "name": f"app{i % TARGETS}"}
        cron = {
            "metadata": {"name": f"cron{i}", "namespace": NAMESPACE},
            "spec": {"scaleTargetRef": ref, "rules": [rule]},
        }
        plane.create(CronFederatedHPA.model_validate(cron))
    return plane


def run(rules: int, hours: float) -> int:
    started = time.perf_counter()
    plane = build(rules)
    controller = CronController(plane)
    queue: TimerQueue[Key] = TimerQueue()
    deadlines: dict[Key, datetime] = {}
    for i in range(rules):
        key = (NAMESPACE, f"cron{i}")
        wake = controller.reconcile(*key, START)
        if wake is not None:
            queue.schedule(key, wake)
            deadlines[key] = wake
    setup_seconds = time.perf_counter() - started

    end = START + timedelta(hours=hours)
    now = START
    delays: list[float] = []
    busy = 0.0
    while (deadline := queue.next_time()) is not None and deadline <= end:
        now = max(now, deadline)
        tick = time.perf_counter()
        due = queue.pop_due(now)
        now += timedelta(seconds=time.perf_counter() - tick)
        for key in due:
            tick = time.perf_counter()
            wake = controller.reconcile(*key, now)
            if wake is not None:
                queue.schedule(key, wake)
            spent = time.perf_counter() - tick
            busy += spent
            now += timedelta(seconds=spent)
            delays.append((now - deadlines[key]).total_seconds())
            if wake is not None:
                deadlines[key] = wake

    executed = sum(1 for e in plane.events if e.reason == SCALE_SUCCEEDED)
    failed = [e for e in plane.events if e.reason != SCALE_SUCCEEDED]
    scheduled = _scheduled_fires(plane)
    return report(rules, hours, delays, executed, failed, scheduled, busy, setup_seconds)


def _scheduled_fires(plane: SimulatedControlPlane) -> int:
    """Distinct schedule times recorded as successful across all rules (each must appear once)."""
    seen: set[tuple[str, datetime]] = set()
    total = 0
    for cron in plane.list_cron_federated_hpas():
        for history in (cron.status.execution_histories if cron.status else None) or []:
            for entry in history.successful_executions or []:
                total += 1
                seen.add((cron.metadata.name or "", entry.schedule_time))
    return len(seen) if len(seen) == total else -1


def report(
    rules: int,
    hours: float,
    delays: list[float],
    executed: int,
    failed: Sequence[object],
    distinct_recorded: int,
    busy: float,
    setup_seconds: float,
) -> int:
    if not delays:
        print("no fires happened; nothing measured")
        return 1
    ordered = sorted(delays)
    p50 = ordered[len(ordered) // 2]
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    expected = int(rules * hours)
    print(f"rules: {rules} (one per CronFederatedHPA, 5 time zones), virtual time: {hours} h")
    print(f"fires executed: {executed} (expected {expected}), failed or missed: {len(failed)}")
    print(
        f"firing delay: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms, "
        f"mean {statistics.fmean(delays) * 1000:.1f} ms"
    )
    print(
        f"controller busy: {busy:.2f} s for {len(delays)} reconciles "
        f"({busy / len(delays) * 1000:.2f} ms each, "
        f"{len(delays) / busy:.0f}/s on one worker); set-up {setup_seconds:.1f} s"
    )
    ok = p99 < P99_LIMIT_SECONDS and executed == expected and not failed and distinct_recorded >= 0
    print(f"p99 < {P99_LIMIT_SECONDS:.0f} s and every fire exactly once: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rules", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args(argv)
    return run(args.rules, args.hours)


if __name__ == "__main__":
    sys.exit(main())
