"""What a run produced, for people and for tests: summary.json, timeline.csv and timeline.png.

The summary's figures are integrals over the steps (each step's state holds for the step's length):
served and demanded rps-seconds, replica-seconds per cluster, and the oracle (every healthy cluster's
full capacity ready at once: what no autoscaler can beat). Violations are the invariants the engine
checked at every step; a correct controller reports none.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from simulator.engine import RunResult, StepSample

ABSORBED_FRACTION = 0.99
ABSORB_SUSTAIN_S = 300.0  # how long served must stay back at 99% of demand to end a shortfall


def summarize(result: RunResult) -> dict[str, Any]:
    """The figures of one run (the keys of summary.json)."""
    steps, dt = result.steps, result.step_seconds
    names = [c.name for c in result.scenario.file.clusters]
    demanded = sum(s.demand_rps for s in steps) * dt
    served = sum(s.served_rps for s in steps) * dt
    oracle = sum(s.oracle_rps for s in steps) * dt
    replica_seconds = {n: sum(s.clusters[n].replicas for s in steps) * dt for n in names}
    fhpa = result.scenario.federated_hpa
    return {
        "scenario": result.scenario.name,
        "policy": fhpa.spec.assignment_type,
        "scale_assist": fhpa.spec.effective_scale_assist,
        "duration_s": result.scenario.file.duration,
        "step_s": dt,
        "served_fraction": _ratio(served, demanded),
        "oracle_served_fraction": _ratio(oracle, demanded),
        "served_vs_oracle": _ratio(served, oracle),
        "demanded_rps_seconds": demanded,
        "served_rps_seconds": served,
        "unserved_rps_seconds": demanded - served,
        "replica_seconds": replica_seconds,
        "replica_seconds_total": sum(replica_seconds.values()),
        "peak_replicas": {n: max((s.clusters[n].replicas for s in steps), default=0) for n in names},
        "peak_replicas_total": max((sum(c.replicas for c in s.clusters.values()) for s in steps), default=0),
        "peak_pending": {n: max((s.clusters[n].pending for s in steps), default=0) for n in names},
        "time_to_absorb_s": time_to_absorb(steps),
        "longest_shortfall_vs_oracle_s": longest_shortfall(steps, dt),
        "controller_passes": result.controller_passes,
        "controller_actions": result.controller_actions,
        "api_writes": dict(result.api_writes),
        "api_writes_total": sum(result.api_writes.values()),
        "events_by_reason": dict(sorted(Counter(e.reason for e in result.events).items())),
        "violations": [{"t_s": v.t, "kind": v.kind, "detail": v.detail} for v in result.violations],
        "violation_count": len(result.violations),
    }


def time_to_absorb(steps: list[StepSample], sustain_s: float = ABSORB_SUSTAIN_S) -> float | None:
    """How long the first shortfall lasted: from its first step until served is back for good.

    The episode starts at the first step where served is below 99% of demand. A lag smaller than that
    is the one-step delay of any reactive autoscaler, not a shortfall. It ends at the first later step
    where served is at least 99% of demand and stays there for ``sustain_s`` (5 minutes), or for every
    remaining step when the run ends sooner. So a single good step between two bad stretches does not
    end it: a 15 s blip before the real climb would otherwise report 15 s and hide the climb.

    None when served never fell below 99% of demand; the time to the end of the run when it never got
    back for good.
    """
    if not steps:
        return None
    dt = steps[1].t - steps[0].t if len(steps) > 1 else 0.0
    short = [s.served_rps < ABSORBED_FRACTION * s.demand_rps for s in steps]
    first = next((i for i, flag in enumerate(short) if flag), None)
    if first is None:
        return None
    next_short: float | None = None  # the time of the first short step at or after i, scanning back
    back: float | None = None
    for i in range(len(steps) - 1, first, -1):
        if short[i]:
            next_short = steps[i].t
        elif next_short is None or next_short >= steps[i].t + sustain_s:
            back = steps[i].t
    end = steps[-1].t + dt if back is None else back
    return end - steps[first].t


def longest_shortfall(steps: list[StepSample], dt: float) -> float:
    """The longest stretch served below 99% of the oracle: time lost to the autoscaler, not to physics."""
    longest = run = 0.0
    for s in steps:
        run = run + dt if s.served_rps < ABSORBED_FRACTION * s.oracle_rps else 0.0
        longest = max(longest, run)
    return longest


def _ratio(part: float, whole: float) -> float:
    return 1.0 if whole == 0 else part / whole


CSV_COLUMNS = (
    "t_s",
    "time",
    "cluster",
    "demand_rps",
    "replicas",
    "ready",
    "starting",
    "pending",
    "capacity",
    "down",
    "hpa_min",
    "hpa_max",
    "hpa_desired",
    "utilization_pct",
    "served_rps",
    "controller_up",
    "fhpa_min",
    "fhpa_max",
)


def write_csv(result: RunResult, path: Path) -> None:
    """One row per step and cluster."""
    start = result.scenario.file.start

    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for s in result.steps:
            when = (start + timedelta(seconds=s.t)).isoformat().replace("+00:00", "Z")
            for name, c in s.clusters.items():
                writer.writerow(
                    [
                        f"{s.t:g}",
                        when,
                        name,
                        f"{s.demand_rps:.1f}",
                        c.replicas,
                        c.ready,
                        c.starting,
                        c.pending,
                        c.capacity,
                        int(c.down),
                        "" if c.hpa_min is None else c.hpa_min,
                        "" if c.hpa_max is None else c.hpa_max,
                        "" if c.hpa_desired is None else c.hpa_desired,
                        f"{c.utilization:.1f}",
                        f"{c.served_rps:.1f}",
                        int(s.controller_up),
                        s.fhpa_min,
                        s.fhpa_max,
                    ]
                )


def write_summary(summary: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")


def _spans(flags: list[bool], times: list[float], dt: float) -> list[tuple[float, float]]:
    """Contiguous runs of True as (start, end) in minutes."""
    spans, begin = [], None
    for flag, t in zip(flags, times, strict=True):
        if flag and begin is None:
            begin = t
        elif not flag and begin is not None:
            spans.append((begin / 60, t / 60))
            begin = None
    if begin is not None:
        spans.append((begin / 60, (times[-1] + dt) / 60))
    return spans


def write_png(result: RunResult, path: Path) -> None:
    """Replicas per cluster stacked, demand against served, pending pods; outages and actions marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, dt = result.steps, result.step_seconds
    names = [c.name for c in result.scenario.file.clusters]
    minutes = [s.t / 60 for s in steps]
    times = [s.t for s in steps]
    fig, (ax_rep, ax_load, ax_pend) = plt.subplots(3, 1, figsize=(12, 9), sharex=True)
    colors = plt.get_cmap("tab10")

    ax_rep.stackplot(
        minutes,
        [[s.clusters[n].replicas for s in steps] for n in names],
        labels=names,
        colors=[colors(i % 10) for i in range(len(names))],
        step="post",
        alpha=0.8,
    )
    ax_rep.step(
        minutes, [s.fhpa_max for s in steps], where="post", color="black", ls="--", lw=1, label="F.max"
    )
    action_minutes = [s.t / 60 for s in steps if s.actions]
    if action_minutes:
        top = max(max(sum(c.replicas for c in s.clusters.values()) for s in steps), 1)
        ax_rep.plot(
            action_minutes,
            [top * 1.04] * len(action_minutes),
            "v",
            color="crimson",
            ms=4,
            label="controller action",
        )
    ax_rep.set_ylabel("replicas")
    ax_rep.set_title(f"{result.scenario.name}: {result.scenario.federated_hpa.spec.assignment_type}")

    ax_load.plot(minutes, [s.demand_rps for s in steps], color="black", lw=1.2, label="demand")
    ax_load.plot(minutes, [s.served_rps for s in steps], color="tab:green", lw=1.2, label="served")
    ax_load.plot(minutes, [s.oracle_rps for s in steps], color="tab:gray", lw=0.8, ls=":", label="oracle")
    ax_load.set_ylabel("requests / s")

    for i, name in enumerate(names):
        ax_pend.step(
            minutes, [s.clusters[name].pending for s in steps], where="post", color=colors(i % 10), label=name
        )
    ax_pend.set_ylabel("pending pods")
    ax_pend.set_xlabel("minutes since start")

    for i, name in enumerate(names):
        for begin, end in _spans([s.clusters[name].down for s in steps], times, dt):
            for ax in (ax_rep, ax_load, ax_pend):
                ax.axvspan(begin, end, color=colors(i % 10), alpha=0.12, hatch="//")
            ax_rep.text(begin, 0, f" {name} down", fontsize=8, va="bottom")
    for begin, end in _spans([not s.controller_up for s in steps], times, dt):
        for ax in (ax_rep, ax_load, ax_pend):
            ax.axvspan(begin, end, color="black", alpha=0.08)
        ax_load.text(begin, 0, " controller down", fontsize=8, va="bottom")
    for ax in (ax_rep, ax_load, ax_pend):
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_outputs(result: RunResult, summary: dict[str, Any], out_dir: Path, png: bool = True) -> Path:
    """summary.json, timeline.csv and (unless ``png`` is False) timeline.png; returns the PNG path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_summary(summary, out_dir / "summary.json")
    write_csv(result, out_dir / "timeline.csv")
    png_path = out_dir / "timeline.png"
    if png:
        write_png(result, png_path)
    return png_path


def format_table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """Runs side by side: one column per run."""
    lines = [
        ("policy", lambda s: f"{s['policy']}{'' if s['scale_assist'] else ' (no assist)'}"),
        ("served fraction", lambda s: f"{s['served_fraction']:.1%}"),
        ("oracle served fraction", lambda s: f"{s['oracle_served_fraction']:.1%}"),
        ("served / oracle", lambda s: f"{s['served_vs_oracle']:.1%}"),
        ("unserved rps-seconds", lambda s: f"{s['unserved_rps_seconds']:,.0f}"),
        ("replica-seconds", lambda s: f"{s['replica_seconds_total']:,.0f}"),
        ("peak replicas", lambda s: str(s["peak_replicas_total"])),
        (
            "time to absorb",
            lambda s: "-" if s["time_to_absorb_s"] is None else f"{s['time_to_absorb_s']:.0f} s",
        ),
        ("longest shortfall", lambda s: f"{s['longest_shortfall_vs_oracle_s']:.0f} s"),
        ("controller actions", lambda s: str(s["controller_actions"])),
        ("member API writes", lambda s: str(s["api_writes_total"])),
        ("violations", lambda s: str(s["violation_count"])),
    ]
    header = [""] + [label for label, _ in rows]
    table = [header] + [[name] + [fmt(s) for _, s in rows] for name, fmt in lines]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    out = []
    for j, row in enumerate(table):
        out.append(
            "  ".join(
                cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
            )
        )
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
