"""What a run produced, for people and for tests: summary.json, timeline.csv and timeline.png.

The summary's figures are integrals over the steps (each step's state holds for the step's length):
served and demanded rps-seconds, replica-seconds per cluster, cost (running pods on fixed room, every
node of a node group), node-seconds and quota-refused pod-seconds, and the oracle (every healthy cluster's
full capacity ready at once: what no autoscaler can beat). Violations are the engine's checks of the
live objects plus the breaches of the FederatedHPA's four promises (``simulator.promises``), with the
figures behind them; a correct controller reports none.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from controller.planning.policies import policy_named
from simulator.engine import RunResult
from simulator.promises import PROMISES
from simulator.samples import ClusterSample, StepSample

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
        "max_replicas": fhpa.spec.max_replicas,
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
        **replica_seconds_split(steps, dt, names),
        "cost_total": sum(c.cost_per_hour for s in steps for c in s.clusters.values()) * dt / 3600,
        "cost": {n: sum(s.clusters[n].cost_per_hour for s in steps) * dt / 3600 for n in names},
        "node_seconds": {n: sum(s.clusters[n].nodes for s in steps) * dt for n in names},
        "quota_refused_pod_seconds": {n: sum(s.clusters[n].quota_refused for s in steps) * dt for n in names},
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
        "promises_checked": [p for p in PROMISES if p in result.promises.terms.promised],
        **result.promises.figures(),
        "violations": [{"t_s": v.t, "kind": v.kind, "detail": v.detail} for v in result.violations],
        "violation_count": len(result.violations),
    }


REPLICA_STATES = ("scheduled", "pending", "unreachable")


def _replica_state(c: ClusterSample) -> dict[str, int]:
    """A cluster's spec.replicas in one step, split by what they were doing: scheduled (Ready or
    starting) and pending (asked for, not scheduled: unschedulable or refused by a quota) where it is
    reachable; every replica of an unreachable cluster is unreachable, whatever its pods do there."""
    if c.down:
        return {"scheduled": 0, "pending": 0, "unreachable": c.replicas}
    scheduled = min(c.ready + c.starting, c.replicas)
    return {"scheduled": scheduled, "pending": c.replicas - scheduled, "unreachable": 0}


def replica_seconds_split(steps: list[StepSample], dt: float, names: list[str]) -> dict[str, Any]:
    """``replica_seconds`` (spec.replicas, per cluster) split three ways: per state, the fleet's totals
    (``replica_seconds_scheduled`` + ``_pending`` + ``_unreachable`` = ``replica_seconds_total``) and,
    under ``replica_seconds_split``, each cluster's."""
    per = {n: dict.fromkeys(REPLICA_STATES, 0.0) for n in names}
    for s in steps:
        for n in names:
            for state, count in _replica_state(s.clusters[n]).items():
                per[n][state] += count * dt
    totals = {f"replica_seconds_{state}": sum(p[state] for p in per.values()) for state in REPLICA_STATES}
    return {**totals, "replica_seconds_split": per}


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
    "selected",
    "workload",
    "foreign_hpa",
    "drained",
    "nodes",
    "quota_refused",
)
"""timeline.csv's columns, a documented contract (docs/simulator.md): new ones are only appended."""


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
                        int(c.selected),
                        int(c.workload),
                        int(c.foreign_hpa),
                        int(c.drained),
                        c.nodes,
                        c.quota_refused,
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


ACTION_STYLES: dict[str, tuple[str, str, str]] = {
    "create": ("^", "tab:green", "member HPA created"),
    "update": ("D", "tab:blue", "member HPA bounds changed"),
    "delete": ("X", "tab:red", "member HPA deleted"),
    "scale": ("s", "tab:purple", "replicas written"),
}
"""Controller action kind (``kind/cluster`` in StepSample.actions): marker, colour, legend text."""

_NAN = float("nan")


def _extend(values: list[float]) -> list[float]:
    """A step series drawn with where="post" plus one point, so the last step has its width."""
    return [*values, values[-1]] if values else values


