"""The simulator's native-HPA emulation held against the real HPA controller (issue 14, item 4).

One load trace and one HPA spec go through both:

* the simulator's emulation (``simulator.native_hpa.NativeHPA``) on a virtual clock with upstream's
  timings: a 15 s sync, 5 min downscale stabilization, pods Ready ``STARTUP_S`` after they start,
  each ready pod using its share of the demand (``simulator.load.share_load``'s model);
* a real Kubernetes v1.20.2 member (tests/support/kubemember.py, built by scripts/kube-build.sh) in
  real time, compressed by ``COMPRESS``: the controller-manager's sync period, downscale
  stabilization, CPU initialization period and readiness delay, the pod start-up delay, the trace's
  step length and the ``behavior`` windows and periods are all divided by it. The member's
  metrics.k8s.io server reports the same per-pod share from the same trace.

Two variants run side by side (two members): the HPA without ``behavior`` (the legacy path) and
with one. For each it records both replica trajectories (the real one in trace seconds, i.e. real
seconds times ``COMPRESS``) and compares them:

* ``settled_step_mismatches``: trace steps at whose end the replica counts differ, among the steps
  that are settled on both sides (no scale event in the sync period that ends the step: on which side
  of the boundary such an event lands is the sync phase); ``step_end_mismatches`` counts them all;
* ``max_event_lag_s``: the largest delay, in trace seconds, between matching scale events (the n-th
  change of each trajectory), which the target keeps within one sync period (15 s).

Run: ``.venv/bin/python bench/hpa_fidelity.py [--out DIR] [--json]`` (needs ``make kube``); about
five minutes of wall time. Writes DIR/hpa_fidelity.json and DIR/hpa_fidelity.png. With
``--interplay`` it runs the controller's burst assist against real member HPAs instead
(``bench/burst_interplay.py``).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.native_hpa import DOWNSCALE_STABILIZATION_S, SYNC_PERIOD_S, NativeHPA
from simulator.replica_calculator import PodReadings

COMPRESS = 5  # real seconds = trace seconds / COMPRESS (15 s sync -> 3 s)
STEP_S = 60  # trace seconds per load step
STARTUP_S = 10  # trace seconds from a pod's start to Ready
REQUEST_MILLI = 1000
TARGET_UTILIZATION = 50
MIN_REPLICAS, MAX_REPLICAS = 1, 10
# demand in millicores per step: a ramp, a plateau, a fall in two stages, a tail for the stabilization
TRACE = [
    400,
    400,
    1800,
    1800,
    3600,
    3600,
    3600,
    2000,
    2000,
    1200,
    1200,
    600,
    600,
    600,
    600,
    600,
    600,
    300,
    300,
    300,
]
BEHAVIOR = {
    "scaleUp": {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 2, "periodSeconds": 30}],
    },
    "scaleDown": {
        "stabilizationWindowSeconds": 120,
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
    },
}


def hpa_spec(behavior: dict[str, Any] | None, scale: float = 1.0) -> dict[str, Any]:
    """The HPA spec; ``scale`` divides the behavior's windows and periods (the compressed real run)."""
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": MIN_REPLICAS,
        "maxReplicas": MAX_REPLICAS,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": TARGET_UTILIZATION},
                },
            }
        ],
    }
    if behavior is not None:
        spec["behavior"] = _scaled_behavior(behavior, scale)
    return spec


def _scaled_behavior(behavior: dict[str, Any], scale: float) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(behavior))
    for rules in out.values():
        rules["stabilizationWindowSeconds"] = round(rules["stabilizationWindowSeconds"] / scale)
        for policy in rules["policies"]:
            policy["periodSeconds"] = max(1, round(policy["periodSeconds"] / scale))
    return out


# ----------------------------------------------------------------------------------------------------
# comparison (pure)

Trajectory = list[tuple[float, int]]  # (trace seconds, replicas) at each change, first entry at 0


@dataclass
class Comparison:
    variant: str
    settled_sim: list[int]
    settled_real: list[int]
    step_end_mismatches: int  # steps whose end values differ, settled or not
    unsettled_steps: list[int]  # steps with a scale event of either side in their last sync period
    settled_step_mismatches: int  # steps, settled on both sides, whose end values differ
    events_sim: list[tuple[float, int]]
    events_real: list[tuple[float, int]]
    event_lags_s: list[float]
    max_event_lag_s: float | None
    event_count_difference: int


def value_at(trajectory: Trajectory, t: float) -> int:
    """Replicas held at trace time ``t`` (the last change at or before it)."""
    value = trajectory[0][1]
    for at, replicas in trajectory:
        if at > t:
            break
        value = replicas
    return value


