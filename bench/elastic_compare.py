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

Run: `.venv/bin/python bench/elastic_compare.py [FLEET ...]` (names of files in bench/scenarios/elastic/
without .yaml; default: all). Not a test: it takes minutes.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from policy_compare import SERVED_SLACK, Verdict, run_every_policy

from simulator.baselines import DUPLICATED, STATIC_SPLIT
from simulator.report import format_table
from simulator.scenario import load_scenario

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


def compare_fleet(path: Path) -> tuple[str, list[ElasticVerdict]]:
    scenario = load_scenario(path)
    own = scenario.federated_hpa.spec.assignment_type
    policies, rows = run_every_policy(scenario)
    by_label = dict(rows)
    hybrid = path.stem.startswith("hybrid")
    verdicts = [judge(p, by_label[p], by_label[STATIC_SPLIT], by_label[DUPLICATED], hybrid) for p in policies]
    print(f"== {scenario.name} ({path.name}; its own policy: {own})")
    print(format_table(rows))
    for v in verdicts:
        print(v.line())
    for label, summary in rows:
        breaches = [v["kind"] for v in summary["violations"]]
        if breaches:
            print(f"  {label}: {len(breaches)} violation(s): {', '.join(sorted(set(breaches)))}")
    print(f"{'PASS' if all(v.passed for v in verdicts) else 'FAIL'} {scenario.name}\n", flush=True)
    return scenario.name, verdicts


def main(argv: list[str]) -> int:
    every = sorted(FLEETS.glob("*.yaml"))
    paths = [p for p in every if p.stem in argv] if argv else every
    started = time.perf_counter()
    results = [compare_fleet(path) for path in paths]
    missed = [name for name, verdicts in results if not all(v.passed for v in verdicts)]
    print(
        f"elastic_compare: {len(results) - len(missed)} of {len(results)} fleets met the target in "
        f"{time.perf_counter() - started:.0f}s" + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
