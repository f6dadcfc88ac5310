"""Smoke test of bench/controller_scale.py at its smallest size: it runs end to end (member server
processes, the real controller process, the steady window, one reaction) and prints the JSON keys the
issue asks for. Timings are machine-dependent and never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "controller_scale.py"
KEYS = {"steady_member_requests_per_s", "reaction_p50_s", "reaction_p99_s", "rss_mib", "plan_cpu_s"}


def run(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(BENCH), *args, "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_full_benchmark_prints_every_key_at_the_smallest_size() -> None:
    result = run(
        "--fhpas", "2", "--clusters", "2", "--pods", "4",
        "--steady-seconds", "2", "--quiet-seconds", "1",
        "--reactions", "1", "--reaction-window", "0", "--reaction-timeout", "5",
        "--cpu-burner", "1",
    )  # fmt: skip
    assert result.keys() >= KEYS | {"steady_cpu_cores", "sync_cpu_s", "controller_cpu_s", "load_average"}
    assert result["cpu_burners"] == 1
    assert result["controller_alive"] is True
    assert result["steady_member_requests_per_s"] >= 0
    assert result["rss_mib"] is not None and result["rss_mib"] > 0
    # a reaction slower than the timeout is reported as missed (and its percentiles as null), not timed
    assert result["reactions_timed"] + result["reactions_missed"] == 1


def test_plan_only_measures_the_planner_alone() -> None:
    result = run("--plan-only", "--fhpas", "8", "--clusters", "3")
    assert result["plan_cpu_s"] >= 0
    assert "steady_member_requests_per_s" not in result
