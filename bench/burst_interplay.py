"""Burst assist against real member HPAs: the controller and v1.20 HPAs on one burst, assist on and off.

``bench/hpa_fidelity.py`` holds one HPA alone against the simulator's emulation. What it cannot show is
the interplay: the controller writing replicas to a member ahead of that member's HPA, and what the
HPA does with replicas its own recommendations never asked for. This runs one burst twice, with
``--burst-assist`` and with ``--no-burst-assist``, on the kube tier's pair of members (m1: one 2-CPU
node, four 500m pods; m2: nodes of 1 and 1.5 CPU, five pods), a Prioritized FederatedHPA F 2..10 that
prefers m1, and the tier's HPA flags (2 s sync, 10 s downscale stabilization). The load is the
simulator's: one CPU demand shared by every ready pod of both members.

Each run reports, from the moment the demand steps up:

* ``pods_started``: replicas added to the members' Deployments, by anyone;
* ``removed_within_30s``: replicas taken away again within 30 s of a rise in the same member (what a
  member HPA undoes of a write it did not ask for);
* ``absorb_s``: seconds until the ready pods can carry the demand at the target (and stay so);
* ``peak_replicas`` against ``needed``: the overshoot;
* ``assist_writes``: the BurstAssisted Events' targets (cluster -> replicas), with their times.

The simulated side (:func:`simulated`) runs burst fleets of bench/scenarios/ through ``simulator.engine``
with assist on and off and counts the assisted replicas the emulated member HPAs take away again within
their downscale window (tests/simulator/test_burst_interplay.py holds the emulation to the real HPAs:
where they undo assisted replicas, it must too).

Run: ``.venv/bin/python bench/hpa_fidelity.py --interplay [--out DIR]`` (needs ``make kube``); about
four minutes of wall time. Writes DIR/burst_interplay.json.
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.native_hpa import DOWNSCALE_STABILIZATION_S, SYNC_PERIOD_S

POD_MILLI = 500
TARGET_UTILIZATION = 80
PER_POD_MILLI = POD_MILLI * TARGET_UTILIZATION // 100  # what one pod carries at the target
BASE_DEMAND = 2 * PER_POD_MILLI
BURST_DEMAND = 7 * PER_POD_MILLI  # 7 pods at the target: 4 fit on m1, the rest go to m2
WATCH_S = 90.0  # seconds followed after the demand steps up
UNDO_WINDOW_S = 30.0
SAMPLE_S = 0.5

Sample = tuple[float, dict[str, int], dict[str, int]]  # (seconds since the step, replicas, ready) per member


@dataclass
class RunFigures:
    mode: str
    needed: int
    pods_started: int
    removed_within_30s: int
    absorb_s: float | None
    peak_replicas: int
    assist_writes: list[tuple[float, str]] = field(default_factory=list)
    # (seconds, replicas per member, ready per member) at each change: where the figures come from
    timeline: list[Sample] = field(default_factory=list)


def fhpa_spec() -> dict[str, Any]:
    """The FederatedHPA of both sides: Prioritized, m1 first, the legacy HPA path (no behavior)."""
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 10,
        "autoscaleMultiClusterDelay": 4,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": TARGET_UTILIZATION},
                },
            }
        ],
        "federatedHPAAssignment": {
            "federatedHPAAssignmentType": "Prioritized",
            "clusterAutoscalingPreference": [
                {"targetCluster": {"clusterNames": ["m1"]}, "priority": 2},
                {"targetCluster": {"clusterNames": ["m2"]}, "priority": 1},
            ],
        },
    }


# ----------------------------------------------------------------------------------------------------
# figures (pure)


def figures(mode: str, samples: Sequence[Sample], demand: int, writes: list[tuple[float, str]]) -> RunFigures:
    """The run's figures from its timeline (samples in time order)."""
    needed = math.ceil(demand / PER_POD_MILLI)
    started = removed = 0
    last_rise: dict[str, float] = {}
    previous = samples[0][1] if samples else {}
    for at, replicas, _ready in samples[1:]:
        for name, count in replicas.items():
            before = previous.get(name, count)
            if count > before:
                started += count - before
                last_rise[name] = at
            elif count < before and name in last_rise and at - last_rise[name] <= UNDO_WINDOW_S:
                removed += before - count
        previous = replicas
    return RunFigures(
        mode=mode,
        needed=needed,
        pods_started=started,
        removed_within_30s=removed,
        absorb_s=absorbed_at(samples, needed),
        peak_replicas=max((sum(r.values()) for _, r, _ in samples), default=0),
        assist_writes=writes,
        timeline=[x for i, x in enumerate(samples) if i == 0 or x[1:] != samples[i - 1][1:]],
    )