def settled(trajectory: Trajectory, steps: int, step_s: float) -> list[int]:
    """Replicas at the end of each step (just before the next one begins)."""
    return [value_at(trajectory, (i + 1) * step_s - 1e-6) for i in range(steps)]


def events(trajectory: Trajectory) -> list[tuple[float, int]]:
    """The scale events: every change after the initial value."""
    out, last = [], trajectory[0][1]
    for at, replicas in trajectory[1:]:
        if replicas != last:
            out.append((at, replicas))
            last = replicas
    return out


def unsettled(event_times: Sequence[float], steps: int, step_s: float, sync_s: float) -> list[int]:
    """Steps with a scale event in the sync period that ends them: which side of the boundary such an
    event falls on is the sync phase, not the controller's decision. An event at the boundary itself
    belongs to the next step (it answers that step's load and is not in this step's end value)."""
    return [
        i for i in range(steps) if any((i + 1) * step_s - sync_s <= t < (i + 1) * step_s for t in event_times)
    ]


def compare(
    variant: str, sim: Trajectory, real: Trajectory, steps: int, step_s: float, sync_s: float = SYNC_PERIOD_S
) -> Comparison:
    a, b = settled(sim, steps, step_s), settled(real, steps, step_s)
    ev_sim, ev_real = events(sim), events(real)
    lags = [abs(r[0] - s[0]) for s, r in zip(ev_sim, ev_real, strict=False)]
    loose = unsettled([t for t, _ in ev_sim + ev_real], steps, step_s, sync_s)
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    return Comparison(
        variant=variant,
        settled_sim=a,
        settled_real=b,
        step_end_mismatches=len(differ),
        unsettled_steps=loose,
        settled_step_mismatches=sum(1 for i in differ if i not in loose),
        events_sim=ev_sim,
        events_real=ev_real,
        event_lags_s=[round(x, 1) for x in lags],
        max_event_lag_s=round(max(lags), 1) if lags else None,
        event_count_difference=len(ev_real) - len(ev_sim),
    )


# ----------------------------------------------------------------------------------------------------
# the simulator's side


def run_simulated(trace: Sequence[int], behavior: dict[str, Any] | None) -> Trajectory:
    """The emulation on a virtual clock: a sync every SYNC_PERIOD_S, pods Ready STARTUP_S after start."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    hpa = NativeHPA("web", hpa_spec(behavior))
    replicas = MIN_REPLICAS
    starts: list[float] = [-STARTUP_S] * replicas  # the initial pods are Ready
    trajectory: Trajectory = [(0.0, replicas)]
    t = 0.0
    end = len(trace) * STEP_S
    while t < end:
        demand = trace[min(int(t // STEP_S), len(trace) - 1)]
        ready = sum(1 for s in starts if t - s >= STARTUP_S)
        usage = int(demand / ready) if ready else 0
        readings = PodReadings(
            ready=ready, unready=len(starts) - ready, usage_total=ready * usage, request_per_pod=REQUEST_MILLI
        )
        result = hpa.sync(start + timedelta(seconds=t), replicas, readings)
        if result.replicas != replicas:
            if result.replicas > replicas:
                starts.extend([t] * (result.replicas - replicas))
            else:
                starts = sorted(starts)[: result.replicas]  # the newest pods go first
            replicas = result.replicas
            trajectory.append((t, replicas))
        t += SYNC_PERIOD_S
    return trajectory


# ----------------------------------------------------------------------------------------------------
# the real member's side


def run_real(name: str, trace: Sequence[int], behavior: dict[str, Any] | None) -> Trajectory:
    """The trace through a real member, compressed; the trajectory in trace seconds."""
    from tests.support.kube_load import LoadModel
    from tests.support.kubemember import HPAFlags, KubeMember, NodeSpec, wait_for

    flags = HPAFlags(
        sync_period_s=SYNC_PERIOD_S / COMPRESS,
        downscale_stabilization_s=DOWNSCALE_STABILIZATION_S / COMPRESS,
        cpu_initialization_period_s=300 / COMPRESS,
        initial_readiness_delay_s=30 / COMPRESS,
    )
    model = LoadModel()
    member = KubeMember(
        name,
        nodes=[NodeSpec(f"{name}-node", cpu="64")],
        model=model,
        hpa=flags,
        startup_delay=STARTUP_S / COMPRESS,
    )
    member.start()
    try:
        member.create_namespace("fid")
        member.create_deployment("fid", "web", replicas=MIN_REPLICAS, cpu=f"{REQUEST_MILLI}m")
        wait_for(lambda: member.pod_summary("fid", "web")["ready"] == MIN_REPLICAS, 60, "initial pods ready")
        model.set_demand("fid", "web", trace[0])
        member.create(
            "/apis/autoscaling/v2beta2/namespaces/fid/horizontalpodautoscalers",
            {"metadata": {"name": "web"}, "spec": hpa_spec(behavior, COMPRESS)},
        )
        return _follow(member, model, trace)
    finally:
        member.stop()


def _follow(member: Any, model: Any, trace: Sequence[int]) -> Trajectory:
    """Drive the demand through the trace and poll the Deployment's replicas."""
    begin = time.monotonic()
    step_real = STEP_S / COMPRESS
    trajectory: Trajectory = [(0.0, MIN_REPLICAS)]
    stop = threading.Event()

    def drive() -> None:
        for i, demand in enumerate(trace):
            delay = begin + i * step_real - time.monotonic()
            if delay > 0 and stop.wait(delay):
                return
            model.set_demand("fid", "web", demand)

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    end = begin + len(trace) * step_real
    try:
        while time.monotonic() < end:
            now = (time.monotonic() - begin) * COMPRESS
            replicas = int(
                member.get("/apis/apps/v1/namespaces/fid/deployments/web/scale")["spec"]["replicas"]
            )
            if replicas != trajectory[-1][1]:
                trajectory.append((round(now, 1), replicas))
            time.sleep(0.2)
    finally:
        stop.set()
    return trajectory


