"""The benchmark script runs end to end (tiny load) and reports both servers and the verdicts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.webhook_serving import REPO

pytestmark = pytest.mark.slow


def test_benchmark_runs_and_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "bench.md"
    result = subprocess.run(
        [sys.executable, "bench/webhook_latency.py", "--requests", "200", "--rounds", "1", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = out.read_text()
    assert "| webhook (`fhpa webhook serve`) | 200 |" in report
    assert "| floor (bare gunicorn + flask, fixed answer) | 200 |" in report
    assert "p99 within 1.5x of the floor" in report and "reviews/s with 2 workers" in report
