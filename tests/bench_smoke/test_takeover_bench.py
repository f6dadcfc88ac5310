"""Smoke test of bench/takeover.py at its smallest size: both takeovers (warm standby, then cold) end in
a member write by the new leader, and the figures are printed. Timings are never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_both_takeovers_end_in_a_member_write_at_the_smallest_size() -> None:
    done = subprocess.run(
        [
            sys.executable, str(REPO / "bench" / "takeover.py"),
            "--fhpas", "2", "--clusters", "2", "--pods", "4", "--quiet-seconds", "1",
            "--settle-seconds", "1", "--takeover-timeout", "60", "--sync-timeout", "120", "--json",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for scenario in ("warm", "cold"):
        assert result[scenario]["takeover_s"] is not None
        assert result[scenario]["standby_rss_mib"] is not None