def absorbed_at(samples: Sequence[Sample], needed: int) -> float | None:
    """The first time from which the ready pods stay at ``needed`` or more until the end."""
    at: float | None = None
    for t, _replicas, ready in samples:
        carried = sum(ready.values()) >= needed
        at = (at if at is not None else t) if carried else None
    return at


# ----------------------------------------------------------------------------------------------------
# the kube tier's side


def run_real(out: Path) -> list[RunFigures]:
    """Both modes on one pair of real members and one control plane, a namespace per mode."""
    from tests.e2e.kube.test_controller import KubeWorld
    from tests.e2e.realapi.test_controller import CRDS, ControllerProcess
    from tests.support.kube_fixtures import SESSION_NODES, delete_namespace
    from tests.support.kube_load import LoadModel
    from tests.support.kubemember import KubeMember, wait_for
    from tests.support.realapi import RealAPIServer

    load = LoadModel()
    members = {n: KubeMember(n, nodes=nodes, model=load) for n, nodes in SESSION_NODES.items()}
    realapi = RealAPIServer(name="interplay")
    results = []
    try:
        realapi.start()
        for member in members.values():
            member.start()
        realapi.install_crds(CRDS)
        for mode in ("assist-on", "assist-off"):
            ns = f"burst-{mode}"
            for member in members.values():
                member.create_namespace(ns)
            workdir = Path(tempfile.mkdtemp(prefix=f"{mode}-", dir=out))
            world = KubeWorld(realapi, members, ns, workdir)
            try:
                flag = "--burst-assist" if mode == "assist-on" else "--no-burst-assist"
                proc = ControllerProcess(world.front, workdir, mode, ns).start(
                    leader_elect=False, extra=(flag,)
                )
                world.controller = proc
                wait_for(lambda p=proc: "starting controllers" in p.log(), 180, "the controller up")
                results.append(_burst(world, load, mode, wait_for))
            finally:
                world.close()
                for member in members.values():
                    delete_namespace(member, ns)
                load.set_demand(ns, "web", 0)
    finally:
        for member in members.values():
            member.stop()
        realapi.stop()
    return results


def _burst(world: Any, load: Any, mode: str, wait_for: Any) -> RunFigures:
    members = world.members
    for member in members.values():
        member.create_deployment(world.ns, "web", replicas=1, cpu=f"{POD_MILLI}m")
    load.set_demand(world.ns, "web", BASE_DEMAND)
    world.create_fhpa(fhpa_spec())
    wait_for(lambda: all(world.bounds().values()), 90, "member HPAs on both members")
    wait_for(lambda: _ready(members, world.ns) >= 2, 90, "the fleet at F.min")
    time.sleep(12)  # one downscale window of the member HPAs: their histories hold the quiet load
    load.set_demand(world.ns, "web", BURST_DEMAND)
    begin = time.monotonic()
    samples: list[Sample] = []
    seen: set[str] = set()
    writes: list[tuple[float, str]] = []
    while (now := time.monotonic() - begin) < WATCH_S:
        replicas = {n: _replicas(m, world.ns) for n, m in sorted(members.items())}
        ready = {n: m.pod_summary(world.ns, "web")["ready"] for n, m in sorted(members.items())}
        samples.append((round(now, 1), replicas, ready))
        for event in world.core.store.list_objects("events", world.ns)[0]:
            key = f"{event['metadata']['name']}/{event.get('count')}"
            if event.get("reason") == "BurstAssisted" and key not in seen:
                seen.add(key)
                writes.append((round(now, 1), event["message"].split(": ", 1)[-1]))
        time.sleep(SAMPLE_S)
    return figures(mode, samples, BURST_DEMAND, writes)