def _covering(mask: list[bool]) -> list[bool]:
    """``where`` for a step="post" fill_between: a True step also needs its end point."""
    return [m or (i > 0 and mask[i - 1]) for i, m in enumerate(mask)]


def draw_timeline(result: RunResult) -> Any:
    """The run as a matplotlib Figure (see :func:`write_png`); the caller closes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    steps, dt = result.steps, result.step_seconds
    names = [c.name for c in result.scenario.file.clusters]
    spec = result.scenario.federated_hpa.spec
    times = [s.t for s in steps]
    x = _extend([t / 60 for t in times])
    if len(x) > 1:
        x[-1] = x[-2] + dt / 60
    colors = plt.get_cmap("tab10")
    ratios = [3.0, 2.0] + [1.7] * len(names)
    fig, axes = plt.subplots(
        len(ratios),
        1,
        figsize=(14, sum(ratios) * 1.05 + 0.6),
        sharex=True,
        gridspec_kw={"height_ratios": ratios},
    )
    ax_fleet, ax_load, cluster_axes = axes[0], axes[1], list(axes[2:])
    legend_right = {"loc": "upper left", "bbox_to_anchor": (1.005, 1.0), "fontsize": 8, "borderaxespad": 0}

    # fleet: scheduled replicas (ready + starting) of reachable clusters, stacked against F.min and F.max;
    # their pending pods drawn apart on top, since they serve nothing and hold no node
    states = [[_replica_state(s.clusters[n]) for s in steps] for n in names]
    reachable = [[state["scheduled"] for state in row] for row in states]
    ax_fleet.stackplot(
        x,
        [_extend([float(v) for v in row]) for row in reachable],
        labels=names,
        colors=[colors(i % 10) for i in range(len(names))],
        step="post",
        alpha=0.85,
    )
    scheduled_total = [float(sum(col)) for col in zip(*reachable, strict=True)]
    pending_top = [t + sum(row[i]["pending"] for row in states) for i, t in enumerate(scheduled_total)]
    ax_fleet.fill_between(
        x,
        _extend(scheduled_total),
        _extend(pending_top),
        step="post",
        facecolor="none",
        edgecolor="tab:red",
        hatch="xx",
        lw=0,
        label="pending (not scheduled)",
    )
    f_max = _extend([float(s.fhpa_max) for s in steps])
    f_min = _extend([float(s.fhpa_min) for s in steps])
    ax_fleet.step(x, f_max, where="post", color="black", ls="--", lw=1.4, label="F.max")
    ax_fleet.step(x, f_min, where="post", color="black", ls=":", lw=1.6, label="F.min")
    top = max([*f_max, *pending_top, 1.0])
    if policy_named(spec.assignment_type).divides_bounds:  # else every member max is F.max by design
        max_sum = [
            float(sum(c.hpa_max for c in s.clusters.values() if not c.down and c.hpa_max is not None))
            for s in steps
        ]
        ax_fleet.step(
            x,
            _extend(max_sum),
            where="post",
            color="dimgray",
            lw=1.1,
            label="sum of member maxes\n(reachable)",
        )
        top = max([top, *max_sum])
    ax_fleet.set_ylim(0, top * 1.12)
    ax_fleet.set_ylabel("scheduled replicas in\nreachable clusters (stacked)")
    zero = " + scalingToZero" if spec.effective_scaling_to_zero else ""
    assist = "" if spec.effective_scale_assist else ", no scaleAssist"
    ax_fleet.set_title(
        f"{result.scenario.name}: {spec.assignment_type}{zero}{assist}, "
        f"F.min {spec.effective_min}, F.max {spec.max_replicas}",
        loc="left",
    )

    # load
    demand = _extend([s.demand_rps for s in steps])
    served = _extend([s.served_rps for s in steps])
    ax_load.fill_between(x, served, demand, step="post", color="tab:red", alpha=0.25, lw=0, label="unserved")
    ax_load.step(x, demand, where="post", color="black", lw=1.2, label="demand")
    ax_load.step(x, served, where="post", color="tab:green", lw=1.2, label="served")
    ax_load.step(
        x,
        _extend([s.oracle_rps for s in steps]),
        where="post",
        color="tab:gray",
        lw=0.9,
        ls=":",
        label="oracle (all healthy\ncapacity ready)",
    )
    ax_load.set_ylim(bottom=0)
    ax_load.set_ylabel("requests / s")

    # one panel per cluster: its pods, the bounds the controller gave its HPA, its capacity, the actions
    kinds_seen: set[str] = set()
    for i, (name, ax) in enumerate(zip(names, cluster_axes, strict=True)):
        colour = colors(i % 10)
        samples = [s.clusters[name] for s in steps]
        down = _extend([float(c.down) for c in samples])
        up_where = _covering([d == 0 for d in down])
        down_where = _covering([d == 1 for d in down])
        ready = _extend([float(c.ready) for c in samples])
        started = _extend([float(c.ready + c.starting) for c in samples])
        replicas = _extend([float(c.replicas) for c in samples])
        layers = [
            (None, ready, 0.85, "ready"),
            (ready, started, 0.35, "starting"),
            (started, replicas, None, "pending"),
        ]
        for low, high, alpha, label in layers:
            base = low if low is not None else [0.0] * len(high)
            if alpha is None:  # pending: red, whatever the cluster's colour
                ax.fill_between(
                    x, base, high, where=up_where, step="post", color="tab:red", alpha=0.45, lw=0, label=label
                )
            else:
                ax.fill_between(
                    x, base, high, where=up_where, step="post", color=colour, alpha=alpha, lw=0, label=label
                )
            ax.fill_between(
                x,
                base,
                high,
                where=down_where,
                step="post",
                facecolor="none",
                edgecolor=colour,
                hatch="////",
                lw=0,
                label="_nolegend_",
            )
        h_max = _extend([_NAN if c.hpa_max is None else float(c.hpa_max) for c in samples])
        h_min = _extend([_NAN if c.hpa_min is None else float(c.hpa_min) for c in samples])
        ax.step(x, h_max, where="post", color="black", ls="--", lw=1.3, label=f"{name} HPA max")
        ax.step(x, h_min, where="post", color="black", ls=":", lw=1.6, label=f"{name} HPA min")
        capacity = _extend([float(c.capacity) for c in samples])
        finite = [v for v in (*h_max, *h_min, *replicas) if v == v]
        scale = max([*finite, 1.0]) * 1.35
        if max(capacity) <= 2 * scale:  # near enough to show without squashing the rest
            scale = max(scale, max(capacity) * 1.35)
        if max(capacity) <= scale:
            ax.step(x, capacity, where="post", color="gray", lw=0.9, label="capacity")
        else:  # a cluster far larger than this workload's use of it: say so rather than squash the rest
            ax.plot([], [], color="gray", lw=0.9, label=f"capacity {max(capacity):g} (off scale)")
        ax.set_ylim(0, scale)
        unmanaged = [c.hpa_max is None and c.replicas > 0 and not c.down for c in samples]
        for n, (begin, end) in enumerate(_spans(unmanaged, times, dt)):
            ax.axvspan(
                begin,
                end,
                color="orange",
                alpha=0.25,
                lw=0,
                zorder=0,
                label="replicas, no member HPA" if n == 0 else "_nolegend_",
            )
        for begin, end in _spans([c.down for c in samples], times, dt):
            ax.axvspan(begin, end, color="gray", alpha=0.15, lw=0, zorder=0)
            ax.text(
                begin,
                scale * 0.5,
                " down: unreachable,\n replicas (hatched)\n serve nothing",
                fontsize=7,
                va="center",
            )
        for kind, (marker, mcolour, _) in ACTION_STYLES.items():
            at = [s.t / 60 for s in steps if f"{kind}/{name}" in s.actions]
            if at:
                kinds_seen.add(kind)
                row = list(ACTION_STYLES).index(kind)
                ax.plot(
                    at,
                    [0.93 - 0.09 * row] * len(at),
                    marker=marker,
                    color=mcolour,
                    ls="none",
                    ms=5,
                    transform=ax.get_xaxis_transform(),
                    clip_on=False,
                    label="_nolegend_",
                )
        ax.set_ylabel(name, color=colour, fontweight="bold")
        handles, labels = ax.get_legend_handles_labels()
        labels = [lb.removeprefix(f"{name} ") for lb in labels]
        if i == 0 and any(c.down for s in steps for c in s.clusters.values()):
            handles.append(Patch(facecolor="none", edgecolor="black", hatch="////", label="while down"))
            labels.append("while down")
        ax.legend(handles, labels, ncol=2 if len(labels) > 5 else 1, **legend_right)

    # the kinds of controller action, named once, next to the fleet panel
    action_handles = [
        Line2D([], [], marker=m, color=c, ls="none", label=text)
        for kind, (m, c, text) in ACTION_STYLES.items()
        if kind in kinds_seen
    ]
    fleet_legend = ax_fleet.legend(**legend_right)
    if action_handles:
        ax_fleet.add_artist(fleet_legend)
        ax_fleet.legend(
            handles=action_handles,
            title="controller actions\n(markers in the cluster panels)",
            title_fontsize=8,
            loc="lower left",
            bbox_to_anchor=(1.005, 0.0),
            fontsize=8,
            borderaxespad=0,
        )
    ax_load.legend(**legend_right)

    # outages on the shared panels
    for name in names:
        for begin, end in _spans([s.clusters[name].down for s in steps], times, dt):
            for ax in (ax_fleet, ax_load):
                ax.axvspan(begin, end, color="gray", alpha=0.15, lw=0, zorder=0)
            ax_fleet.text(begin, top * 1.1, f" {name} down (not stacked)", fontsize=8, va="top")
    for begin, end in _spans([not s.controller_up for s in steps], times, dt):
        for ax in axes:
            ax.axvspan(begin, end, color="black", alpha=0.08, lw=0, zorder=0)
        ax_load.text(begin, 0, " controller down", fontsize=8, va="bottom")
        ax_fleet.text(begin, top * 1.1, " controller down", fontsize=8, va="top")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.set_xlim(0, x[-1] if x else 1)
    axes[-1].set_xlabel("minutes since start")
    fig.tight_layout()
    return fig


def plotting_available() -> bool:
    """Is matplotlib installed? It is the optional extra ``sim`` (``make demo`` installs it; the
    production image does not), so the simulator runs without it and only skips timeline.png."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def write_png(result: RunResult, path: Path) -> None:
    """timeline.png: replicas serving (reachable clusters, stacked) against F.min and F.max; demand,
    served and unserved; and one panel per cluster with its ready/starting/pending pods, the min and max
    the controller gave its HPA, its capacity and the controller's actions on it. Outages are shaded;
    a down cluster's replicas are hatched in its own panel and not stacked in the fleet's."""
    import matplotlib.pyplot as plt

    fig = draw_timeline(result)
    fig.savefig(path, dpi=90)
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


