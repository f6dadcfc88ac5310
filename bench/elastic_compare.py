"""Benchmark: the assisted policies against the baselines on fleets whose capacity is elastic, quota-bound
or shrinking (the fleets in bench/scenarios/elastic/).

Each fleet runs under every assisted policy (its own and the three others, swapped into the same
FederatedHPA) and under the three baselines of `fhpa simulate --compare`, all on the same capacity model
(node groups, quotas, capacity changes, cost). It prints one table per fleet, served %, replica-seconds,
cost and promise breaches per run, and checks the target:

    every assisted policy serves at least max(static-split, duplicated) minus 0.5 points of demand, with
    replica-seconds and cost at most duplicated's, and 0 violations; on the hybrid fleets (on-prem plus an
    elastic cloud) Prioritized costs at least 20% less than duplicated.

A miss is a finding to report (exit 1), not a crash. single-hpa is printed for reference.

``--days N`` runs each fleet N times over in a row (its load trace, capacity changes and controller
outages repeated) and judges every day on its own: the first day starts from the state the fleet's
author wrote down, every later one from what the policy left the evening before, as a fleet that runs
day after day does (a node group a policy never sends back to 0 shows only from the second day on).

Run: `.venv/bin/python bench/elastic_compare.py [--days N] [FLEET ...]` (names of files in
bench/scenarios/elastic/ without .yaml; default: all). Not a test: it takes minutes.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from policy_compare import ASSISTED, SERVED_SLACK, Verdict, with_policy

from simulator.baselines import DUPLICATED, STATIC_SPLIT, baselines
from simulator.engine import RunResult, simulate
from simulator.report import format_table, summarize
from simulator.scenario import Scenario, parse_duration, parse_scenario

FLEETS = Path(__file__).resolve().parent / "scenarios" / "elastic"
HYBRID_SAVING = 0.20
"""On a hybrid fleet Prioritized must cost at least this fraction less than duplicated."""


@dataclass(frozen=True)
class ElasticVerdict(Verdict):
    """policy_compare's verdict, plus the cost: at most duplicated's, or less where a saving is asked for."""

    cost: float = 0.0
    duplicated_cost: float = 0.0
    cost_cap: float = 0.0

    @property
    def passed(self) -> bool:
        return super().passed and self.cost <= self.cost_cap

    def line(self) -> str:
        return (
            f"{super().line()}; cost {self.cost:,.2f} vs cap {self.cost_cap:,.2f} "
            f"({self.cost / self.duplicated_cost - 1:+.1%} vs duplicated)"
        )


def judge(
    policy: str, ours: dict[str, Any], static: dict[str, Any], dup: dict[str, Any], hybrid: bool
) -> ElasticVerdict:
    saving = HYBRID_SAVING if hybrid and policy == "Prioritized" else 0.0
    return ElasticVerdict(
        policy,
        served=ours["served_fraction"],
        bar=max(static["served_fraction"], dup["served_fraction"]) - SERVED_SLACK,
        replica_seconds=ours["replica_seconds_total"],
        cost=ours["cost_total"],
        duplicated_replica_seconds=dup["replica_seconds_total"],
        duplicated_cost=dup["cost_total"],
        violations=ours["violation_count"],
        cost_cap=dup["cost_total"] * (1 - saving),
    )


def repeated(data: dict[str, Any], days: int) -> dict[str, Any]:
    """The scenario document run ``days`` times over: every timed list shifted by a day's duration."""
    if days == 1:
        return data
    if data.get("changes") or data.get("cronFederatedHPAs"):
        raise SystemExit(f"{data.get('name')}: timed changes and cron rules are not repeated; run one day")
    length = parse_duration(data["duration"])

    def shift(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # a point at the day's very end and the next day's first point coincide: the first one stands
        out = list(points)
        for day in range(1, days):
            for point in points:
                at = parse_duration(point["at"]) + day * length
                if not out or at > parse_duration(out[-1]["at"]):
                    out.append({**point, "at": f"{at:g}s"})
        return out

    copy = {**data, "duration": f"{days * length:g}s"}
    load = dict(data["load"])
    load["trace"] = shift(load["trace"])
    load["external"] = {k: shift(v) for k, v in (load.get("external") or {}).items()}
    copy["load"] = load
    copy["controllerOutages"] = shift(data.get("controllerOutages") or [])
    copy["clusters"] = [
        {**c, **{key: shift(c[key]) for key in ("capacityChanges", "outages") if c.get(key)}}
        for c in data["clusters"]
    ]
    return copy


def day_of(result: RunResult, day: int, length: float) -> RunResult:
    """The run's steps and violations of one day (0-based), for :func:`summarize`."""
    start, end = day * length, (day + 1) * length
    return replace(
        result,
        steps=[s for s in result.steps if start <= s.t < end],
        violations=[v for v in result.violations if start <= v.t < end],
    )


def run_days(scenario: Scenario, days: int) -> tuple[list[str], list[list[tuple[str, dict[str, Any]]]]]:
    """Every assisted policy (the fleet's own first) and the three baselines, each one run over all the
    days: the policies, and per day the labelled summaries."""
    own = scenario.federated_hpa.spec.assignment_type
    policies = [own, *[p for p in ASSISTED if p != own]]
    runs: list[tuple[str, RunResult]] = [
        (p, simulate(scenario if p == own else with_policy(scenario, p))) for p in policies
    ]
    runs += [(b.label, b.run()) for b in baselines(scenario)]
    length = scenario.file.duration / days
    return policies, [[(label, summarize(day_of(r, d, length))) for label, r in runs] for d in range(days)]


def compare_fleet(path: Path, days: int = 1) -> tuple[str, list[ElasticVerdict]]:
    data = yaml.safe_load(path.read_text())
    scenario = parse_scenario(repeated(data, days), str(path))
    own = scenario.federated_hpa.spec.assignment_type
    policies, by_day = run_days(scenario, days)
    hybrid = path.stem.startswith("hybrid")
    print(f"== {scenario.name} ({path.name}; its own policy: {own})")
    verdicts: list[ElasticVerdict] = []
    for day, rows in enumerate(by_day, start=1):
        by_label = dict(rows)
        if days > 1:
            print(f"-- day {day} of {days}")
        print(format_table(rows))
        for p in policies:
            v = judge(p, by_label[p], by_label[STATIC_SPLIT], by_label[DUPLICATED], hybrid)
            verdicts.append(v)
            print(v.line())
        for label, summary in rows:
            breaches = [v["kind"] for v in summary["violations"]]
            if breaches:
                print(f"  {label}: {len(breaches)} violation(s): {', '.join(sorted(set(breaches)))}")
    print(f"{'PASS' if all(v.passed for v in verdicts) else 'FAIL'} {scenario.name}\n", flush=True)
    return scenario.name, verdicts


def main(argv: list[str]) -> int:
    days = 1
    if "--days" in argv:
        at = argv.index("--days")
        days = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2 :]
    every = sorted(FLEETS.glob("*.yaml"))
    paths = [p for p in every if p.stem in argv] if argv else every
    started = time.perf_counter()
    results = [compare_fleet(path, days) for path in paths]
    missed = [name for name, verdicts in results if not all(v.passed for v in verdicts)]
    print(
        f"elastic_compare: {len(results) - len(missed)} of {len(results)} fleets met the target"
        + (f" on each of {days} days" if days > 1 else "")
        + f" in {time.perf_counter() - started:.0f}s"
        + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