def _replicas(member: Any, ns: str) -> int:
    return int(member.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web")["spec"]["replicas"])


def _ready(members: dict[str, Any], ns: str) -> int:
    return sum(m.pod_summary(ns, "web")["ready"] for m in members.values())


def report(results: list[RunFigures]) -> dict[str, Any]:
    return {
        "burst_demand_millicores": BURST_DEMAND,
        "per_pod_millicores_at_target": PER_POD_MILLI,
        "runs": [asdict(r) for r in results],
    }


def print_table(title: str, results: list[RunFigures]) -> None:
    print(title)
    print(f"  {'mode':<11} {'started':>7} {'removed<30s':>11} {'absorb s':>8} {'peak':>4} {'needed':>6}")
    for r in results:
        absorb = "-" if r.absorb_s is None else f"{r.absorb_s:.1f}"
        print(
            f"  {r.mode:<11} {r.pods_started:>7} {r.removed_within_30s:>11} {absorb:>8} "
            f"{r.peak_replicas:>4} {r.needed:>6}"
        )
        for at, what in r.assist_writes:
            print(f"    {at:>6.1f} s BurstAssisted {what}")


@dataclass
class SimulatedFigures:
    fleet: str
    mode: str
    assisted: int  # replicas the BurstAssisted writes added
    removed: int  # of those, taken away again within the member HPA's window (and two syncs)
    restarted: int  # of those, started again by a later assist (the controller and the HPA fighting)
    served_pct: float
    replica_seconds: float


HPA_UNDO_S = DOWNSCALE_STABILIZATION_S + 2 * SYNC_PERIOD_S  # when a member HPA undoes a write at the latest


def assist_undone(result: Any) -> tuple[int, int, int]:
    """(replicas the BurstAssisted writes added, of those gone again within ``HPA_UNDO_S``, and of those
    started again by a later assist within ``HPA_UNDO_S`` of their removal: the fight)."""
    start = result.scenario.file.start
    writes = []
    for event in result.events:
        if event.reason == "BurstAssisted":
            at = (event.at - start).total_seconds()
            writes += [(at, c, int(n)) for c, n in re.findall(r"(\S+) -> (\d+)", event.message)]
    assisted = undone = again = 0
    for at, cluster, written in writes:
        before = ([s.clusters[cluster].replicas for s in result.steps if s.t < at] or [0])[-1]
        after = [(s.t, s.clusters[cluster].replicas) for s in result.steps if at < s.t <= at + HPA_UNDO_S]
        low_at, low = min(after, key=lambda x: x[1], default=(at, written))
        assisted += max(0, written - before)
        gone = max(0, written - low)
        undone += gone
        later = [w for t, c, w in writes if c == cluster and low_at <= t <= low_at + HPA_UNDO_S]
        again += min(gone, max(later, default=low) - low)
    return assisted, undone, again


def with_assist(scenario: Any, assist: bool, readiness_pass: bool = True) -> Any:
    """The scenario run by a controller with ``--burst-assist`` or without, passing on readiness
    changes before the member HPAs sync (``readinessPass``) as a real one does, unless told not to."""
    planner = scenario.file.planner.model_copy(update={"burst_assist": assist})
    file = scenario.file.model_copy(update={"planner": planner, "readiness_pass": readiness_pass})
    return scenario.model_copy(update={"file": file})


def simulated(path: Path, assist: bool) -> SimulatedFigures:
    """One burst fleet of bench/scenarios/ through the simulator, assist on or off."""
    from simulator.engine import simulate
    from simulator.scenario import load_scenario

    result = simulate(with_assist(load_scenario(path), assist))
    assisted, removed, restarted = assist_undone(result)
    demand = sum(s.demand_rps for s in result.steps)
    return SimulatedFigures(
        fleet=path.stem,
        mode="assist-on" if assist else "assist-off",
        assisted=assisted,
        removed=removed,
        restarted=restarted,
        served_pct=round(100 * sum(s.served_rps for s in result.steps) / demand, 2) if demand else 100.0,
        replica_seconds=sum(sum(c.replicas for c in s.clusters.values()) for s in result.steps)
        * result.step_seconds,
    )


SIMULATED_FLEETS = ("hybrid-burst", "flash-crowd")


def main_interplay(out: Path, real_members: bool = True) -> int:
    out.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parent / "scenarios"
    sims = [simulated(root / f"{f}.yaml", a) for f in SIMULATED_FLEETS for a in (True, False)]
    print("simulator (15 s HPA syncs, 5 min downscale window)")
    heads = ("assisted", "undone", "again", "served %", "replica-s")
    print(f"  {'fleet':<13} {'mode':<11} " + " ".join(f"{h:>9}" for h in heads))
    for f in sims:
        print(
            f"  {f.fleet:<13} {f.mode:<11} {f.assisted:>9} {f.removed:>9} {f.restarted:>9} "
            f"{f.served_pct:>9} {f.replica_seconds:>9.0f}"
        )
    real = run_real(out) if real_members else []
    if real:
        print_table("real v1.20.2 members (2 s HPA syncs, 10 s downscale window)", real)
    body = {**report(real), "simulated": [asdict(f) for f in sims]}
    (out / "burst_interplay.json").write_text(json.dumps(body, indent=2))
    return 0