# ----------------------------------------------------------------------------------------------------
# output


def plot(results: list[tuple[Comparison, Trajectory, Trajectory]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(10, 3.6 * len(results)), sharex=True)
    axes = axes if len(results) > 1 else [axes]
    end = len(TRACE) * STEP_S
    for ax, (cmp, sim, real) in zip(axes, results, strict=True):
        for traj, label, style in ((sim, "simulator", "-"), (real, "real v1.20.2", "--")):
            xs = [t for t, _ in traj] + [end]
            ys = [r for _, r in traj] + [traj[-1][1]]
            ax.step(xs, ys, where="post", linestyle=style, label=label)
        demand = ax.twinx()
        edges = [i * STEP_S for i in range(len(TRACE) + 1)]
        demand.step(edges, [*TRACE, TRACE[-1]], where="post", color="grey", alpha=0.3)
        demand.set_ylabel("demand (millicores)")
        ax.set_ylabel("replicas")
        ax.set_title(
            f"{cmp.variant}: {cmp.settled_step_mismatches} settled-step mismatches, "
            f"max event lag {cmp.max_event_lag_s} s"
        )
        ax.legend(loc="upper right")
    axes[-1].set_xlabel("trace seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/hpa_fidelity", help="directory for the JSON and the PNG")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument(
        "--interplay",
        action="store_true",
        help="instead: a burst through the controller and two real members, burst assist on and off "
        "(bench/burst_interplay.py)",
    )
    parser.add_argument(
        "--simulated-only", action="store_true", help="with --interplay: the simulator's side alone"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.interplay:
        from bench.burst_interplay import main_interplay

        return main_interplay(out, real_members=not args.simulated_only)
    out.mkdir(parents=True, exist_ok=True)
    variants = {"no-behavior": None, "behavior": BEHAVIOR}
    with concurrent.futures.ThreadPoolExecutor(len(variants)) as pool:
        real = {v: pool.submit(run_real, f"fid-{v}", TRACE, b) for v, b in variants.items()}
        results = []
        for variant, behavior in variants.items():
            sim = run_simulated(TRACE, behavior)
            real_traj = real[variant].result()
            results.append((compare(variant, sim, real_traj, len(TRACE), STEP_S), sim, real_traj))
    report = {
        "compress": COMPRESS,
        "sync_period_s": SYNC_PERIOD_S,
        "step_s": STEP_S,
        "trace_millicores": TRACE,
        "variants": [asdict(c) for c, _, _ in results],
        "settled_step_mismatches": sum(c.settled_step_mismatches for c, _, _ in results),
        "step_end_mismatches": sum(c.step_end_mismatches for c, _, _ in results),
        "max_event_lag_s": max((c.max_event_lag_s or 0.0) for c, _, _ in results),
    }
    (out / "hpa_fidelity.json").write_text(json.dumps(report, indent=2))
    plot(results, out / "hpa_fidelity.png")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for cmp, _, _ in results:
            print(f"{cmp.variant}: settled sim  {cmp.settled_sim}")
            print(f"{' ' * len(cmp.variant)}  settled real {cmp.settled_real}")
            print(
                f"{' ' * len(cmp.variant)}  settled-step mismatches {cmp.settled_step_mismatches} "
                f"(step-end mismatches {cmp.step_end_mismatches}, unsettled steps {cmp.unsettled_steps}), "
                f"max event lag {cmp.max_event_lag_s} s, event count difference {cmp.event_count_difference}"
            )
        print(f"wrote {out / 'hpa_fidelity.json'} and {out / 'hpa_fidelity.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
