"""`fhpa simulate [SCENARIO] [--out DIR] [--compare]`: run a fleet scenario on the virtual clock.

With no scenario it runs the built-in one (on-prem plus cloud, Prioritized, a burst past on-prem
capacity, a cloud outage). It writes summary.json, timeline.csv and timeline.png to the output
directory, prints a summary table and, last, the PNG's path. With --compare it also runs three
baselines (static-split, duplicated, single-hpa; see simulator.baselines), each into DIR/<baseline>/,
prints the four runs side by side with the best on each row marked, and where each baseline went.
Exit codes: 0 done, 1 the run reported invariant violations, 2 the scenario is invalid, 3 the
controller code failed during the run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.planning.wording import count

if TYPE_CHECKING:
    from simulator.engine import RunResult

DEFAULT_OUT = "out/simulate"
PROGRESS_AFTER_S = 2.0  # wall seconds before progress lines start: short runs stay quiet


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run a multi-cluster scenario in memory (the default command)",
        description="Simulate member clusters, their native HPAs and this controller on a virtual clock.",
    )
    parser.add_argument("scenario", nargs="?", help="scenario YAML (default: the built-in scenario)")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--compare",
        action="store_true",
        help=(
            "also run three baselines side by side, each into DIR/<name>/: an equal static split "
            "without assistance, Duplicated, and one HPA over the pooled fleet (single-hpa)"
        ),
    )
    parser.add_argument("--no-png", action="store_true", help="skip timeline.png (faster)")
    parser.set_defaults(func=run)


class _Progress:
    """Progress on stderr for runs that take a while; silent for short ones."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: float, total: float) -> None:
        now = time.monotonic()
        quiet = now - self.started < PROGRESS_AFTER_S or now - self.last < 1.0
        if quiet and not (done >= total and self.shown):
            return
        self.last, self.shown = now, True
        print(f"  {self.label}: {done / 3600:.1f}h of {total / 3600:.1f}h simulated", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from simulator.baselines import baselines
    from simulator.builtin import builtin_scenario
    from simulator.engine import SimulationError, simulate
    from simulator.report import format_table, plotting_available, summarize, write_outputs
    from simulator.scenario import ScenarioError, load_scenario

    try:
        scenario = load_scenario(args.scenario) if args.scenario else builtin_scenario()
    except ScenarioError as exc:
        print(f"fhpa simulate: {exc}", file=sys.stderr)
        return 2
    out_dir = Path(args.out)
    problem = unwritable(out_dir)
    if problem is not None:  # before the run, not after an hour of it
        print(f"fhpa simulate: cannot write --out {out_dir}: {problem}", file=sys.stderr)
        return 2
    hours, clusters = scenario.file.duration / 3600, len(scenario.file.clusters)
    print(f"simulating {scenario.name} ({hours:g}h, {count(clusters, 'cluster')})")
    runs: list[tuple[str, Callable[[_Progress], RunResult]]] = [("scenario", partial(simulate, scenario))]
    compared = baselines(scenario) if args.compare else []
    runs += [(b.label, b.run) for b in compared]
    shown_policy = {b.label: b.policy for b in compared if b.policy is not None}
    rows: list[tuple[str, dict[str, Any]]] = []
    png_path = out_dir / "timeline.png"
    png = not args.no_png and plotting_available()
    try:
        for label, run_one in runs:
            result = run_one(_Progress(label))
            summary = summarize(result)
            summary["policy"] = shown_policy.get(label, summary["policy"])
            target = out_dir if label == "scenario" else out_dir / label
            path = write_outputs(result, summary, target, png=png)
            if label == "scenario":
                png_path = path
                main_summary = summary
            rows.append((label, summary))
    except SimulationError as exc:
        print(f"fhpa simulate: {exc}", file=sys.stderr)
        return 3
    if args.compare:
        main_summary["baselines"] = {label: _brief(s) for label, s in rows[1:]}
        write_outputs_summary(main_summary, out_dir)
    print()
    print(format_table(rows))
    if args.compare:
        print()
        print("baselines written to:")
        for label, _ in rows[1:]:
            print(f"  {label}: {out_dir / label}/")
    for violation in main_summary["violations"][:10]:
        print(f"violation at t={violation['t_s']:.0f}s: {violation['kind']}: {violation['detail']}")
    print()
    print(f"summary: {out_dir / 'summary.json'}")
    print(f"timeline: {out_dir / 'timeline.csv'}")
    if args.no_png:
        print(f"plot: {png_path} (skipped: --no-png)")
    elif not png:
        print("plot: skipped: matplotlib is not installed (pip install 'federated-hpa[sim]', or make demo)")
    else:
        print(f"plot: {png_path}")
    return 1 if main_summary["violation_count"] else 0


def unwritable(out_dir: Path) -> str | None:
    """Why files cannot be written into ``out_dir`` (created if missing), or None when they can."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out_dir):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _brief(summary: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "policy",
        "scale_assist",
        "served_fraction",
        "served_vs_oracle",
        "unserved_rps_seconds",
        "replica_seconds_total",
        "cost_total",
        "time_to_absorb_s",
        "api_writes_total",
        "violation_count",
    )
    return {k: summary[k] for k in keys}


def write_outputs_summary(summary: dict[str, Any], out_dir: Path) -> None:
    from simulator.report import write_summary

    write_summary(summary, out_dir / "summary.json")
