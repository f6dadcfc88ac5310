"""Benchmark: queue-driven fleets under every policy, against one HPA over the fleet (issue 16).

Every fleet in examples/scenarios/external-*.yaml scales on an External metric with an AverageValue
target (a queue every member HPA reads whole). Each runs under the five policies (its own FederatedHPA
with the policy swapped in; StaticWeighted gets equal weights and Prioritized the fleet's order when
the file names none), twice: with the per-member targets the controller writes
(controller.planning.external_share), and as a naive copy (the opt-out annotation
``autoscaling.karmada.io/per-cluster-metrics: "true"``: every member gets the target unchanged). The
reference is the ``single-hpa`` baseline of ``fhpa simulate --compare`` on the same metric.

The target (issue 16): **for every policy, the fleet's replica-seconds are within 15% of single-hpa's,
with no violation**; the naive copy's ratio to single-hpa is printed next to it (about N where the
members' maxes let each of them run the whole count).

It prints one table per fleet and PASS or FAIL per policy, and exits 1 when any misses the target.

Run: `.venv/bin/python bench/external_metrics.py [--markdown] [FLEET ...]` (FLEET: a file name in
examples/scenarios/ without .yaml; default: every external-*.yaml).
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.planning.external_share import ANNOTATION_PER_CLUSTER_METRICS
from simulator.baselines import pooled_scenario
from simulator.engine import simulate
from simulator.report import summarize
from simulator.scenario import Scenario, load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
POLICIES = ("Duplicated", "StaticWeighted", "DynamicWeighted", "Aggregated", "Prioritized")
WITHIN = 0.15


@dataclass(frozen=True)
class Row:
    policy: str
    shared: dict[str, Any]  # summary with per-member targets
    naive: dict[str, Any]  # summary with the targets copied unchanged
    single: dict[str, Any]  # the single-hpa baseline

    def ratio(self, summary: dict[str, Any]) -> float:
        return float(summary["replica_seconds_total"] / self.single["replica_seconds_total"])

    @property
    def passed(self) -> bool:
        return abs(self.ratio(self.shared) - 1) <= WITHIN and self.shared["violation_count"] == 0


def with_policy(scenario: Scenario, policy: str, naive: bool) -> Scenario:
    """The fleet's FederatedHPA under ``policy``, with the opt-out annotation when ``naive``."""
    raw = copy.deepcopy(scenario.file.federated_hpa)
    assignment = raw["spec"].setdefault("federatedHPAAssignment", {})
    assignment["federatedHPAAssignmentType"] = policy
    names = [c.name for c in scenario.file.clusters]
    prefs = assignment.get("clusterAutoscalingPreference") or []
    field = {"StaticWeighted": "staticWeight", "Prioritized": "priority"}.get(policy)
    if field is not None and not any(field in p for p in prefs):
        assignment["clusterAutoscalingPreference"] = [
            {"targetCluster": {"clusterNames": [n]}, field: 1 if field == "staticWeight" else len(names) - i}
            for i, n in enumerate(names)
        ]
    if naive:
        raw.setdefault("metadata", {}).setdefault("annotations", {})[ANNOTATION_PER_CLUSTER_METRICS] = "true"
    return scenario.with_federated_hpa(raw, f"{policy}{' naive' if naive else ''}")


def run_fleet(path: Path) -> list[Row]:
    scenario = load_scenario(path)
    single = summarize(pooled_scenario(scenario).run())
    rows = []
    for policy in POLICIES:
        shared = summarize(simulate(with_policy(scenario, policy, naive=False)))
        naive = summarize(simulate(with_policy(scenario, policy, naive=True)))
        rows.append(Row(policy, shared, naive, single))
    return rows


def table(name: str, clusters: int, rows: list[Row], markdown: bool) -> str:
    head = [
        "policy",
        "replica-seconds",
        "vs single-hpa",
        "served",
        "violations",
        "naive copy",
        "naive vs single-hpa",
        "naive served",
    ]
    body = [
        [
            r.policy,
            f"{r.shared['replica_seconds_total']:,.0f}",
            f"{r.ratio(r.shared):.2f}x",
            f"{r.shared['served_fraction']:.1%}",
            str(r.shared["violation_count"]),
            f"{r.naive['replica_seconds_total']:,.0f}",
            f"{r.ratio(r.naive):.2f}x",
            f"{r.naive['served_fraction']:.1%}",
        ]
        for r in rows
    ]
    single = rows[0].single
    rs, served = f"{single['replica_seconds_total']:,.0f}", f"{single['served_fraction']:.1%}"
    body.append(["single-hpa", rs, "1.00x", served, str(single["violation_count"]), "", "", ""])
    title = f"{name} ({clusters} clusters)"
    if markdown:
        lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines += [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        for row in body
    ]
    return "\n".join(lines)


def verdicts(rows: list[Row]) -> list[str]:
    lines = []
    for r in rows:
        ratio = r.ratio(r.shared)
        lines.append(
            f"- {'PASS' if r.passed else 'FAIL'} {r.policy:<15} replica-seconds {ratio:.2f}x single-hpa "
            f"(off by {abs(ratio - 1):.1%}, allowed {WITHIN:.0%}), violations {r.shared['violation_count']}; "
            f"naive copy {r.ratio(r.naive):.2f}x"
        )
    return lines


def overview(fleets: list[tuple[str, int, list[Row]]]) -> str:
    """One line per fleet: each policy's replica-seconds over single-hpa's, shared / naive copy."""
    head = ["fleet", "clusters", *POLICIES]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, clusters, rows in fleets:
        cells = [f"{r.ratio(r.shared):.2f}x / {r.ratio(r.naive):.2f}x" for r in rows]
        lines.append("| " + " | ".join([name, str(clusters), *cells]) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    markdown = "--markdown" in argv
    names = [a for a in argv if not a.startswith("--")]
    paths = [SCENARIOS / f"{n}.yaml" for n in names] or sorted(SCENARIOS.glob("external-*.yaml"))
    failed = 0
    fleets = []
    for path in paths:
        rows = run_fleet(path)
        clusters = len(load_scenario(path).file.clusters)
        fleets.append((path.stem, clusters, rows))
        print(table(path.stem, clusters, rows, markdown))
        print()
        for line in verdicts(rows):
            print(line)
        print()
        failed += sum(not r.passed for r in rows)
    print("replica-seconds over single-hpa's, with per-member targets / as a naive copy:")
    print(overview(fleets))
    print()
    print(f"{'ALL PASS' if not failed else f'{failed} FAIL'}: every policy within {WITHIN:.0%} of single-hpa")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
