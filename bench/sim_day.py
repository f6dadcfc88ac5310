"""Benchmark: one simulated day of 10 member clusters at 15 s steps must run in under 60 s.

A day is 5,760 steps; at every step each cluster's native HPA syncs and the real controller observes,
plans and executes over all ten clusters. Run: `.venv/bin/python bench/sim_day.py` (exit 1 when over
budget). The scenario is built here (a diurnal load with two bursts, two cluster outages and a
controller outage) so that the benchmark needs no file.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.engine import simulate
from simulator.report import summarize
from simulator.scenario import parse_scenario

BUDGET_S = 60.0
CLUSTERS = 10


def day_scenario(policy: str = "Prioritized") -> dict[str, Any]:
    clusters: list[dict[str, Any]] = [
        {
            "name": f"member{i:02d}",
            "labels": {"tier": "onprem" if i < 3 else "cloud"},
            "capacity": 20 + 10 * i,
            "podStartup": "30s" if i < 3 else "60s",
            "replicas": 3,
        }
        for i in range(CLUSTERS)
    ]
    clusters[4]["outages"] = [{"at": "9h", "for": "20m"}]
    clusters[7]["outages"] = [{"at": "15h", "for": "45m"}]
    trace = []
    for half_hour in range(49):  # a night trough and a day peak, with bursts at 10:00 and 19:00
        hour = half_hour / 2
        rps = 3000 + 9000 * max(0.0, math.sin(math.pi * (hour - 6) / 16))
        if hour in (10.0, 19.0):
            rps *= 1.8
        trace.append({"at": f"{half_hour * 30}m", "rps": round(rps)})
    preferences = [
        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "onprem"}}}, "priority": 2},
        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "cloud"}}}, "priority": 1},
    ]
    return {
        "name": f"bench-day-{CLUSTERS}-clusters",
        "duration": "24h",
        "clusters": clusters,
        "load": {"podCapacity": 100, "trace": trace},
        "controllerOutages": [{"at": "12h", "for": "15m"}],
        "federatedHPA": {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "FederatedHPA",
            "metadata": {"name": "bench", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "bench"},
                "minReplicas": 10,
                "maxReplicas": 400,
                "federatedHPAAssignment": {
                    "federatedHPAAssignmentType": policy,
                    "clusterAutoscalingPreference": preferences,
                },
            },
        },
    }


def main() -> int:
    scenario = parse_scenario(day_scenario(), "bench/sim_day.py")
    started = time.perf_counter()
    result = simulate(scenario)
    elapsed = time.perf_counter() - started
    summary = summarize(result)
    print(
        f"sim_day: {len(result.steps)} steps x {CLUSTERS} clusters in {elapsed:.1f}s "
        f"(budget {BUDGET_S:.0f}s); served {summary['served_fraction']:.1%}, "
        f"vs oracle {summary['served_vs_oracle']:.1%}, {summary['controller_passes']} controller passes, "
        f"{summary['violation_count']} violations"
    )
    return 0 if elapsed < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