Rank = Callable[[dict[str, Any]], float]
"""A row's figure in the form where lower is better, rounded as printed (so printed ties are ties)."""


def _absorb_rank(s: dict[str, Any]) -> float:
    return -1.0 if s["time_to_absorb_s"] is None else round(s["time_to_absorb_s"])


TABLE_ROWS: tuple[tuple[str, Callable[[dict[str, Any]], str], Rank | None], ...] = (
    ("policy", lambda s: f"{s['policy']}{'' if s['scale_assist'] else ' (no assist)'}", None),
    (
        "served (of demand)",
        lambda s: f"{s['served_fraction']:.1%}",
        lambda s: -round(s["served_fraction"], 3),
    ),
    ("clusters", lambda s: str(len(s["replica_seconds"])), None),
    ("oracle served fraction", lambda s: f"{s['oracle_served_fraction']:.1%}", None),
    ("served / oracle", lambda s: f"{s['served_vs_oracle']:.1%}", lambda s: -round(s["served_vs_oracle"], 3)),
    (
        "unserved rps-seconds",
        lambda s: f"{s['unserved_rps_seconds']:,.0f}",
        lambda s: round(s["unserved_rps_seconds"]),
    ),
    (
        "replica-seconds",
        lambda s: f"{s['replica_seconds_total']:,.0f}",
        lambda s: round(s["replica_seconds_total"]),
    ),
    ("cost", lambda s: f"{s['cost_total']:,.2f}", lambda s: round(s["cost_total"], 2)),
    (
        "peak replicas",
        lambda s: str(s["peak_replicas_total"]) + (ABOVE_MAX_MARK if _above_max(s) else ""),
        None,
    ),
    (
        "time to absorb",
        lambda s: "-" if s["time_to_absorb_s"] is None else f"{s['time_to_absorb_s']:.0f} s",
        _absorb_rank,
    ),
    (
        "longest shortfall",
        lambda s: f"{s['longest_shortfall_vs_oracle_s']:.0f} s",
        lambda s: round(s["longest_shortfall_vs_oracle_s"]),
    ),
    ("controller actions", lambda s: str(s["controller_actions"]), None),
    ("member API writes", lambda s: str(s["api_writes_total"]), lambda s: s["api_writes_total"]),
    ("violations", lambda s: str(s["violation_count"]), lambda s: s["violation_count"]),
)
BEST_MARK = "*"
ALL_EQUAL = "(all equal)"
ABOVE_MAX_MARK = "+"


