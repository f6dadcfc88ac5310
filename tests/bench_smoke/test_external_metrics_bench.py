"""Smoke test of bench/external_metrics.py on its smallest fleet (two clusters): it runs every policy
with per-member targets and as a naive copy, passes the issue 16 target and prints the overview."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "external_metrics.py"


def test_the_bench_runs_the_prioritized_fleet_and_passes() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--markdown", "external-prioritized"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    out = done.stdout
    assert out.count("- PASS") == 5 and "ALL PASS" in out
    assert "| external-prioritized | 2 |" in out  # the overview row
    assert "| Duplicated |" in out and "2.00x" in out  # two clusters: the naive Duplicated copy runs 2x


def test_the_naive_copy_carries_the_opt_out_and_swapped_policies_get_preferences() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from external_metrics import ANNOTATION_PER_CLUSTER_METRICS, SCENARIOS, with_policy

    from simulator.scenario import load_scenario

    scenario = load_scenario(SCENARIOS / "external-dynamic-weighted.yaml")
    naive = with_policy(scenario, "StaticWeighted", naive=True).federated_hpa
    assert (naive.metadata.annotations or {}).get(ANNOTATION_PER_CLUSTER_METRICS) == "true"
    assert [p.static_weight for p in naive.spec.preferences] == [1, 1, 1]
    prioritized = with_policy(scenario, "Prioritized", naive=False).federated_hpa
    assert [p.priority for p in prioritized.spec.preferences] == [3, 2, 1]
    assert not (prioritized.metadata.annotations or {}).get(ANNOTATION_PER_CLUSTER_METRICS)
