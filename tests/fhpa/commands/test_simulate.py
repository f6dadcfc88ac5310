"""`fhpa simulate`: outputs, the summary table, --compare, exit codes, and simulate as the default."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from fhpa.cli import main

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "examples" / "scenarios"
SUMMARY_KEYS = {
    "served_fraction",
    "oracle_served_fraction",
    "unserved_rps_seconds",
    "replica_seconds",
    "peak_replicas",
    "time_to_absorb_s",
    "controller_actions",
    "api_writes",
    "violations",
}


@pytest.mark.slow
def test_builtin_run_writes_summary_csv_and_png_and_ends_with_the_plot(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["simulate", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1] == f"plot: {out / 'timeline.png'}"
    assert any(line.startswith("served / oracle") for line in printed)
    summary = json.loads((out / "summary.json").read_text())
    assert summary.keys() >= SUMMARY_KEYS
    assert summary["violations"] == []
    assert set(summary["replica_seconds"]) == {"idc", "cloud"}
    assert (out / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with (out / "timeline.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 7200 // 15  # one row per step and cluster
    assert {
        "replicas",
        "ready",
        "pending",
        "hpa_min",
        "hpa_max",
        "hpa_desired",
        "utilization_pct",
        "served_rps",
    } <= rows[0].keys()


@pytest.mark.slow
def test_compare_adds_three_baselines_side_by_side_marks_the_best_and_says_where_they_went(tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(
        ["simulate", str(SCENARIOS / "failover-cluster.yaml"), "--out", str(out), "--compare", "--no-png"]
    )
    assert code == 0
    printed = capsys.readouterr().out.splitlines()
    header = next(line for line in printed if "static-split" in line)
    assert header.split() == ["scenario", "static-split", "duplicated", "single-hpa", "best"]
    served = next(line for line in printed if line.startswith("served (of demand)"))
    assert len(served.split()) == 3 + 4 + 1 and "*" in served  # a label, four runs, the best named
    policy = next(line for line in printed if line.startswith("policy"))
    assert policy.endswith("one native HPA")  # single-hpa is not the Duplicated policy
    for row in (
        "unserved rps-seconds",
        "replica-seconds",
        "cost",
        "time to absorb",
        "member API writes",
        "violations",
    ):
        assert any(line.startswith(row) for line in printed), row
    for label in ("static-split", "duplicated", "single-hpa"):
        assert f"  {label}: {out / label}/" in printed
        assert (out / label / "summary.json").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["baselines"]) == {"static-split", "duplicated", "single-hpa"}
    assert summary["baselines"]["static-split"]["scale_assist"] is False
    assert summary["baselines"]["duplicated"]["cost_total"] > 0  # `fhpa simulate` reports cost
    pooled = json.loads((out / "single-hpa" / "summary.json").read_text())
    assert list(pooled["replica_seconds"]) == ["pooled"] and pooled["policy"] == "one native HPA"
    assert printed[-1] == f"plot: {out / 'timeline.png'} (skipped: --no-png)"


def test_an_invalid_scenario_exits_2_with_the_problem_on_stderr(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("duration: 1x\nclusters: []\n")
    assert main(["simulate", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "duration:" in err and "s, m or h" in err
    assert "load: required" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_simulate_is_the_default_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0  # plain `fhpa` runs the built-in scenario into out/simulate
    assert capsys.readouterr().out.strip().endswith("plot: out/simulate/timeline.png")
    assert (tmp_path / "out" / "simulate" / "summary.json").exists()


def test_without_matplotlib_the_run_skips_only_the_png_and_says_how_to_get_it(tmp_path, capsys, monkeypatch):
    # matplotlib is the optional extra `sim` (issue 15: a slim production image without the plotting
    # stack); the simulator must still run there
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a)
    )
    out = tmp_path / "no-plot"
    assert main(["simulate", str(SCENARIOS / "failover-cluster.yaml"), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("plot: skipped: matplotlib is not")
    assert (out / "summary.json").exists() and not (out / "timeline.png").exists()