def _above_max(s: dict[str, Any]) -> bool:
    """Did the fleet's pods peak above F.max (a reader takes that for a broken ceiling)?"""
    return s.get("max_replicas") is not None and s["peak_replicas_total"] > s["max_replicas"]


def _above_max_note(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Why a peak above F.max is not a breach: the ceiling bounds the maxes of the reachable member HPAs,
    Duplicated gives every cluster the whole F.max, and pods a failed-over cluster still runs count."""
    notes = []
    for label, s in rows:
        if _above_max(s):
            why = (
                "Duplicated gives every cluster's HPA the whole F.max"
                if s["policy"] == "Duplicated"
                else "pods of unreachable or failed-over clusters count in the peak, not in the ceiling"
            )
            peak, ceiling = s["peak_replicas_total"], s["max_replicas"]
            notes.append(f"{ABOVE_MAX_MARK} {label}: peak {peak} above F.max {ceiling}: {why}")
    return notes


def best_of(rows: list[tuple[str, dict[str, Any]]], rank: Rank) -> list[str]:
    """The labels of the runs best on one row (several on a tie); every label when all are equal."""
    values = [rank(s) for _, s in rows]
    return [label for (label, _), v in zip(rows, values, strict=True) if v == min(values)]


def format_table(rows: list[tuple[str, dict[str, Any]]]) -> str:
    """Runs side by side: one column per run, the best on each comparable row marked ``*`` and named in
    the ``best`` column (higher served; lower unserved, replica-seconds, cost, times, writes, violations).
    A single run has nothing to compare: no ``best`` column and no legend for it."""
    compared = len(rows) > 1
    header = ["", *[f"{label} " for label, _ in rows], *(["best"] if compared else [])]
    table = [header]
    for name, fmt, rank in TABLE_ROWS:
        winners = best_of(rows, rank) if rank is not None and len(rows) > 1 else []
        losers = [label for label, _ in rows if label not in winners]
        if not winners:
            best = ""
        elif not losers:  # nothing to choose between: no marks
            winners, best = [], ALL_EQUAL
        elif len(winners) <= len(losers):
            best = ", ".join(winners)
        else:
            best = "all but " + ", ".join(losers)
        cells = [fmt(s) + (BEST_MARK if label in winners else " ") for label, s in rows]
        table.append([name, *cells, *([best] if compared else [])])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    last = len(header) - 1 if compared else -1
    out = []
    for j, row in enumerate(table):
        out.append(
            "  ".join(
                cell.ljust(widths[i]) if i in (0, last) else cell.rjust(widths[i])
                for i, cell in enumerate(row)
            ).rstrip()
        )
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    if compared:
        out.append(
            f"{BEST_MARK} best on the row: higher served; "
            "lower unserved, replica-seconds, cost, times, writes, violations"
        )
    return "\n".join(out + _above_max_note(rows))
