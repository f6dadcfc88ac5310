"""A hypothesis state machine drives the simulator through random fleets and random event sequences and
measures the FederatedHPA's four promises (DESIGN §4) after every rule (issue 11, deliverable 2).

Fleets: 1-5 clusters with random capacities (0 and small ones included) and starting replicas (0 and
above capacity included), any of the five policies with random weights or priorities, F.min/F.max
(F.min above the fleet's capacity and F.max below what runs, sometimes), scalingToZero on and off,
autoscaleMultiClusterDelay, pod start-up times and a demand; clusters may be elastic (a node group of
2-pod nodes that grows when pods pend, up to a max, after a provisioning time) and may run under a
namespace quota. Events: time passing, load steps and ramps, cluster outages and flaps, controller
outages, nodes lost or added by hand, and FederatedHPA spec changes (F.min/F.max, or policy,
preferences, scalingToZero and delay). Each simulated step is the simulator's own (15 s: the fleet moves,
the native HPAs sync, the real controller code runs).

After every rule ``simulator.promises.measure`` (the simulator's own measurement, from what the fleet did,
with the simulator's tolerances) runs over the steps recorded so far and must find no breach of the four
promises; nor may the engine's checks on the live objects (a member HPA with min above max, replicas given
to a cluster while it is down). A breach still in progress at the last recorded step is not one until it
outlasts its tolerance (``measure`` counts only the steps recorded); the teardown runs four more minutes of
the final state, so that such an episode either ends or is caught. Not asserted by default: measure()'s
max-sum-below-federated-max check (not one of the four promises; it fires when no selected cluster is
reachable and so no member HPA can be written, see the bench's ``--checks``). Two things measure() does
not know, which a step-by-step run adds:
- the policy can change within a run. The floor and every-replica-under-an-HPA are promised by every
  policy and are measured over all steps at once; the ceiling and calm are measured per run of steps under
  one policy, and not under Duplicated (which does not promise them);
- a spec change is the user moving the bounds, not "a steady load": calm is measured per run of steps
  between two spec changes (member maxes follow a new F.max, and that is no churn); a change of a
  cluster's room by hand starts a new run of steps too (maxes follow the room).

How it drives the simulator, through its public API only:
- one step is ``Simulation.step()``, the call ``Simulation.run`` makes in its loop;
- cluster and controller outages: ``Simulation.scenario`` is replaced by a copy whose
  ``clusters[].outages`` and ``controllerOutages`` hold the windows opened so far (an open one lasts a
  year), so a step sees them exactly as it sees those of a scenario file;
- demand: ``Simulation.load`` is replaced by an equal share of a flat trace or a ramp from now;
- F.min/F.max: ``SimulatedControlPlane.patch_federated_hpa_bounds`` (the ControlPlane port cron uses);
  a policy change: the new object, admitted by ``fhpa_api.validation.parse_object``, is stored with a
  bumped generation by ``SimulatedControlPlane.replace_federated_hpa_spec`` (``kubectl apply``);
- the steps and the engine's own checks: ``Simulation.steps`` and ``Simulation.violations``.

Reproducible: derandomized, no example database. ``make test`` does not shrink (a shrink of this machine
takes minutes): a breach is reported as found, with the violation's detail, the event log and the fleet
around it. ``bench/fleet_state_machine.py`` runs the same machine over many more examples and shrinks what
it finds; ``KNOWN_BREACHES`` at the end holds the breaches found so far, shrunk to a minimal fleet and
event sequence, each a strict expected failure until the planner keeps the promise.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from fhpa_api.models import FederatedHPA
from fhpa_api.validation import parse_object
from simulator.engine import Simulation
from simulator.load import EqualShare, Trace
from simulator.promises import CEILING, CHURN, FLOOR, MAX_SUM_BELOW, UNMANAGED, Violation, measure
from simulator.samples import StepSample
from simulator.scenario import Window, parse_scenario

ENGINE = "engine"  # the engine's own checks on the live objects (member-min-above-max, ...)
STEP_S = 15.0
NAMES = ("m1", "m2", "m3", "m4", "m5")
POLICIES = ("StaticWeighted", "DynamicWeighted", "Aggregated", "Prioritized", "Duplicated")
POD_RPS = 100.0  # podCapacity: rps one pod serves at 100% CPU
RPS_PER_POD = 80.0  # demand is drawn in pods' worth at the default 80% CPU target
FOREVER_S = 365 * 24 * 3600.0  # an outage window that is still open
POD_PER_NODE = 2  # an elastic cluster's nodes hold this many pods of the workload
SETTLE_STEPS = 28
"""Steps the teardown runs in the final state (7 min): longer than the longest tolerance (the floor's
grace plus one pass plus the slowest node provisioning, 75 + 180 s; a drain of one optimization period
plus one period unmanaged, 120 s), so that an episode still open at the last rule is either over or a
breach."""


# --- the fleet --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    name: str
    capacity: int  # elastic: the starting nodes' room, rounded down to whole nodes
    replicas: int  # Ready at t=0 (above capacity: the rest pend)
    startup_s: int
    grow_nodes: int | None = None  # elastic: nodes its group can add beyond the starting ones (None: fixed)
    provision_s: int = 60  # elastic: how long a node takes to come
    quota: int | None = None  # the namespace quota on pods (None: none)

    def cluster(self) -> dict[str, Any]:
        cluster: dict[str, Any] = {
            "name": self.name,
            "capacity": self.capacity,
            "replicas": self.replicas,
            "podStartup": self.startup_s,
        }
        if self.grow_nodes is not None:
            nodes = self.capacity // POD_PER_NODE
            cluster["capacity"] = nodes * POD_PER_NODE
            cluster["autoscaling"] = {
                "podsPerNode": POD_PER_NODE,
                "maxNodes": nodes + self.grow_nodes,
                "provisionSeconds": self.provision_s,
                "idleSeconds": 120,
            }
        if self.quota is not None:
            cluster["quota"] = {"pods": self.quota}
        return cluster

    def describe(self) -> str:
        text = f"{self.name} capacity {self.capacity} replicas {self.replicas} startup {self.startup_s}s"
        if self.grow_nodes is not None:
            text += f" elastic +{self.grow_nodes} nodes of {POD_PER_NODE} in {self.provision_s}s"
        return text + ("" if self.quota is None else f" quota {self.quota}")


@dataclass(frozen=True)
class Spec:
    """The FederatedHPA's spec, as the user writes it."""

    policy: str
    fmin: int
    fmax: int
    scaling_to_zero: bool = False
    delay_s: int = 0
    weights: tuple[int, ...] = ()  # StaticWeighted, per cluster in NAMES order
    priorities: tuple[int, ...] = ()  # Prioritized, per cluster in NAMES order
    excluded: tuple[str, ...] = ()  # clusterAffinity.exclude: clusters taken out of the selection

    def manifest(self, names: list[str]) -> dict[str, Any]:
        assignment: dict[str, Any] = {"federatedHPAAssignmentType": self.policy}
        if self.policy == "StaticWeighted":
            assignment["clusterAutoscalingPreference"] = [
                {"targetCluster": {"clusterNames": [n]}, "staticWeight": w}
                for n, w in zip(names, self.weights, strict=False)
            ]
        elif self.policy == "Prioritized":
            assignment["clusterAutoscalingPreference"] = [
                {"targetCluster": {"clusterNames": [n]}, "priority": p}
                for n, p in zip(names, self.priorities, strict=False)
            ]
        spec: dict[str, Any] = {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
            "minReplicas": self.fmin,
            "maxReplicas": self.fmax,
            "scalingToZero": self.scaling_to_zero,
            "autoscaleMultiClusterDelay": self.delay_s,
            "federatedHPAAssignment": assignment,
        }
        if self.excluded:
            spec["clusterAffinity"] = {"exclude": list(self.excluded)}
        return {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "FederatedHPA",
            "metadata": {"name": "app", "namespace": "default"},
            "spec": spec,
        }

    def describe(self) -> str:
        prefs = ""
        if self.policy == "StaticWeighted":
            prefs = f" weights {list(self.weights)}"
        elif self.policy == "Prioritized":
            prefs = f" priorities {list(self.priorities)}"
        zero = " scalingToZero" if self.scaling_to_zero else ""
        excluded = f" excluding {','.join(self.excluded)}" if self.excluded else ""
        return f"{self.policy}{prefs} F {self.fmin}..{self.fmax}{zero} delay {self.delay_s}s{excluded}"


@dataclass(frozen=True)
class Fleet:
    members: tuple[Member, ...]
    spec: Spec
    demand_pods: int  # demand at t=0, in pods' worth at the CPU target

    def scenario(self) -> dict[str, Any]:
        return {
            "name": "fleet-state-machine",
            "duration": "24h",  # unused: the machine runs the steps itself
            "step": STEP_S,
            "clusters": [m.cluster() for m in self.members],
            "load": {"podCapacity": POD_RPS, "trace": [{"at": 0, "rps": self.demand_pods * RPS_PER_POD}]},
            "federatedHPA": self.spec.manifest([m.name for m in self.members]),
        }

    def describe(self) -> str:
        clusters = ", ".join(m.describe() for m in self.members)
        return f"{clusters}; {self.spec.describe()}; demand {self.demand_pods} pods"


@dataclass
class Profile:
    """What the machine may draw and what it asserts. The test runs the default (everything); the bench
    can switch parts off to look past a breach already known (``bench/fleet_state_machine.py --help``)."""

    min_capacity: int = 0
    fmin_above_room: bool = True  # F.min above the fleet's capacity (off: F.min drawn within it)
    overfill: int = 5  # initial replicas up to capacity + this (above capacity: pods pend from t=0)
    zero_weights: bool = True  # StaticWeighted weights of 0 (a cluster that gets no share)
    max_delay_s: int = 120  # autoscaleMultiClusterDelay
    cluster_outages: bool = True  # cluster_outage, cluster_back, flap
    controller_outages: bool = True
    spec_changes: bool = True
    elastic: bool = True  # node groups that grow when pods pend
    quotas: bool = True  # namespace quotas that refuse pods
    capacity_changes: bool = True  # nodes lost or added by hand
    checks: frozenset[str] = frozenset((FLOOR, UNMANAGED, CEILING, CHURN, ENGINE))


PROFILE = Profile()


@st.composite
def capacities(draw: st.DrawFn) -> int:
    """Shrinks towards 1: 0 (a full cluster) stays in a reproduction only when it matters."""
    low = max(PROFILE.min_capacity, 1)
    edge = [st.just(0)] if PROFILE.min_capacity == 0 else []
    return draw(st.one_of(st.integers(low, max(low, 4)), st.integers(5, 40), *edge))


@st.composite
def weight_lists(draw: st.DrawFn) -> tuple[int, ...]:
    """m1's weight is at least 1 (the webhook wants one); the others shrink towards 1, not 0."""
    other = st.one_of(st.integers(1, 4), st.just(0)) if PROFILE.zero_weights else st.integers(1, 4)
    return (draw(st.integers(1, 4)), *(draw(other) for _ in NAMES[1:]))


@st.composite
def delays(draw: st.DrawFn) -> int:
    return draw(st.sampled_from([d for d in (0, 15, 30, 60, 120) if d <= PROFILE.max_delay_s]))


startups = st.sampled_from([30, 0, 15, 60, 120])
provisions = st.sampled_from([60, 0, 30, 180])
priority_lists = st.lists(st.integers(0, 3), min_size=5, max_size=5).map(tuple)


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    n = draw(st.integers(1, 5))
    members = []
    for name in NAMES[:n]:
        capacity = draw(capacities())
        member = Member(name, capacity, draw(st.integers(0, capacity + PROFILE.overfill)), draw(startups))
        if PROFILE.elastic and draw(st.booleans()):
            grow = draw(st.integers(0, 6))
            member = replace(member, grow_nodes=grow, provision_s=draw(provisions))
        if PROFILE.quotas and draw(st.booleans()):
            member = replace(member, quota=draw(st.integers(0, capacity + 10)))
        members.append(member)
    room = sum(m.capacity for m in members)
    running = sum(m.replicas for m in members)
    above = [st.integers(room + 1, room + 10)] if PROFILE.fmin_above_room else []
    fmin = draw(st.one_of(st.integers(1, max(1, room)), *above))
    fmax = draw(
        st.one_of(
            st.integers(fmin, 2 * room + 10),
            st.integers(fmin, max(fmin, running - 1)),  # below what runs
        )
    )
    spec = Spec(
        policy=draw(st.sampled_from(POLICIES)),
        fmin=fmin,
        fmax=fmax,
        scaling_to_zero=draw(st.booleans()),
        delay_s=draw(delays()),
        weights=draw(weight_lists()),
        priorities=draw(priority_lists),
    )
    return Fleet(tuple(members), spec, draw(st.integers(0, room + 10)))


# --- what the machine covered (the bench prints it; the test checks it ran thousands of steps) --------------


@dataclass
class Coverage:
    fleets: int = 0
    steps: int = 0
    rules: Counter[str] = field(default_factory=Counter)
    policies: Counter[str] = field(default_factory=Counter)
    sizes: Counter[int] = field(default_factory=Counter)

    def copy(self) -> Coverage:
        return Coverage(
            self.fleets, self.steps, Counter(self.rules), Counter(self.policies), Counter(self.sizes)
        )


COVERAGE = Coverage()


# --- breaches (one exception type per kind: hypothesis shrinks and reports each kind as its own bug) -------


class PromiseBreach(AssertionError):
    """The fleet broke a promise (or an engine check) in the run so far."""


class FloorBreach(PromiseBreach):
    pass


class UnmanagedBreach(PromiseBreach):
    pass


class CeilingBreach(PromiseBreach):
    pass


class ChurnBreach(PromiseBreach):
    pass


class MaxSumBelowBreach(PromiseBreach):
    pass


class EngineCheckBreach(PromiseBreach):
    pass


MEASURED = frozenset((FLOOR, UNMANAGED, CEILING, CHURN, MAX_SUM_BELOW))
BREACHES: dict[str, type[PromiseBreach]] = {
    FLOOR: FloorBreach,
    UNMANAGED: UnmanagedBreach,
    CEILING: CeilingBreach,
    CHURN: ChurnBreach,
    MAX_SUM_BELOW: MaxSumBelowBreach,
}


# --- the machine -------------------------------------------------------------------------------------------


class FleetMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sim: Simulation | None = None
        self.fleet: Fleet | None = None
        self.spec: Spec | None = None
        self.names: list[str] = []
        self.t = 0.0  # the next step's time
        self.cluster_windows: dict[str, list[tuple[float, float]]] = {}
        self.controller_windows: list[tuple[float, float]] = []
        self.policies: list[tuple[int, str]] = []  # (first step, policy)
        self.epochs: list[int] = [0]  # first step of each run of steps between two spec changes
        self.log: list[str] = []
        self.clean = False  # the last rule and its check passed: the teardown may settle and check again
        self.closed_segments: dict[tuple[int, int, str, tuple[str, ...]], list[Violation]] = {}

    # --- driving the simulation -----------------------------------------------------------------------

    @property
    def simulation(self) -> Simulation:
        assert self.sim is not None
        return self.sim

    @property
    def steps(self) -> list[StepSample]:
        return self.simulation.steps

    def note_event(self, what: str) -> None:
        self.log.append(f"t={self.t:.0f}s {what}")

    def advance(self, n: int) -> None:
        sim = self.simulation
        for _ in range(n):
            sim.step()
            self.t += STEP_S
        COVERAGE.steps += n

    def down(self, name: str) -> bool:
        return any(end > self.t for _, end in self.cluster_windows[name])

    @property
    def controller_down(self) -> bool:
        return any(end > self.t for _, end in self.controller_windows)

    def set_cluster(self, name: str, down: bool) -> None:
        windows = self.cluster_windows[name]
        if down:
            windows.append((self.t, self.t + FOREVER_S))
        else:
            start, _ = windows.pop()
            if start < self.t:  # no step ran while it was down: no window at all
                windows.append((start, self.t))
        self.note_event(f"cluster {name} {'down' if down else 'back'}")
        self.sync_windows()

    def set_controller(self, down: bool) -> None:
        if down:
            self.controller_windows.append((self.t, self.t + FOREVER_S))
        else:
            start, _ = self.controller_windows.pop()
            if start < self.t:
                self.controller_windows.append((start, self.t))
        self.note_event(f"controller {'down' if down else 'back'}")
        self.sync_windows()

    def sync_windows(self) -> None:
        """The scenario the engine reads outages from, with the windows opened and closed so far."""
        sim = self.simulation
        file = sim.scenario.file
        clusters = [
            c.model_copy(
                update={"outages": [Window(at=a, for_=b - a) for a, b in self.cluster_windows[c.name]]}
            )
            for c in file.clusters
        ]
        controller = [Window(at=a, for_=b - a) for a, b in self.controller_windows]
        file = file.model_copy(update={"clusters": clusters, "controller_outages": controller})
        sim.scenario = sim.scenario.model_copy(update={"file": file})

    def set_demand(self, pods: int, ramp_steps: int) -> None:
        sim = self.simulation
        now = sim.load.demand(self.t)
        rps = pods * RPS_PER_POD
        points = [(self.t, rps)] if ramp_steps == 0 else [(self.t, now), (self.t + ramp_steps * STEP_S, rps)]
        sim.load = EqualShare(Trace.from_points(points), POD_RPS)
        self.note_event(f"demand {now:.0f} -> {rps:.0f} rps over {ramp_steps * STEP_S:.0f}s")

    def set_spec(self, spec: Spec) -> None:
        """Store the new spec as `kubectl apply` would: admitted, a new generation."""
        assert self.spec is not None
        sim = self.simulation
        plane = sim.control_plane
        if (
            spec.policy,
            spec.scaling_to_zero,
            spec.delay_s,
            spec.weights,
            spec.priorities,
            spec.excluded,
        ) == (
            self.spec.policy,
            self.spec.scaling_to_zero,
            self.spec.delay_s,
            self.spec.weights,
            self.spec.priorities,
            self.spec.excluded,
        ):
            plane.patch_federated_hpa_bounds(*sim.fhpa_key, spec.fmin, spec.fmax)
        else:
            admitted = parse_object(spec.manifest(self.names))
            assert isinstance(admitted, FederatedHPA)
            plane.replace_federated_hpa_spec(*sim.fhpa_key, admitted.spec)
        if spec.policy != self.spec.policy:
            self.policies.append((len(self.steps), spec.policy))
        if self.epochs[-1] != len(self.steps):
            self.epochs.append(len(self.steps))
        self.spec = spec
        self.note_event(f"spec {spec.describe()}")

    # --- measuring ----------------------------------------------------------------------------------------

    def breaches(self) -> list[Violation]:
        """Every violation in the steps so far: the four promises, the max-sum check, the engine's checks."""
        sim = self.simulation
        steps = self.steps
        terms = sim.promise_terms()
        found = [
            v
            for v in measure(steps, replace(terms, policy="StaticWeighted")).violations
            if v.kind in (FLOOR, UNMANAGED)
        ]
        segments = [*self.policies, (len(steps), "")]
        for (start, policy), (end, _) in itertools.pairwise(segments):
            if policy == "Duplicated" or start == end:
                continue  # Duplicated keeps the floor and every replica under an HPA only (measured above)
            found += self.segment_breaches(start, end, policy, (CEILING, MAX_SUM_BELOW))
        bounds = [*self.epochs, len(steps)]
        for start, end in itertools.pairwise(bounds):
            policy = self.policy_at(start)
            if policy == "Duplicated" or start == end:
                continue
            found += self.segment_breaches(start, end, policy, (CHURN,))
        found += [v for v in sim.violations if ENGINE in PROFILE.checks]
        return sorted(
            (v for v in found if v.kind in PROFILE.checks or v.kind not in MEASURED), key=lambda v: v.t
        )

    def segment_breaches(self, start: int, end: int, policy: str, kinds: tuple[str, ...]) -> list[Violation]:
        """The violations of ``kinds`` in steps[start:end] measured under ``policy``. A segment that a later
        spec change closed holds the same steps at every later check, so its answer is kept: re-measuring
        every closed segment after each rule made a run's checks grow with the square of its length."""
        key = (start, end, policy, kinds)
        if key in self.closed_segments:
            return self.closed_segments[key]
        report = measure(self.steps[start:end], replace(self.simulation.promise_terms(), policy=policy))
        found = [v for v in report.violations if v.kind in kinds]
        if end < len(self.steps):
            self.closed_segments[key] = found
        return found

    def policy_at(self, step: int) -> str:
        return [p for first, p in self.policies if first <= step][-1]

    def explain(self, found: list[Violation]) -> str:
        first = found[0]
        lines = [f"{len(found)} violation(s); the first: {first.kind} at t={first.t:.0f}s: {first.detail}"]
        lines += [f"  also {v.kind} at t={v.t:.0f}s: {v.detail}" for v in found[1:4]]
        assert self.fleet is not None
        lines.append(f"fleet: {self.fleet.describe()}")
        lines.append("events: " + "; ".join(self.log))
        lines.append(f"the fleet from t={first.t - 60:.0f}s (replicas ready+starting/pending, hpa min..max):")
        for s in self.steps:
            if first.t - 60 <= s.t <= first.t + 240:
                lines.append("  " + describe_step(s))
        events = [
            e
            for e in self.simulation.control_plane.events
            if first.t - 60 <= seconds(self.simulation, e.at) <= first.t + 240
        ]
        lines += [
            f"  event t={seconds(self.simulation, e.at):.0f}s {e.reason}: {e.message}" for e in events[:20]
        ]
        return "\n".join(lines)

    def check(self) -> None:
        found = self.breaches()
        if found:
            kind = found[0].kind
            raise BREACHES.get(kind, EngineCheckBreach)(self.explain(found))

    # --- rules --------------------------------------------------------------------------------------------

    @initialize(fleet=fleets())
    def start(self, fleet: Fleet) -> None:
        self.fleet, self.spec = fleet, fleet.spec
        self.names = [m.name for m in fleet.members]
        self.cluster_windows = {n: [] for n in self.names}
        self.policies = [(0, fleet.spec.policy)]
        self.sim = Simulation(parse_scenario(fleet.scenario(), "fleet state machine"))
        COVERAGE.fleets += 1
        COVERAGE.policies[fleet.spec.policy] += 1
        COVERAGE.sizes[len(fleet.members)] += 1
        self.note_event(f"fleet {fleet.describe()}")
        self.clean = False

    def ran(self, name: str) -> None:
        COVERAGE.rules[name] += 1
        self.clean = False

    @rule(steps=st.integers(1, 20))
    def wait(self, steps: int) -> None:
        self.ran("wait")
        self.advance(steps)

    @rule(pods=st.integers(0, 60), ramp_steps=st.sampled_from([0, 4, 20]), then=st.integers(1, 20))
    def load_step(self, pods: int, ramp_steps: int, then: int) -> None:
        self.ran("load_step")
        self.set_demand(pods, ramp_steps)
        self.advance(then)

    @precondition(lambda self: PROFILE.cluster_outages and any(not self.down(n) for n in self.names))
    @rule(which=st.integers(0, 4), then=st.integers(1, 20))
    def cluster_outage(self, which: int, then: int) -> None:
        self.ran("cluster_outage")
        up = [n for n in self.names if not self.down(n)]
        self.set_cluster(up[which % len(up)], down=True)
        self.advance(then)

    @precondition(lambda self: any(self.down(n) for n in self.names))
    @rule(which=st.integers(0, 4), then=st.integers(1, 20))
    def cluster_back(self, which: int, then: int) -> None:
        self.ran("cluster_back")
        down = [n for n in self.names if self.down(n)]
        self.set_cluster(down[which % len(down)], down=False)
        self.advance(then)

    @precondition(lambda self: PROFILE.cluster_outages and any(not self.down(n) for n in self.names))
    @rule(
        which=st.integers(0, 4),
        times=st.integers(1, 4),
        down_steps=st.integers(1, 12),
        up_steps=st.integers(1, 12),
    )
    def flap(self, which: int, times: int, down_steps: int, up_steps: int) -> None:
        """A cluster that goes down and comes back ``times`` times (down 4 steps = the default grace)."""
        self.ran("flap")
        up = [n for n in self.names if not self.down(n)]
        self.blink(up[which % len(up)], times, down_steps, up_steps)

    def blink(self, name: str, times: int, down_steps: int, up_steps: int) -> None:
        """``name`` down for ``down_steps`` and back for ``up_steps``, ``times`` times."""
        for _ in range(times):
            self.set_cluster(name, down=True)
            self.advance(down_steps)
            self.set_cluster(name, down=False)
            self.advance(up_steps)

    @precondition(lambda self: PROFILE.capacity_changes)
    @rule(which=st.integers(0, 4), capacity=st.integers(0, 40), then=st.integers(1, 20))
    def capacity_change(self, which: int, capacity: int, then: int) -> None:
        """Nodes lost or added by hand (a drain, a spot interruption); an elastic cluster's group stays
        within its max."""
        self.ran("capacity_change")
        assert self.fleet is not None
        member = self.fleet.members[which % len(self.fleet.members)]
        cluster = self.simulation.clusters[member.name]
        if cluster.nodes is not None:
            capacity = min(capacity // POD_PER_NODE, cluster.nodes.spec.max_nodes) * POD_PER_NODE
        cluster.set_room(capacity)
        if self.epochs[-1] != len(self.steps):  # new room is a new steady state: calm is measured anew
            self.epochs.append(len(self.steps))
        self.note_event(f"cluster {member.name} room -> {capacity}")
        self.advance(then)

    # --- churn after faults: a top tier that blips, clusters that tie (issue 25 items 1-2) ---------------

    def top_tier(self) -> str | None:
        """The reachable cluster the policy prefers most (Prioritized: the highest priority; the others:
        the first of NAMES), ties broken by name as a user would read the spec."""
        assert self.spec is not None
        up = [n for n in self.names if not self.down(n)]
        if not up:
            return None
        if self.spec.policy != "Prioritized":
            return up[0]
        level = dict(zip(NAMES, self.spec.priorities, strict=False))
        return max(up, key=lambda n: (level.get(n, 0), -self.names.index(n)))

    @precondition(lambda self: PROFILE.cluster_outages and any(not self.down(n) for n in self.names))
    @rule(times=st.integers(1, 3), down_steps=st.integers(1, 12), up_steps=st.integers(8, 40))
    def top_tier_blips(self, times: int, down_steps: int, up_steps: int) -> None:
        """The most preferred cluster drops off and comes back at a steady load: when it answers, the
        per-pod load falls everywhere while the fleet's demand does not."""
        self.ran("top_tier_blips")
        name = self.top_tier()
        assert name is not None
        self.blink(name, times, down_steps, up_steps)

    @precondition(lambda self: PROFILE.spec_changes)
    @rule(
        policy=st.sampled_from(("Prioritized", "Aggregated", "StaticWeighted", "DynamicWeighted")),
        level=st.integers(0, 3),
        capacity=st.one_of(st.none(), st.integers(1, 40)),
        then=st.integers(1, 20),
    )
    def make_ties(self, policy: str, level: int, capacity: int | None, then: int) -> None:
        """Every cluster gets one priority and one weight (and, drawn, one room): from here on only the
        current holders may break the ties."""
        self.ran("make_ties")
        assert self.spec is not None
        if capacity is not None:
            for name in self.names:
                cluster = self.simulation.clusters[name]
                room = capacity
                if cluster.nodes is not None:
                    room = min(room // POD_PER_NODE, cluster.nodes.spec.max_nodes) * POD_PER_NODE
                cluster.set_room(room)
            self.note_event(f"every cluster's room -> {capacity}")
        tied = replace(self.spec, policy=policy, weights=(1,) * len(NAMES), priorities=(level,) * len(NAMES))
        self.set_spec(tied)
        self.advance(then)

    @precondition(lambda self: PROFILE.controller_outages and not self.controller_down)
    @rule(then=st.integers(1, 40))
    def controller_outage(self, then: int) -> None:
        self.ran("controller_outage")
        self.set_controller(down=True)
        self.advance(then)

    @precondition(lambda self: self.controller_down)
    @rule(then=st.integers(1, 20))
    def controller_back(self, then: int) -> None:
        self.ran("controller_back")
        self.set_controller(down=False)
        self.advance(then)

    @precondition(lambda self: PROFILE.spec_changes)
    @rule(fmin=st.integers(1, 60), extra=st.integers(0, 60), then=st.integers(1, 20))
    def change_bounds(self, fmin: int, extra: int, then: int) -> None:
        self.ran("change_bounds")
        assert self.spec is not None
        if not PROFILE.fmin_above_room:
            assert self.fleet is not None
            fmin = min(fmin, max(1, sum(m.capacity for m in self.fleet.members)))
        self.set_spec(replace(self.spec, fmin=fmin, fmax=fmin + extra))
        self.advance(then)

    @precondition(lambda self: PROFILE.spec_changes)
    @rule(
        policy=st.sampled_from(POLICIES),
        scaling_to_zero=st.booleans(),
        delay_s=delays(),
        weights=weight_lists(),
        priorities=priority_lists,
        then=st.integers(1, 20),
    )
    def change_policy(
        self,
        policy: str,
        scaling_to_zero: bool,
        delay_s: int,
        weights: tuple[int, ...],
        priorities: tuple[int, ...],
        then: int,
    ) -> None:
        self.ran("change_policy")
        assert self.spec is not None
        self.set_spec(
            replace(
                self.spec,
                policy=policy,
                scaling_to_zero=scaling_to_zero,
                delay_s=delay_s,
                weights=weights,
                priorities=priorities,
            )
        )
        self.advance(then)

    # --- calm: clusters leaving and rejoining the selection, and F.max as small as the fleet ----------

    @precondition(lambda self: PROFILE.spec_changes and len(self.names) > 1)
    @rule(which=st.integers(0, 4), then=st.integers(1, 20))
    def edit_affinity(self, which: int, then: int) -> None:
        """The user takes a cluster out of the clusterAffinity, or puts it back (at least one stays)."""
        self.ran("edit_affinity")
        assert self.spec is not None
        name = self.names[which % len(self.names)]
        excluded = set(self.spec.excluded) ^ {name}
        if len(excluded) >= len(self.names):
            excluded.discard(name)
        self.set_spec(replace(self.spec, excluded=tuple(n for n in self.names if n in excluded)))
        self.advance(then)

    @precondition(lambda self: PROFILE.spec_changes)
    @rule(pods=st.integers(1, 5), then=st.integers(16, 40))
    def tiny_max_scaling_to_zero(self, pods: int, then: int) -> None:
        """F.min 1 and F.max one replica per cluster, scalingToZero, at a flat load of a few pods: a
        cluster the load needs must not go to 0 and wake again and again."""
        self.ran("tiny_max_scaling_to_zero")
        assert self.spec is not None
        policy = self.spec.policy if self.spec.policy != "Duplicated" else "StaticWeighted"
        tiny = replace(self.spec, policy=policy, fmin=1, fmax=len(self.names), scaling_to_zero=True)
        self.set_spec(tiny)
        self.set_demand(min(pods, len(self.names)), 0)
        self.advance(then)

    @invariant()
    def promises_hold(self) -> None:
        if self.sim is None:
            return
        self.check()
        self.clean = True

    def teardown(self) -> None:
        """Run the final state a little longer: an episode open at the last rule ends or is a breach."""
        if self.sim is None or not self.clean:
            return  # a rule or a check failed: that is what hypothesis reports
        self.note_event("settle")
        self.advance(SETTLE_STEPS)
        self.check()


def describe_step(s: StepSample) -> str:
    parts = []
    for name, c in sorted(s.clusters.items()):
        hpa = f"{c.hpa_min}..{c.hpa_max}" if c.hpa_max is not None else "no-hpa"
        down = " DOWN" if c.down else ""
        drained = " drained" if c.drained else ""
        parts.append(f"{name} {c.replicas}r {c.ready + c.starting}s/{c.pending}p {hpa}{down}{drained}")
    ctl = "" if s.controller_up else " CONTROLLER-DOWN"
    actions = f" [{', '.join(s.actions)}]" if s.actions else ""
    return (
        f"t={s.t:.0f}s demand {s.demand_rps:.0f} F {s.fhpa_min}..{s.fhpa_max}{ctl}: "
        + " | ".join(parts)
        + actions
    )


def seconds(sim: Simulation, at: Any) -> float:
    return float((at - sim.clock.start).total_seconds())


# --- the test -------------------------------------------------------------------------------------------

TEST_EXAMPLES = 40
TEST_RULES_PER_EXAMPLE = 30  # stateful_step_count; each rule runs 1-20 simulated steps (a flap up to 96)
TEST_SEED = 1
"""The test's fixed sample of fleets and events. Without it hypothesis derives the seed from the machine
class's source, so any edit of the class would draw other fleets; with it an edit keeps the sample.
Seeds 0, 2, 3 and 5 find breaches still open (churn under flapping clusters; the floor after a
cluster's room was changed by hand, see room-added-by-hand-is-not-used): ``bench/fleet_state_machine.py``
runs many seeds and shrinks what it finds."""
MIN_SIMULATED_STEPS = 5000  # a clean run covers about 21,000 steps (40 fleets)


def machine_settings(examples: int, rules: int, derandomize: bool = True) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=rules,
        deadline=None,  # CI machines are loaded: no wall-clock deadline
        derandomize=derandomize,  # the same fleets and events on every run of `make test`
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        print_blob=False,
    )


# the suite's 300 s guard is against hangs; this run takes minutes on a quiet machine and about 11 at a
# load of 20, which is the machine's business, not a fault of the fleets
@pytest.mark.timeout(1800)
def test_random_fleets_and_events_keep_the_four_promises() -> None:
    """Thousands of simulated steps, the four promises measured after every rule. No shrinking here (a shrink
    of a state machine takes minutes): a breach is reported as found; the bench shrinks it."""
    before = COVERAGE.copy()
    config = machine_settings(TEST_EXAMPLES, TEST_RULES_PER_EXAMPLE)
    config = settings(config, phases=[Phase.explicit, Phase.generate])
    run_state_machine_as_test(
        seed(TEST_SEED)(type("SeededFleetMachine", (FleetMachine,), {})), settings=config
    )
    steps, fleets_run = COVERAGE.steps - before.steps, COVERAGE.fleets - before.fleets
    assert steps >= MIN_SIMULATED_STEPS, f"only {steps} simulated steps over {fleets_run} fleets"
    assert fleets_run >= TEST_EXAMPLES // 2


@pytest.mark.parametrize("policy", POLICIES)
def test_the_machine_drives_the_simulator(policy: str) -> None:
    """The driving itself: each rule reaches the recorded steps as the engine's own inputs would."""
    machine = FleetMachine()
    members = (Member("m1", 10, 3, 0), Member("m2", 10, 0, 0))
    spec = Spec(policy, 2, 12, weights=(1, 1, 0, 0, 0), priorities=(2, 1, 0, 0, 0))
    machine.start(Fleet(members, spec, 4))
    machine.wait(4)
    machine.cluster_outage(0, 2)
    assert [s.clusters["m1"].down for s in machine.steps[-3:]] == [False, True, True]
    machine.cluster_back(0, 2)
    assert not machine.steps[-1].clusters["m1"].down
    machine.flap(1, times=2, down_steps=1, up_steps=1)
    assert [s.clusters["m2"].down for s in machine.steps[-4:]] == [True, False, True, False]
    machine.controller_outage(3)
    assert [s.controller_up for s in machine.steps[-4:]] == [True, False, False, False]
    machine.controller_back(2)
    assert machine.steps[-1].controller_up
    machine.change_bounds(3, 7, 4)
    assert (machine.steps[-1].fhpa_min, machine.steps[-1].fhpa_max) == (3, 10)
    other = "Duplicated" if policy != "Duplicated" else "Aggregated"
    machine.change_policy(other, False, 0, (1, 1, 1, 1, 1), (0, 0, 0, 0, 0), 2)
    assert machine.policy_at(len(machine.steps) - 1) == other
    stored = machine.simulation.control_plane.get_federated_hpa(*machine.simulation.fhpa_key)
    assert stored is not None
    assert stored.spec.assignment_type == other
    machine.load_step(8, 0, 2)
    assert machine.steps[-1].demand_rps == 8 * RPS_PER_POD
    machine.capacity_change(0, 4, 1)
    assert machine.steps[-1].clusters["m1"].capacity == 4
    machine.edit_affinity(1, 2)
    assert not machine.steps[-1].clusters["m2"].selected and machine.steps[-1].clusters["m1"].selected
    machine.edit_affinity(1, 1)
    assert machine.steps[-1].clusters["m2"].selected
    machine.tiny_max_scaling_to_zero(1, 20)
    assert (machine.steps[-1].fhpa_min, machine.steps[-1].fhpa_max) == (1, 2)
    assert machine.steps[-1].demand_rps == RPS_PER_POD
    assert machine.t == len(machine.steps) * STEP_S
    assert isinstance(machine.breaches(), list)  # measured; the promises themselves: the test above


def test_the_machine_blips_the_top_tier_and_makes_ties() -> None:
    machine = FleetMachine()
    members = (Member("m1", 10, 3, 0), Member("m2", 10, 3, 0))
    machine.start(Fleet(members, Spec("Prioritized", 2, 12, priorities=(1, 3, 0, 0, 0)), 4))
    machine.top_tier_blips(times=2, down_steps=1, up_steps=8)
    assert [s.clusters["m2"].down for s in machine.steps] == ([True] + [False] * 8) * 2
    assert not any(s.clusters["m1"].down for s in machine.steps)
    machine.make_ties("Aggregated", 2, 7, 1)
    assert machine.spec is not None and set(machine.spec.priorities) == {2}
    assert {c.capacity for c in machine.steps[-1].clusters.values()} == {7}
    stored = machine.simulation.control_plane.get_federated_hpa(*machine.simulation.fhpa_key)
    assert stored is not None and stored.spec.assignment_type == "Aggregated"


def test_the_machine_builds_elastic_clusters_and_quotas() -> None:
    machine = FleetMachine()
    members = (Member("m1", 5, 3, 0, grow_nodes=2, provision_s=30), Member("m2", 10, 12, 0, quota=8))
    machine.start(Fleet(members, Spec("Duplicated", 2, 12), 4))
    machine.wait(1)
    m1, m2 = machine.steps[-1].clusters["m1"], machine.steps[-1].clusters["m2"]
    assert (m1.capacity, m1.nodes, m1.elastic_room) == (4, 2, 4)  # 5 pods round down to 2 nodes of 2
    assert (m2.quota_pods, m2.ready + m2.starting + m2.pending) == (8, 8)
    machine.capacity_change(0, 7, 1)  # an elastic cluster's room is whole nodes
    assert machine.steps[-1].clusters["m1"].nodes == 3


# --- the breaches found so far, shrunk (and trimmed by hand) to a minimal fleet and event sequence ---------

Rules = tuple[tuple[str, dict[str, int]], ...]


def _m(name: str, capacity: int, replicas: int = 0) -> Member:
    return Member(name, capacity, replicas, 30)


EQUAL = (1, 1, 1, 1, 1)
KNOWN_BREACHES: dict[str, tuple[Fleet, Rules, type[PromiseBreach], str]] = {
    "min-above-capacity-fmin-above-room": (
        Fleet(
            (_m("m1", 1), _m("m2", 6, 1), _m("m3", 1), _m("m4", 5), _m("m5", 5)),
            Spec("StaticWeighted", 22, 34, weights=EQUAL),
            8,
        ),
        (("wait", {"steps": 28}),),
        FloorBreach,
        "F.min 22 above the fleet's capacity 18: the mins are split by weight (m2 5 of its 6, m5 10 "
        "of its 5), so when m2's HPA settles at its min 5 one slot stays free while 5 of m5's min pend: "
        "17 < 18 for good",
    ),
    "min-above-capacity-after-spec-change": (
        Fleet((_m("m1", 1), _m("m2", 5)), Spec("StaticWeighted", 1, 7, weights=EQUAL), 0),
        (
            ("wait", {"steps": 1}),
            ("load_step", {"pods": 7, "ramp_steps": 0, "then": 4}),
            ("change_bounds", {"fmin": 3, "extra": 5, "then": 1}),
            ("load_step", {"pods": 0, "ramp_steps": 0, "then": 20}),
        ),
        FloorBreach,
        "F.min 1 -> 3 while m1 (capacity 1) is Saturated: the reassignment gives m1 min 2 max 2 (one pod "
        "pends for good) and no optimization moves it; once m2's HPA scales down to its min 1: 2 < 3",
    ),
    "floor-waits-the-delay": (
        Fleet((_m("m1", 1), _m("m2", 5)), Spec("StaticWeighted", 3, 8, delay_s=60, weights=EQUAL), 0),
        (("wait", {"steps": 12}),),
        FloorBreach,
        "divide(F.min 3, equal weights) gives m1 (capacity 1) min 2 (DESIGN §3); the pod that pends is "
        "moved only after autoscaleMultiClusterDelay (60 s), so the floor is broken for 90 s > grace + one "
        "pass. DESIGN's call: move the floor's pending pods at once, or promises.py adds the delay",
    ),
    "floor-waits-the-delay-and-overfills-again": (
        Fleet(
            (_m("m1", 1), _m("m2", 13), _m("m3", 7)),
            Spec("StaticWeighted", 21, 23, delay_s=30, weights=EQUAL),
            0,
        ),
        (("wait", {"steps": 10}),),
        FloorBreach,
        "the initial split gives m1 (capacity 1) min 7; after the 30 s delay the trigger moves the "
        "freed min by weight, m3 gets min 8 with capacity 7, and that waits another delay: below the "
        "floor for 90 s",
    ),
    "flapping-cluster-rejoin-drains-the-stand-in": (
        Fleet((_m("m1", 1), _m("m2", 1)), Spec("StaticWeighted", 1, 1, weights=EQUAL), 0),
        (("wait", {"steps": 1}), ("flap", {"which": 0, "times": 2, "down_steps": 6, "up_steps": 1})),
        FloorBreach,
        "m1 fails over (m2 starts 1 replica), rejoins and takes F.max 1 back with keep-what-runs (m2 "
        "drained), goes down again: its grace has grown, so the reachable fleet runs 0 < 1 longer than "
        "grace + one pass",
    ),
    "flapping-cluster-rejoins-many-times": (
        Fleet((_m("m1", 1), _m("m2", 1)), Spec("StaticWeighted", 1, 1, weights=EQUAL), 0),
        (("wait", {"steps": 1}), ("flap", {"which": 0, "times": 8, "down_steps": 6, "up_steps": 2})),
        FloorBreach,
        "the flapping-cluster-rejoin-drains-the-stand-in fleet with 8 flaps: the stand-in must neither "
        "be drained on a rejoin (floor) nor bounced on every flap (calm)",
    ),
    "two-flappers-the-later-failover-gives-way": (
        Fleet((_m("m1", 1), _m("m2", 1)), Spec("StaticWeighted", 1, 1, weights=(4, 1, 0, 0, 0)), 0),
        (
            ("wait", {"steps": 1}),
            ("cluster_outage", {"which": 1, "then": 6}),
            ("cluster_back", {"which": 1, "then": 1}),
            ("cluster_outage", {"which": 0, "then": 8}),
            ("cluster_back", {"which": 0, "then": 1}),
            ("cluster_outage", {"which": 0, "then": 12}),
        ),
        FloorBreach,
        "bench run of the state machine: m2 (no share) failed over once, then m1 failed over and m2 took "
        "over; m1 came back and both had failed over within the hour, so the stand-in was drained and "
        "m1's next outage (its grown grace) left the fleet at 0. The later failover gives way first",
    ),
    "trigger-bounces-max-no-cluster-can-hold": (
        Fleet(
            (_m("m1", 1), _m("m2", 1), _m("m3", 1), _m("m4", 1), _m("m5", 2)),
            Spec("StaticWeighted", 7, 7, weights=(1, 1, 0, 1, 0)),
            13,
        ),
        (
            ("flap", {"down_steps": 1, "times": 1, "up_steps": 1, "which": 0}),
            ("flap", {"down_steps": 5, "times": 1, "up_steps": 1, "which": 0}),
            ("flap", {"down_steps": 5, "times": 1, "up_steps": 1, "which": 1}),
        ),
        ChurnBreach,
        "bench run of the state machine: F.max 7 above what the reachable clusters hold; the trigger capped "
        "a full cluster and handed its max to another full one, which pended and was capped in turn: "
        "m2's max reversed 5 times in 3 minutes (2->1->2->1->2->1->2)",
    ),
    "failover-reassignment-undoes-the-optimization": (
        Fleet(
            (_m("m1", 3), _m("m2", 2), _m("m3", 32), _m("m4", 2), _m("m5", 7)),
            Spec("StaticWeighted", 1, 41, weights=(1, 1, 1, 0, 1)),
            0,
        ),
        (
            ("controller_outage", {"then": 1}),
            ("controller_back", {"then": 1}),
            ("cluster_outage", {"then": 1, "which": 0}),
            ("controller_back", {"then": 1}),
            ("controller_outage", {"then": 1}),
            ("controller_back", {"then": 1}),
            ("wait", {"steps": 1}),
            ("controller_outage", {"then": 1}),
            ("controller_back", {"then": 1}),
            ("controller_outage", {"then": 1}),
            ("controller_back", {"then": 1}),
            ("flap", {"down_steps": 6, "times": 3, "up_steps": 1, "which": 1}),
        ),
        ChurnBreach,
        "DESIGN §3 splits F.max by weight (m2 10 of 41 with capacity 2); the period optimization moves what "
        "m2 cannot hold to m3 (10->2), then m1's failover and each of m2's rejoins re-run §3 (2->14, "
        "2->21) and the optimization moves it again: 5 reversals within the hour. Kept by the capacity cap "
        "(DESIGN §3): §3 and the optimizations place max by the same capped split",
    ),
    "scaling-to-zero-start-counts-pending-pods-as-held": (
        Fleet(
            (_m("m1", 1), _m("m2", 1)),
            Spec("StaticWeighted", 3, 13, scaling_to_zero=True, delay_s=120, weights=EQUAL),
            0,
        ),
        (("controller_outage", {"then": 1}), ("controller_back", {"then": 6})),
        FloorBreach,
        "bench run of the state machine: scalingToZero, F.min 3 over two clusters holding 1 each; m1 was "
        "started with 3 replicas (2 pending) and counted as holding 3, so m2 stayed at 0: 1 < 2 for good",
    ),
    "held-flapper-keeps-the-max-the-floor-needs": (
        Fleet((_m("m1", 13), _m("m2", 13)), Spec("StaticWeighted", 24, 34, weights=(1, 0, 0, 0, 0)), 0),
        (("flap", {"down_steps": 7, "times": 3, "up_steps": 5, "which": 0}),),
        FloorBreach,
        "bench run of the state machine: the period optimization gave the weighted m1 max 23 (capacity 13) "
        "and left m2 max 11 (capacity 13); m1 flapped, and past the flag's grace m2's min could not pass "
        "its max: 11 < 13 for m1's grown grace",
    ),
    "a-min-on-a-cluster-that-holds-nothing-counts-for-nothing": (
        Fleet(
            (_m("m1", 0), _m("m2", 0), _m("m3", 4), _m("m4", 6)),
            Spec("StaticWeighted", 1, 1, weights=(1, 0, 0, 0, 0)),
            0,
        ),
        (("wait", {"steps": 1}), ("change_bounds", {"extra": 1, "fmin": 10, "then": 6})),
        FloorBreach,
        "bench run of the state machine: F 10..11; m1 (weight 1, capacity 0) kept min 1 and the mins summed "
        "to F.min on paper (1 + 3 + 6), so m3's min stayed 3 of the 4 it can hold: 9 < 10 for good",
    ),
    "max-that-fits-nowhere-moves-each-period": (
        Fleet(
            (_m("m1", 0), _m("m2", 0), _m("m3", 4), _m("m4", 9)),
            Spec("StaticWeighted", 1, 1, weights=(1, 0, 0, 0, 0)),
            0,
        ),
        (
            ("flap", {"down_steps": 5, "times": 3, "up_steps": 11, "which": 3}),
            ("change_bounds", {"extra": 16, "fmin": 44, "then": 1}),
            ("cluster_outage", {"then": 8, "which": 3}),
            ("wait", {"steps": 9}),
            ("flap", {"down_steps": 9, "times": 1, "up_steps": 11, "which": 0}),
            ("flap", {"down_steps": 12, "times": 4, "up_steps": 5, "which": 1}),
        ),
        ChurnBreach,
        "F 44..60 over clusters that hold 13: the max no cluster can hold is handed out by the policy's "
        "split each period and at every failover's reassignment, so it lands on a different cluster each "
        "time (m2, capacity 0: 0->23->1->0->28->1). Kept by the excess left in place "
        "(DESIGN §4 Period optimization): max no cluster can hold stays on the cluster that has it",
    ),
    "weighted-cluster-with-no-room": (
        Fleet((_m("m1", 0), _m("m2", 1)), Spec("StaticWeighted", 1, 1, weights=(1, 0, 0, 0, 0)), 0),
        (("wait", {"steps": 10}),),
        FloorBreach,
        "StaticWeighted gives everything to m1 (weight 1, capacity 0); m2 (weight 0) has room but no share: "
        "0 < 1 for good, and the CapacityBelowMinReplicas Event says the reachable clusters can hold 0",
    ),
    "optimization-overfills-a-full-cluster-and-flaps": (
        Fleet((_m("m1", 5, 5), _m("m2", 20, 5)), Spec("DynamicWeighted", 2, 25), 12),
        (("wait", {"steps": 20}),)
        + (("flap", {"which": 1, "times": 1, "down_steps": 30, "up_steps": 1}),) * 4,
        ChurnBreach,
        "at a flat load the period optimization gives m1 (capacity 5, full) max 7 and the trigger takes it "
        "back 15 s later; with m2 down twice an hour for longer than its grown grace (failover, rejoin) m1's "
        "max reverses 5 times within the hour (5->7->5->25->5->25->5)",
    ),
    "rejoin-at-zero-waits-for-a-reassignment": (
        Fleet(
            (_m("m1", 0, 1), _m("m2", 12, 10), _m("m3", 0, 1), _m("m4", 38, 26), Member("m5", 1, 4, 120)),
            Spec("DynamicWeighted", 54, 54, scaling_to_zero=True, weights=(2, 4, 0, 0, 0)),
            28,
        ),
        (
            ("cluster_outage", {"then": 4, "which": 1}),
            ("change_bounds", {"extra": 41, "fmin": 38, "then": 15}),
            ("cluster_outage", {"then": 16, "which": 4}),
            ("cluster_back", {"then": 8, "which": 0}),
            ("cluster_outage", {"then": 4, "which": 3}),
            ("cluster_outage", {"then": 18, "which": 3}),
            ("cluster_outage", {"then": 11, "which": 3}),
            ("cluster_outage", {"then": 17, "which": 0}),
            ("cluster_back", {"then": 14, "which": 2}),
            ("cluster_outage", {"then": 9, "which": 4}),
            ("cluster_back", {"then": 10, "which": 4}),
        ),
        FloorBreach,
        "state machine run with the capacity events (fixed clusters suffice): every cluster but m5 (capacity "
        "1) is down; m5 rejoins holding 0 replicas under its HPA 1..1 (scalingToZero) and its replicas are "
        "written 0 -> 1 only at the reassignment 90 s later: the floor of 1 is unmet past grace + one pass",
    ),
    "quota-refusals-not-read-yet": (
        Fleet(
            (
                Member("m1", 0, 1, 120, grow_nodes=2, provision_s=180, quota=0),
                Member("m2", 0, 4, 15, grow_nodes=6, provision_s=180),
            ),
            Spec("Prioritized", 9, 9, scaling_to_zero=True, delay_s=30, priorities=(3, 1, 2, 0, 3)),
            9,
        ),
        (("flap", {"down_steps": 9, "times": 2, "up_steps": 11, "which": 2}),),
        FloorBreach,
        "m1's namespace quota is 0 pods: its replicas are refused (never created, never Pending). The "
        "planner does not read refused_replicas or the quota-capped firm room yet, so on m1's rejoin it gives"
        " m1 max 8 and drains m2 to 1, and no spill fires (nothing pends): 1 < 9. Kept by the planner side "
        "of capacity signals (quota refusals count as pending at once); until then PROFILE.quotas is off",
    ),
    "spill-moves-pods-nodes-are-coming-for": (
        Fleet(
            (
                Member("m1", 2, 7, 30),
                Member("m2", 28, 13, 15, grow_nodes=4, provision_s=60),
                Member("m3", 0, 1, 30, grow_nodes=5, provision_s=60),
            ),
            Spec("DynamicWeighted", 35, 35, scaling_to_zero=True, delay_s=60, weights=(2, 4, 0, 2, 0)),
            34,
        ),
        (),
        FloorBreach,
        "m3 (elastic, 0 nodes) gets min 7; its pods pend with nodes on their way (TriggeredScaleUp, 60 s), "
        "but after the 60 s delay the planner moves 5 of them to m2 (full, its own nodes then come) and back "
        "75 s later: 150 s below a floor the elastic room could hold. Kept by the planner side of capacity "
        "signals (coming pods do not count toward a spill before a node provision time); until then "
        "PROFILE.elastic is off",
    ),
    "failover-puts-the-excess-max-on-clusters-without-room": (
        Fleet(
            (
                Member("m1", 3, 2, 30, quota=1),
                Member("m2", 4, 0, 30, grow_nodes=4, provision_s=180),
                Member("m3", 0, 0, 30),
                Member("m4", 0, 0, 30),
                Member("m5", 4, 0, 30),
            ),
            Spec("StaticWeighted", 16, 16, scaling_to_zero=True, delay_s=120, weights=(2, 0, 3, 2, 1)),
            1,
        ),
        (
            ("flap", {"which": 1, "times": 1, "down_steps": 10, "up_steps": 4}),
            ("flap", {"which": 4, "times": 1, "down_steps": 12, "up_steps": 7}),
            ("flap", {"which": 1, "times": 2, "down_steps": 8, "up_steps": 12}),
        ),
        ChurnBreach,
        "state machine seed 1 with elastic clusters and quotas on: F 16..16 over a fleet that holds 13 at "
        "most (m1's quota leaves it 1, m2 grows to 12, m3 and m4 have no room); each time m5 or m2 fails "
        "over, the reassignment gives m3 and m4 a share of F.max and a min of 1 although they hold "
        "nothing, and takes it back when the cluster returns: m3's max reverses 5 times in 8 minutes "
        "(4->6->0->2->0->4->0). The fleet as found (seed 1) keeps the promise once m1's quota or m2's node "
        "group is taken away",
    ),
    "flaps-on-a-fleet-that-cannot-hold-f-min-move-a-roomless-max": (
        Fleet(
            (
                Member("m1", 3, 2, 120, grow_nodes=6, provision_s=60, quota=1),
                Member("m2", 4, 8, 0, grow_nodes=4, provision_s=180),
                Member("m3", 0, 1, 120, quota=8),
                Member("m4", 0, 4, 120, quota=0),
                Member("m5", 3, 1, 120, quota=9),
            ),
            Spec("StaticWeighted", 16, 16, scaling_to_zero=True, delay_s=120, weights=(2, 1, 3, 2, 1)),
            1,
        ),
        (
            ("flap", {"which": 1, "times": 1, "down_steps": 10, "up_steps": 4}),
            ("flap", {"which": 4, "times": 3, "down_steps": 6, "up_steps": 9}),
            ("flap", {"which": 4, "times": 1, "down_steps": 12, "up_steps": 7}),
            ("flap", {"which": 0, "times": 3, "down_steps": 1, "up_steps": 5}),
            ("flap", {"which": 1, "times": 1, "down_steps": 1, "up_steps": 6}),
            ("flap", {"which": 3, "times": 4, "down_steps": 2, "up_steps": 10}),
            ("flap", {"which": 1, "times": 2, "down_steps": 8, "up_steps": 12}),
            ("flap", {"which": 0, "times": 1, "down_steps": 1, "up_steps": 4}),
            ("flap", {"which": 1, "times": 3, "down_steps": 6, "up_steps": 7}),
            ("flap", {"which": 3, "times": 3, "down_steps": 12, "up_steps": 4}),
            ("flap", {"which": 3, "times": 4, "down_steps": 5, "up_steps": 9}),
            ("flap", {"which": 2, "times": 2, "down_steps": 8, "up_steps": 2}),
            ("flap", {"which": 1, "times": 1, "down_steps": 10, "up_steps": 1}),
            ("flap", {"which": 1, "times": 4, "down_steps": 8, "up_steps": 2}),
            ("flap", {"which": 3, "times": 2, "down_steps": 2, "up_steps": 11}),
            ("flap", {"which": 3, "times": 2, "down_steps": 2, "up_steps": 2}),
            ("flap", {"which": 4, "times": 1, "down_steps": 9, "up_steps": 12}),
            ("flap", {"which": 3, "times": 1, "down_steps": 8, "up_steps": 10}),
            ("flap", {"which": 1, "times": 1, "down_steps": 4, "up_steps": 9}),
            ("flap", {"which": 2, "times": 2, "down_steps": 10, "up_steps": 8}),
            ("flap", {"which": 0, "times": 1, "down_steps": 10, "up_steps": 8}),
        ),
        ChurnBreach,
        "state machine seed 1 with elastic clusters and quotas on, as found (not shrunk): F 16..16 over a "
        "fleet that holds 13 at most, 20 flaps over two hours; from t=5925 s m3 (no room: capacity 0, "
        "quota 8) has its max moved 12->0->12->0->3->0->1->0 as clusters fail over and rejoin, 6 "
        "reversals within an hour",
    ),
    "room-added-by-hand-is-not-used": (
        Fleet(
            (Member("m1", 0, 0, 15), Member("m2", 0, 1, 15)),
            Spec("StaticWeighted", 4, 4, scaling_to_zero=True, weights=(3, 0, 1, 1, 0)),
            2,
        ),
        (
            ("load_step", {"pods": 2, "ramp_steps": 4, "then": 14}),
            (
                "change_policy",
                {
                    "policy": "Duplicated",
                    "scaling_to_zero": True,
                    "delay_s": 30,
                    "weights": (4, 4, 0, 1, 0),
                    "priorities": (1, 0, 0, 1, 2),
                    "then": 18,
                },
            ),
            ("capacity_change", {"which": 0, "capacity": 35, "then": 16}),
        ),
        FloorBreach,
        "state machine seed 3 with capacity changes: two clusters of capacity 0 under Duplicated F 4..4; m1 "
        "gets 35 pods of room by hand while m2's 4 replicas pend, and m1's HPA stays at 1..1 with 1 "
        "running: 1 < 4 for as long as the run lasts (room that appears is never used)",
    ),
    "drain-from-bottom-hands-the-stand-in-to-a-flapper": (
        Fleet((_m("m1", 33, 12), _m("m2", 4, 9)), Spec("Prioritized", 2, 7, priorities=(1, 0, 1, 1, 3)), 0),
        (("wait", {"steps": 12}), ("flap", {"down_steps": 12, "times": 4, "up_steps": 5, "which": 0})),
        FloorBreach,
        "bench run of the state machine: m1 (priority 1) failed over and m2 took over; on m1's rejoin "
        "the stand-in kept its replicas (keep-what-runs), but the drain from the bottom, at no load, "
        "moved m2's max back to m1 in the same pass. m1's next outages (its grown grace) left m2 running "
        "1 < 2 for 180 s each",
    ),
    "flapper-held-within-its-grown-grace-ran-all-its-max": (
        Fleet(
            (Member("m1", 0, 1, 60), Member("m2", 0, 5, 0), Member("m3", 35, 18, 30), Member("m4", 4, 9, 0)),
            Spec(
                "Aggregated",
                46,
                46,
                scaling_to_zero=True,
                delay_s=30,
                weights=(1, 0, 0, 0, 0),
                priorities=(1, 2, 2, 2, 2),
            ),
            22,
        ),
        (
            ("capacity_change", {"capacity": 26, "then": 1, "which": 4}),
            ("capacity_change", {"capacity": 35, "then": 13, "which": 4}),
            ("wait", {"steps": 18}),
            ("flap", {"down_steps": 2, "times": 2, "up_steps": 12, "which": 4}),
            ("change_bounds", {"extra": 35, "fmin": 27, "then": 2}),
            ("wait", {"steps": 7}),
            ("change_bounds", {"extra": 8, "fmin": 7, "then": 18}),
            ("change_bounds", {"extra": 55, "fmin": 37, "then": 17}),
            ("capacity_change", {"capacity": 36, "then": 5, "which": 0}),
            ("change_bounds", {"extra": 59, "fmin": 18, "then": 4}),
            ("change_bounds", {"extra": 21, "fmin": 19, "then": 14}),
            ("controller_outage", {"then": 4}),
            ("flap", {"down_steps": 1, "times": 4, "up_steps": 4, "which": 4}),
            ("capacity_change", {"capacity": 31, "then": 12, "which": 0}),
            ("change_bounds", {"extra": 29, "fmin": 58, "then": 20}),
            ("controller_back", {"then": 19}),
            ("flap", {"down_steps": 5, "times": 2, "up_steps": 8, "which": 4}),
            ("controller_outage", {"then": 22}),
            ("wait", {"steps": 11}),
            ("flap", {"down_steps": 12, "times": 4, "up_steps": 12, "which": 1}),
            ("wait", {"steps": 17}),
            ("controller_back", {"then": 16}),
            ("controller_outage", {"then": 2}),
            ("cluster_outage", {"then": 17, "which": 0}),
            ("change_bounds", {"extra": 5, "fmin": 41, "then": 5}),
            ("cluster_outage", {"then": 9, "which": 1}),
            ("capacity_change", {"capacity": 38, "then": 11, "which": 0}),
            ("cluster_back", {"then": 1, "which": 3}),
            ("cluster_outage", {"then": 20, "which": 4}),
            ("cluster_back", {"then": 12, "which": 2}),
            ("change_bounds", {"extra": 11, "fmin": 60, "then": 19}),
            ("capacity_change", {"capacity": 33, "then": 7, "which": 4}),
            ("wait", {"steps": 12}),
            ("wait", {"steps": 13}),
            ("capacity_change", {"capacity": 34, "then": 11, "which": 0}),
            ("change_bounds", {"extra": 13, "fmin": 22, "then": 17}),
            ("flap", {"down_steps": 9, "times": 3, "up_steps": 4, "which": 0}),
            ("flap", {"down_steps": 4, "times": 1, "up_steps": 6, "which": 3}),
            ("cluster_outage", {"then": 11, "which": 3}),
            ("flap", {"down_steps": 11, "times": 4, "up_steps": 9, "which": 0}),
            ("capacity_change", {"capacity": 32, "then": 10, "which": 0}),
            ("flap", {"down_steps": 6, "times": 2, "up_steps": 9, "which": 3}),
            ("change_bounds", {"extra": 4, "fmin": 46, "then": 13}),
            ("cluster_back", {"then": 18, "which": 0}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "DynamicWeighted",
                    "priorities": (0, 0, 3, 3, 3),
                    "scaling_to_zero": False,
                    "then": 16,
                    "weights": (2, 0, 4, 0, 2),
                },
            ),
            ("cluster_back", {"then": 17, "which": 4}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "Prioritized",
                    "priorities": (1, 3, 2, 2, 2),
                    "scaling_to_zero": True,
                    "then": 7,
                    "weights": (4, 1, 1, 0, 1),
                },
            ),
            ("flap", {"down_steps": 9, "times": 3, "up_steps": 8, "which": 3}),
            ("flap", {"down_steps": 9, "times": 3, "up_steps": 7, "which": 3}),
            ("cluster_outage", {"then": 11, "which": 0}),
            ("controller_back", {"then": 6}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Prioritized",
                    "priorities": (2, 1, 0, 1, 2),
                    "scaling_to_zero": False,
                    "then": 5,
                    "weights": (3, 4, 2, 0, 0),
                },
            ),
            ("capacity_change", {"capacity": 13, "then": 20, "which": 0}),
            ("flap", {"down_steps": 11, "times": 4, "up_steps": 1, "which": 2}),
            ("controller_outage", {"then": 37}),
            ("capacity_change", {"capacity": 40, "then": 20, "which": 3}),
            ("controller_back", {"then": 1}),
            ("cluster_back", {"then": 19, "which": 4}),
            ("cluster_outage", {"then": 9, "which": 4}),
        ),
        FloorBreach,
        "bench run of the state machine (seed 0): m1 failed over within the hour, so its grace grew to "
        "420 s; down again it is held at 7..11 with all 11 running, and the reachable m3 31..31 and m4 "
        "8..8 (room 40) hold 39 < 46 from the flag's grace to m1's own. Lending max under what m1 ran "
        "keeps the floor but bounces that max on every flap (churn); calm wins for a flapper: the floor "
        "is owed one pass after its grown grace, when it is failed over (DESIGN §4 Promise 1: floor)",
    ),
    "flapper-held-within-its-grown-grace-seed-1": (
        Fleet(
            (Member("m1", 34, 16, 0), Member("m2", 24, 4, 120), Member("m3", 19, 22, 120)),
            Spec(
                "Aggregated",
                82,
                121,
                scaling_to_zero=True,
                delay_s=30,
                weights=(1, 0, 2, 0, 2),
                priorities=(1, 2, 0, 0, 1),
            ),
            83,
        ),
        (
            ("change_bounds", {"extra": 32, "fmin": 57, "then": 3}),
            ("change_bounds", {"extra": 16, "fmin": 29, "then": 18}),
            ("change_bounds", {"extra": 30, "fmin": 7, "then": 3}),
            ("flap", {"down_steps": 6, "times": 3, "up_steps": 10, "which": 2}),
            ("change_bounds", {"extra": 59, "fmin": 33, "then": 16}),
            ("flap", {"down_steps": 3, "times": 2, "up_steps": 8, "which": 4}),
            ("change_bounds", {"extra": 49, "fmin": 19, "then": 7}),
            ("flap", {"down_steps": 7, "times": 2, "up_steps": 1, "which": 3}),
            ("change_bounds", {"extra": 20, "fmin": 32, "then": 7}),
            ("change_bounds", {"extra": 8, "fmin": 57, "then": 5}),
            ("flap", {"down_steps": 11, "times": 4, "up_steps": 9, "which": 2}),
        ),
        FloorBreach,
        "bench run of the state machine (seed 1), the breach above on a shorter run: m3 flaps (its grace "
        "grown to 420 s) while held at 3..10 running 10; m1 31..31 and m2 24..24 hold 55 < 57 for each "
        "165 s spell",
    ),
    "prioritized-flaps-turn-a-max-five-times": (
        Fleet(
            (
                Member("m1", 5, 5, 30),
                Member("m2", 31, 12, 30),
                Member("m3", 1, 1, 60),
                Member("m4", 31, 0, 60),
                Member("m5", 17, 13, 0),
            ),
            Spec(
                "DynamicWeighted",
                86,
                86,
                scaling_to_zero=False,
                delay_s=60,
                weights=(3, 2, 0, 1, 2),
                priorities=(2, 2, 2, 1, 0),
            ),
            14,
        ),
        (
            ("controller_outage", {"then": 39}),
            ("capacity_change", {"capacity": 11, "then": 9, "which": 1}),
            ("capacity_change", {"capacity": 23, "then": 1, "which": 2}),
            ("flap", {"down_steps": 9, "times": 3, "up_steps": 10, "which": 1}),
            ("change_bounds", {"extra": 38, "fmin": 46, "then": 6}),
            (
                "change_policy",
                {
                    "delay_s": 0,
                    "policy": "DynamicWeighted",
                    "priorities": (1, 0, 3, 1, 3),
                    "scaling_to_zero": True,
                    "then": 12,
                    "weights": [3, 3, 2, 0, 1],
                },
            ),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Duplicated",
                    "priorities": (2, 1, 2, 1, 1),
                    "scaling_to_zero": False,
                    "then": 7,
                    "weights": [3, 2, 0, 0, 1],
                },
            ),
            ("capacity_change", {"capacity": 23, "then": 1, "which": 2}),
            ("change_bounds", {"extra": 12, "fmin": 52, "then": 12}),
            ("change_bounds", {"extra": 29, "fmin": 34, "then": 15}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "Duplicated",
                    "priorities": (3, 2, 2, 1, 1),
                    "scaling_to_zero": True,
                    "then": 3,
                    "weights": [4, 0, 0, 0, 2],
                },
            ),
            ("flap", {"down_steps": 6, "times": 1, "up_steps": 5, "which": 4}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "DynamicWeighted",
                    "priorities": (0, 2, 2, 2, 0),
                    "scaling_to_zero": False,
                    "then": 18,
                    "weights": [4, 0, 0, 2, 2],
                },
            ),
            ("controller_back", {"then": 4}),
            ("flap", {"down_steps": 8, "times": 1, "up_steps": 10, "which": 3}),
            ("change_bounds", {"extra": 26, "fmin": 14, "then": 4}),
            ("flap", {"down_steps": 1, "times": 1, "up_steps": 3, "which": 0}),
            ("change_bounds", {"extra": 2, "fmin": 2, "then": 4}),
            ("controller_outage", {"then": 29}),
            ("wait", {"steps": 1}),
            ("change_bounds", {"extra": 34, "fmin": 19, "then": 15}),
            ("controller_back", {"then": 8}),
            ("controller_outage", {"then": 40}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "Prioritized",
                    "priorities": (3, 0, 0, 3, 2),
                    "scaling_to_zero": False,
                    "then": 17,
                    "weights": [3, 0, 4, 3, 0],
                },
            ),
            ("wait", {"steps": 5}),
            ("flap", {"down_steps": 4, "times": 1, "up_steps": 5, "which": 3}),
            ("controller_back", {"then": 9}),
            ("wait", {"steps": 6}),
            ("flap", {"down_steps": 2, "times": 1, "up_steps": 5, "which": 0}),
            ("wait", {"steps": 5}),
            ("flap", {"down_steps": 11, "times": 3, "up_steps": 5, "which": 1}),
        ),
        ChurnBreach,
        "bench run of the state machine (seed 0 of the 1,000-fleet run, its fleet 128), not shrunk: "
        "Prioritized F 19..53 at a flat load; the period optimization moves 8 of m5's max to m4, then "
        "m1's and m2's flaps move it back and forth (10->17->9->17->13->16->12): 5 reversals within the "
        "hour",
    ),
    "failover-onto-elastic-room-a-quota-leaves-one-pod-seed-1": (
        Fleet(
            (
                Member("m1", 0, 2, 120, grow_nodes=3, provision_s=0, quota=5),
                Member("m2", 2, 4, 30),
                Member("m3", 1, 0, 120),
                Member("m4", 1, 0, 30),
            ),
            Spec(
                "StaticWeighted",
                4,
                4,
                scaling_to_zero=True,
                delay_s=0,
                weights=(1, 1, 2, 1, 1),
                priorities=(1, 0, 3, 1, 1),
            ),
            1,
        ),
        (
            ("wait", {"steps": 2}),
            ("flap", {"down_steps": 12, "times": 1, "up_steps": 9, "which": 4}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "Aggregated",
                    "priorities": (0, 2, 2, 2, 3),
                    "scaling_to_zero": False,
                    "then": 11,
                    "weights": (2, 0, 0, 1, 0),
                },
            ),
            ("wait", {"steps": 18}),
            ("controller_outage", {"then": 25}),
            ("load_step", {"pods": 38, "ramp_steps": 0, "then": 9}),
            ("wait", {"steps": 14}),
            ("load_step", {"pods": 46, "ramp_steps": 4, "then": 1}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "StaticWeighted",
                    "priorities": (2, 0, 0, 0, 1),
                    "scaling_to_zero": False,
                    "then": 3,
                    "weights": (2, 0, 0, 0, 0),
                },
            ),
            ("controller_back", {"then": 4}),
            ("controller_outage", {"then": 14}),
            ("flap", {"down_steps": 3, "times": 1, "up_steps": 6, "which": 2}),
            ("controller_back", {"then": 4}),
            ("wait", {"steps": 19}),
            ("load_step", {"pods": 24, "ramp_steps": 0, "then": 4}),
            ("change_bounds", {"extra": 35, "fmin": 27, "then": 3}),
            ("change_bounds", {"extra": 33, "fmin": 57, "then": 12}),
            ("controller_outage", {"then": 15}),
            ("change_bounds", {"extra": 11, "fmin": 51, "then": 9}),
            ("cluster_outage", {"then": 4, "which": 0}),
            ("load_step", {"pods": 14, "ramp_steps": 20, "then": 17}),
            ("change_bounds", {"extra": 8, "fmin": 59, "then": 17}),
            ("cluster_back", {"then": 4, "which": 1}),
            ("capacity_change", {"capacity": 11, "then": 20, "which": 0}),
            (
                "change_policy",
                {
                    "delay_s": 15,
                    "policy": "DynamicWeighted",
                    "priorities": (2, 0, 0, 0, 1),
                    "scaling_to_zero": False,
                    "then": 7,
                    "weights": (2, 0, 0, 1, 0),
                },
            ),
            ("capacity_change", {"capacity": 18, "then": 6, "which": 2}),
            ("capacity_change", {"capacity": 22, "then": 1, "which": 2}),
            ("change_bounds", {"extra": 60, "fmin": 49, "then": 20}),
            ("capacity_change", {"capacity": 16, "then": 18, "which": 0}),
            ("flap", {"down_steps": 10, "times": 1, "up_steps": 2, "which": 4}),
            ("controller_back", {"then": 4}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Aggregated",
                    "priorities": (2, 3, 1, 3, 1),
                    "scaling_to_zero": True,
                    "then": 18,
                    "weights": (1, 4, 0, 0, 0),
                },
            ),
            ("load_step", {"pods": 38, "ramp_steps": 4, "then": 10}),
            ("flap", {"down_steps": 3, "times": 4, "up_steps": 2, "which": 0}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Prioritized",
                    "priorities": (0, 3, 1, 3, 1),
                    "scaling_to_zero": False,
                    "then": 17,
                    "weights": (3, 0, 2, 4, 0),
                },
            ),
            ("cluster_outage", {"then": 4, "which": 2}),
            ("capacity_change", {"capacity": 22, "then": 7, "which": 4}),
            ("wait", {"steps": 15}),
            ("load_step", {"pods": 30, "ramp_steps": 4, "then": 3}),
            ("change_bounds", {"extra": 54, "fmin": 51, "then": 17}),
            ("change_bounds", {"extra": 11, "fmin": 48, "then": 8}),
            ("capacity_change", {"capacity": 27, "then": 17, "which": 1}),
            ("wait", {"steps": 16}),
            (
                "change_policy",
                {
                    "delay_s": 0,
                    "policy": "Duplicated",
                    "priorities": (1, 2, 3, 1, 3),
                    "scaling_to_zero": False,
                    "then": 6,
                    "weights": (1, 1, 0, 3, 1),
                },
            ),
            ("cluster_back", {"then": 17, "which": 1}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "DynamicWeighted",
                    "priorities": (0, 2, 1, 3, 0),
                    "scaling_to_zero": False,
                    "then": 11,
                    "weights": (2, 4, 0, 1, 0),
                },
            ),
            ("capacity_change", {"capacity": 29, "then": 20, "which": 0}),
            (
                "change_policy",
                {
                    "delay_s": 0,
                    "policy": "Prioritized",
                    "priorities": (2, 1, 1, 3, 1),
                    "scaling_to_zero": False,
                    "then": 13,
                    "weights": (1, 1, 2, 0, 4),
                },
            ),
            ("wait", {"steps": 9}),
            ("flap", {"down_steps": 8, "times": 1, "up_steps": 5, "which": 3}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 1 --examples 150 --no-shrink with elastic clusters and "
        "quotas on, as found (not shrunk): F 48..59 under Prioritized over m1 (quota 5, 4 pods on its "
        "nodes, elastic room 1), m2 and m3 (full); m4 (1 replica) fails over at t=8385s and the "
        "reassignment gives m1 min 5, whose fifth pod pends for a node; 15 s later the spill caps m1 at 4 "
        "and raises m2, which has no room: 47 scheduled below the floor 48 for 90 s (allowed 75 s) until "
        "m4 rejoins",
    ),
    "deselected-cluster-unreachable-while-drained-is-never-drained-seed-10": (
        Fleet(
            members=(
                Member(
                    name="m1", capacity=0, replicas=1, startup_s=60, grow_nodes=1, provision_s=30, quota=2
                ),
                Member(
                    name="m2", capacity=0, replicas=3, startup_s=15, grow_nodes=6, provision_s=180, quota=4
                ),
                Member(
                    name="m3", capacity=2, replicas=7, startup_s=60, grow_nodes=2, provision_s=180, quota=12
                ),
                Member(
                    name="m4", capacity=0, replicas=5, startup_s=60, grow_nodes=0, provision_s=60, quota=None
                ),
                Member(
                    name="m5", capacity=2, replicas=4, startup_s=30, grow_nodes=5, provision_s=60, quota=None
                ),
            ),
            spec=Spec(
                policy="Duplicated",
                fmin=3,
                fmax=13,
                scaling_to_zero=False,
                delay_s=60,
                weights=(4, 0, 0, 3, 4),
                priorities=(1, 0, 1, 1, 2),
                excluded=(),
            ),
            demand_pods=0,
        ),
        (
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Prioritized",
                    "priorities": (3, 2, 3, 3, 0),
                    "scaling_to_zero": False,
                    "then": 15,
                    "weights": (1, 1, 0, 0, 0),
                },
            ),
            ("tiny_max_scaling_to_zero", {"pods": 5, "then": 20}),
            ("controller_outage", {"then": 20}),
            ("flap", {"down_steps": 12, "times": 4, "up_steps": 7, "which": 4}),
            ("capacity_change", {"capacity": 13, "then": 2, "which": 2}),
            ("top_tier_blips", {"down_steps": 6, "times": 1, "up_steps": 11}),
            (
                "change_policy",
                {
                    "delay_s": 60,
                    "policy": "StaticWeighted",
                    "priorities": (3, 2, 2, 1, 3),
                    "scaling_to_zero": True,
                    "then": 15,
                    "weights": (3, 3, 0, 1, 0),
                },
            ),
            ("change_bounds", {"extra": 6, "fmin": 3, "then": 6}),
            ("top_tier_blips", {"down_steps": 9, "times": 3, "up_steps": 12}),
            ("top_tier_blips", {"down_steps": 1, "times": 1, "up_steps": 25}),
            ("top_tier_blips", {"down_steps": 11, "times": 2, "up_steps": 29}),
            ("edit_affinity", {"then": 16, "which": 0}),
            ("make_ties", {"capacity": 15, "level": 1, "policy": "Prioritized", "then": 10}),
            ("controller_back", {"then": 3}),
            ("load_step", {"pods": 41, "ramp_steps": 4, "then": 11}),
            ("flap", {"down_steps": 5, "times": 4, "up_steps": 2, "which": 0}),
            ("tiny_max_scaling_to_zero", {"pods": 5, "then": 20}),
            (
                "change_policy",
                {
                    "delay_s": 0,
                    "policy": "Duplicated",
                    "priorities": (3, 1, 1, 0, 0),
                    "scaling_to_zero": False,
                    "then": 12,
                    "weights": (1, 0, 1, 4, 2),
                },
            ),
            ("capacity_change", {"capacity": 40, "then": 9, "which": 0}),
            ("top_tier_blips", {"down_steps": 6, "times": 3, "up_steps": 32}),
            ("make_ties", {"capacity": 19, "level": 2, "policy": "StaticWeighted", "then": 11}),
            ("flap", {"down_steps": 11, "times": 2, "up_steps": 11, "which": 3}),
            ("capacity_change", {"capacity": 7, "then": 9, "which": 2}),
            ("tiny_max_scaling_to_zero", {"pods": 4, "then": 31}),
            ("wait", {"steps": 4}),
            ("wait", {"steps": 15}),
            ("cluster_outage", {"then": 13, "which": 3}),
            ("change_bounds", {"extra": 49, "fmin": 24, "then": 11}),
            ("tiny_max_scaling_to_zero", {"pods": 5, "then": 28}),
            ("edit_affinity", {"then": 5, "which": 2}),
            ("flap", {"down_steps": 3, "times": 3, "up_steps": 5, "which": 3}),
            ("cluster_outage", {"then": 19, "which": 4}),
            ("wait", {"steps": 4}),
            ("cluster_outage", {"then": 4, "which": 4}),
            ("controller_outage", {"then": 6}),
            ("flap", {"down_steps": 1, "times": 2, "up_steps": 7, "which": 2}),
            ("make_ties", {"capacity": 2, "level": 2, "policy": "Aggregated", "then": 20}),
            ("make_ties", {"capacity": 39, "level": 0, "policy": "Prioritized", "then": 17}),
            ("tiny_max_scaling_to_zero", {"pods": 5, "then": 37}),
            ("load_step", {"pods": 46, "ramp_steps": 20, "then": 10}),
            ("controller_back", {"then": 12}),
            ("cluster_back", {"then": 17, "which": 4}),
            ("cluster_outage", {"then": 8, "which": 3}),
            ("capacity_change", {"capacity": 20, "then": 7, "which": 0}),
            ("change_bounds", {"extra": 37, "fmin": 44, "then": 6}),
            ("cluster_back", {"then": 18, "which": 2}),
            ("tiny_max_scaling_to_zero", {"pods": 4, "then": 18}),
            ("change_bounds", {"extra": 16, "fmin": 47, "then": 11}),
            ("edit_affinity", {"then": 19, "which": 1}),
            ("change_bounds", {"extra": 13, "fmin": 11, "then": 13}),
            ("make_ties", {"capacity": None, "level": 2, "policy": "Prioritized", "then": 11}),
            ("capacity_change", {"capacity": 22, "then": 6, "which": 3}),
            ("load_step", {"pods": 8, "ramp_steps": 0, "then": 5}),
            ("top_tier_blips", {"down_steps": 11, "times": 1, "up_steps": 19}),
            ("cluster_back", {"then": 2, "which": 3}),
            ("top_tier_blips", {"down_steps": 2, "times": 2, "up_steps": 24}),
        ),
        UnmanagedBreach,
        "bench/fleet_state_machine.py --seed 10 --examples 100 --no-shrink, its fleet 57, as found (not "
        "shrunk): m2 leaves the clusterAffinity while unreachable; when it answers, its member HPA is "
        "deleted and its 3 replicas handed to m5; it is unreachable again for 30 s before the drain, its "
        "Deselected status row is dropped meanwhile, and once it answers again nothing drains it: 3 "
        "replicas with no member HPA for 360 s (allowed 60 s)",
    ),
    "prioritized-failover-and-rejoin-turn-a-max-five-times-seed-13": (
        Fleet(
            members=(
                Member(
                    name="m1",
                    capacity=25,
                    replicas=19,
                    startup_s=15,
                    grow_nodes=None,
                    provision_s=60,
                    quota=None,
                ),
                Member(
                    name="m2", capacity=4, replicas=3, startup_s=0, grow_nodes=4, provision_s=30, quota=None
                ),
                Member(
                    name="m3", capacity=1, replicas=4, startup_s=15, grow_nodes=2, provision_s=60, quota=5
                ),
                Member(
                    name="m4",
                    capacity=39,
                    replicas=26,
                    startup_s=120,
                    grow_nodes=1,
                    provision_s=0,
                    quota=None,
                ),
                Member(
                    name="m5", capacity=4, replicas=1, startup_s=30, grow_nodes=2, provision_s=180, quota=None
                ),
            ),
            spec=Spec(
                policy="Aggregated",
                fmin=83,
                fmax=83,
                scaling_to_zero=True,
                delay_s=60,
                weights=(1, 0, 4, 3, 2),
                priorities=(1, 1, 3, 3, 2),
                excluded=(),
            ),
            demand_pods=50,
        ),
        (
            ("change_bounds", {"extra": 38, "fmin": 32, "then": 8}),
            ("change_bounds", {"extra": 5, "fmin": 23, "then": 2}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "Prioritized",
                    "priorities": (3, 0, 3, 0, 1),
                    "scaling_to_zero": False,
                    "then": 14,
                    "weights": (1, 2, 0, 0, 1),
                },
            ),
            ("top_tier_blips", {"down_steps": 4, "times": 3, "up_steps": 10}),
            ("wait", {"steps": 1}),
            ("top_tier_blips", {"down_steps": 4, "times": 2, "up_steps": 14}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "Aggregated",
                    "priorities": (1, 0, 2, 2, 0),
                    "scaling_to_zero": True,
                    "then": 11,
                    "weights": (4, 3, 0, 0, 0),
                },
            ),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Duplicated",
                    "priorities": (0, 0, 0, 0, 0),
                    "scaling_to_zero": False,
                    "then": 6,
                    "weights": (3, 0, 0, 2, 2),
                },
            ),
            ("wait", {"steps": 6}),
            ("change_bounds", {"extra": 48, "fmin": 60, "then": 10}),
            (
                "change_policy",
                {
                    "delay_s": 0,
                    "policy": "Duplicated",
                    "priorities": (3, 3, 0, 2, 2),
                    "scaling_to_zero": False,
                    "then": 3,
                    "weights": (2, 0, 0, 2, 4),
                },
            ),
            ("wait", {"steps": 18}),
            ("make_ties", {"capacity": None, "level": 2, "policy": "Aggregated", "then": 11}),
            ("cluster_outage", {"then": 1, "which": 3}),
            (
                "change_policy",
                {
                    "delay_s": 60,
                    "policy": "StaticWeighted",
                    "priorities": (0, 0, 1, 1, 1),
                    "scaling_to_zero": True,
                    "then": 6,
                    "weights": (1, 0, 2, 0, 1),
                },
            ),
            ("cluster_back", {"then": 1, "which": 4}),
            ("change_bounds", {"extra": 29, "fmin": 33, "then": 3}),
            ("wait", {"steps": 13}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "DynamicWeighted",
                    "priorities": (1, 2, 1, 2, 2),
                    "scaling_to_zero": False,
                    "then": 14,
                    "weights": (4, 0, 3, 1, 4),
                },
            ),
            ("tiny_max_scaling_to_zero", {"pods": 2, "then": 18}),
            ("cluster_outage", {"then": 12, "which": 0}),
            ("change_bounds", {"extra": 4, "fmin": 5, "then": 18}),
            ("load_step", {"pods": 38, "ramp_steps": 4, "then": 18}),
            ("load_step", {"pods": 10, "ramp_steps": 0, "then": 20}),
            ("cluster_outage", {"then": 19, "which": 3}),
            ("flap", {"down_steps": 11, "times": 1, "up_steps": 8, "which": 2}),
            ("top_tier_blips", {"down_steps": 1, "times": 2, "up_steps": 9}),
            ("load_step", {"pods": 10, "ramp_steps": 20, "then": 11}),
            ("make_ties", {"capacity": 36, "level": 3, "policy": "Prioritized", "then": 8}),
            ("wait", {"steps": 6}),
            ("make_ties", {"capacity": 36, "level": 2, "policy": "StaticWeighted", "then": 13}),
            ("load_step", {"pods": 39, "ramp_steps": 20, "then": 1}),
            ("load_step", {"pods": 23, "ramp_steps": 0, "then": 3}),
            ("cluster_back", {"then": 14, "which": 2}),
            ("top_tier_blips", {"down_steps": 7, "times": 2, "up_steps": 20}),
            ("tiny_max_scaling_to_zero", {"pods": 4, "then": 33}),
            ("flap", {"down_steps": 10, "times": 1, "up_steps": 6, "which": 1}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Prioritized",
                    "priorities": (0, 1, 0, 3, 0),
                    "scaling_to_zero": True,
                    "then": 16,
                    "weights": (4, 1, 2, 0, 1),
                },
            ),
            ("make_ties", {"capacity": None, "level": 1, "policy": "Prioritized", "then": 16}),
            ("cluster_outage", {"then": 19, "which": 0}),
            ("top_tier_blips", {"down_steps": 2, "times": 3, "up_steps": 20}),
            ("top_tier_blips", {"down_steps": 9, "times": 1, "up_steps": 27}),
            ("flap", {"down_steps": 4, "times": 1, "up_steps": 9, "which": 2}),
            ("load_step", {"pods": 15, "ramp_steps": 4, "then": 12}),
            ("top_tier_blips", {"down_steps": 1, "times": 1, "up_steps": 30}),
            ("change_bounds", {"extra": 18, "fmin": 44, "then": 19}),
            ("flap", {"down_steps": 5, "times": 4, "up_steps": 8, "which": 1}),
            (
                "change_policy",
                {
                    "delay_s": 0,
                    "policy": "Prioritized",
                    "priorities": (1, 0, 1, 3, 0),
                    "scaling_to_zero": True,
                    "then": 8,
                    "weights": (4, 3, 1, 2, 1),
                },
            ),
            ("cluster_back", {"then": 5, "which": 2}),
            ("flap", {"down_steps": 5, "times": 1, "up_steps": 7, "which": 3}),
            ("flap", {"down_steps": 9, "times": 2, "up_steps": 6, "which": 0}),
        ),
        ChurnBreach,
        "bench/fleet_state_machine.py --seed 13 --examples 150 --no-shrink, its fleet 114, as found (not "
        "shrunk), found before the calm promise's allowance for candidate-set changes (design §4 Promise 4) "
        "was merged, which keeps it: Prioritized at a flat load; m4 (32 replicas) fails over at "
        "t=12090s and rejoins 15 s later; m2's max goes 12->10->12->6->4->12->10->4 within 7 minutes "
        "(the failover, the rejoin, pins and their release): 5 reversals where a change of the candidate "
        "set allows one turn away and back",
    ),
    "tiny-max-dynamic-weighted-flips-a-cluster-at-each-top-tier-blip-seed-22": (
        Fleet(
            members=(
                Member(
                    name="m1", capacity=0, replicas=5, startup_s=120, grow_nodes=1, provision_s=0, quota=5
                ),
                Member(
                    name="m2", capacity=0, replicas=3, startup_s=15, grow_nodes=2, provision_s=180, quota=1
                ),
                Member(
                    name="m3",
                    capacity=0,
                    replicas=3,
                    startup_s=120,
                    grow_nodes=None,
                    provision_s=60,
                    quota=None,
                ),
            ),
            spec=Spec(
                policy="DynamicWeighted",
                fmin=1,
                fmax=1,
                scaling_to_zero=False,
                delay_s=0,
                weights=(3, 1, 1, 0, 0),
                priorities=(0, 1, 1, 0, 2),
                excluded=(),
            ),
            demand_pods=1,
        ),
        (("top_tier_blips", {"down_steps": 4, "times": 2, "up_steps": 26}),),
        ChurnBreach,
        "bench/fleet_state_machine.py --seed 22 --examples 120 --no-shrink, its fleet 79, as found on "
        "2026-11-26 (short already, not shrunk further): DynamicWeighted F 1..1 over elastic clusters "
        "with no firm room; m2's one replica switches between 0 and running 3 times within 450 s of "
        "flat demand (max 1->0->1->0; 2 allowed an hour), each switch a move the design calls for: m1, "
        "unreachable at the first pass and so never planned, joins when first reached and keeps what "
        "it runs; m1, then the sole holder, is failed over after the blip tolerance and rejoins 30 s "
        "later. The measurement held m1 from t=0 and for the flag's grace, and counted switches with "
        "no allowance for changes of the candidate set",
    ),
    "failovers-and-rejoins-rewrite-a-bursting-cluster-seed-31": (
        Fleet(
            members=(
                Member(
                    name="m1", capacity=0, replicas=0, startup_s=15, grow_nodes=6, provision_s=30, quota=3
                ),
                Member(name="m2", capacity=4, replicas=8, startup_s=120),
                Member(name="m3", capacity=0, replicas=3, startup_s=15, grow_nodes=1, provision_s=60),
                Member(name="m4", capacity=31, replicas=0, startup_s=30, grow_nodes=4, provision_s=60),
            ),
            spec=Spec(
                policy="Duplicated",
                fmin=9,
                fmax=26,
                delay_s=15,
                weights=(4, 0, 1, 2, 3),
                priorities=(2, 0, 2, 3, 3),
            ),
            demand_pods=4,
        ),
        (
            ("flap", {"down_steps": 1, "times": 4, "up_steps": 9, "which": 1}),
            ("make_ties", {"capacity": 5, "level": 3, "policy": "Aggregated", "then": 8}),
            ("make_ties", {"capacity": 18, "level": 3, "policy": "DynamicWeighted", "then": 16}),
            ("load_step", {"pods": 21, "ramp_steps": 4, "then": 5}),
            ("flap", {"down_steps": 12, "times": 1, "up_steps": 9, "which": 4}),
            ("flap", {"down_steps": 8, "times": 2, "up_steps": 8, "which": 3}),
            ("flap", {"down_steps": 9, "times": 3, "up_steps": 6, "which": 1}),
        ),
        ChurnBreach,
        "bench/fleet_state_machine.py --seed 31 --examples 120 --no-shrink, its fleet 112, as found (not "
        "shrunk): DynamicWeighted at a flat 1,680 rps; m2's replicas are written 5 times in 16 minutes: "
        "two bursts as the load step ends, a burst when m4 fails over (its load moves to m2), and the "
        "ceiling's cuts when m4 and then m2 rejoin running more than F.max leaves them. The last three "
        "are the changes of the candidate set, which now allow one replica write each way",
    ),
    "a-loss-of-room-while-nodes-come-restarts-the-floor-seed-40": (
        Fleet(
            members=(
                Member(
                    name="m1", capacity=0, replicas=5, startup_s=60, grow_nodes=6, provision_s=180, quota=8
                ),
                Member(name="m2", capacity=0, replicas=0, startup_s=30, grow_nodes=3, provision_s=180),
                Member(name="m3", capacity=38, replicas=36, startup_s=60, grow_nodes=5, provision_s=180),
                Member(name="m4", capacity=0, replicas=3, startup_s=30, grow_nodes=1, provision_s=0),
                Member(name="m5", capacity=3, replicas=4, startup_s=30, provision_s=60, quota=1),
            ),
            spec=Spec(
                policy="DynamicWeighted",
                fmin=21,
                fmax=36,
                scaling_to_zero=True,
                delay_s=15,
                weights=(3, 0, 3, 3, 0),
                priorities=(1, 2, 0, 1, 1),
            ),
            demand_pods=20,
        ),
        (
            ("wait", {"steps": 1}),
            ("change_bounds", {"fmin": 41, "extra": 29, "then": 6}),
            ("make_ties", {"policy": "DynamicWeighted", "level": 0, "capacity": 15, "then": 14}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 40 --examples 120 --no-shrink, its fleet 55 (the fleet as "
        "found, the program shrunk by hand): F.min 21 -> 41 leaves m3 (firm room 38) 3 pods waiting for "
        "nodes; 90 s later every cluster's room falls to 15, m3's nodes go from 19 to 7 and 24 of its "
        "running pods are evicted. The fleet's firm room is then 31 < 41, so no plan reaches the floor "
        "before m3's new nodes come 180 s later; the floor's allowance ran from the F.min change and "
        "did not start again at the eviction",
    ),
    "a-cluster-deselected-while-nodes-come-restarts-the-floor-seed-41": (
        Fleet(
            members=(
                Member(
                    name="m1", capacity=21, replicas=7, startup_s=30, grow_nodes=6, provision_s=180, quota=25
                ),
                Member(name="m2", capacity=0, replicas=3, startup_s=15),
                Member(name="m3", capacity=1, replicas=1, startup_s=30, grow_nodes=5, quota=2),
                Member(name="m4", capacity=36, replicas=31, startup_s=0),
                Member(name="m5", capacity=13, replicas=9, startup_s=60, grow_nodes=1, provision_s=30),
            ),
            spec=Spec(
                policy="Duplicated",
                fmin=72,
                fmax=72,
                delay_s=60,
                weights=(4, 3, 0, 0, 4),
                priorities=(2, 0, 1, 0, 3),
            ),
            demand_pods=20,
        ),
        (
            ("make_ties", {"policy": "Aggregated", "level": 2, "capacity": None, "then": 13}),
            ("edit_affinity", {"which": 4, "then": 17}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 41 --examples 60 --no-shrink, its fleet 12, as found: "
        "Aggregated F 72..72 above what the fleet holds; m1's 3 pods wait 195 s for nodes, and as they "
        "come the user takes m5 (12 running) out of the selection; its share goes to m1, whose last pod "
        "needs one more node (180 s). Each wait was within the floor's allowance, but the allowance ran "
        "from t=0 and did not start again when the user removed a cluster that ran replicas",
    ),
    "a-sole-holder-failed-over-within-the-hour-keeps-its-grown-grace-seed-60": (
        Fleet(
            members=(
                Member(name="m1", capacity=0, replicas=0, startup_s=120, grow_nodes=5, provision_s=0),
                Member(name="m2", capacity=3, replicas=7, startup_s=15),
                Member(name="m3", capacity=19, replicas=12, startup_s=30, quota=16),
            ),
            spec=Spec(
                policy="Prioritized",
                fmin=8,
                fmax=27,
                delay_s=15,
                weights=(4, 0, 0, 0, 2),
                priorities=(1, 3, 0, 0, 3),
            ),
            demand_pods=2,
        ),
        (
            ("tiny_max_scaling_to_zero", {"pods": 3, "then": 33}),
            ("top_tier_blips", {"down_steps": 10, "times": 3, "up_steps": 32}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 60 --examples 480 --no-shrink, its fleet 51, shrunk by hand "
        "to its last two rules: Prioritized F 1..3 scalingToZero, m2 the only cluster running replicas. "
        "m2 is down 150 s and failed over as a sole holder after the blip tolerance; the pass that fails "
        "it over starts m1, so the simulator saw no sole holder in that step, judged the spell against "
        "the longer grace and missed the failover. Down again 10 minutes later, m2 rightly kept its "
        "grown grace in the controller, but the measurement gave it the blip tolerance and found the "
        "floor broken for the whole outage",
    ),
    "a-failover-seen-late-then-elastic-room-misses-the-floor-seed-60": (
        Fleet(
            members=(
                Member(name="m1", capacity=31, replicas=23, startup_s=60, quota=17),
                Member(name="m2", capacity=31, replicas=30, startup_s=15, quota=31),
                Member(name="m3", capacity=4, replicas=4, startup_s=0, quota=2),
                Member(name="m4", capacity=30, replicas=32, startup_s=120, grow_nodes=2, provision_s=0),
            ),
            spec=Spec(
                policy="Duplicated",
                fmin=103,
                fmax=144,
                scaling_to_zero=True,
                delay_s=15,
                weights=(4, 4, 0, 3, 2),
                priorities=(0, 1, 0, 3, 2),
            ),
            demand_pods=35,
        ),
        (
            ("controller_outage", {"then": 21}),
            ("load_step", {"pods": 52, "ramp_steps": 4, "then": 5}),
            ("edit_affinity", {"then": 18, "which": 4}),
            ("top_tier_blips", {"down_steps": 9, "times": 3, "up_steps": 25}),
            ("edit_affinity", {"then": 19, "which": 0}),
            ("cluster_outage", {"then": 13, "which": 3}),
            ("controller_back", {"then": 5}),
            ("tiny_max_scaling_to_zero", {"pods": 2, "then": 28}),
            ("load_step", {"pods": 23, "ramp_steps": 20, "then": 1}),
            ("controller_outage", {"then": 19}),
            ("change_bounds", {"extra": 31, "fmin": 56, "then": 3}),
            ("flap", {"down_steps": 7, "times": 1, "up_steps": 8, "which": 0}),
            ("capacity_change", {"capacity": 18, "then": 16, "which": 2}),
            ("cluster_outage", {"then": 13, "which": 1}),
            ("cluster_back", {"then": 7, "which": 1}),
            ("controller_back", {"then": 10}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 60 --examples 480 --no-shrink, its fleet 86, as found (not "
        "shrunk, not diagnosed): StaticWeighted F 56..87 scalingToZero; m2 goes down while the controller "
        "is down, which sees it on coming back (t=4275 s) and fails it over one grace later (4335 s), "
        "starting m3 and m4's elastic room; m4's two pods on a node that takes 0 s pend until 4365 s, "
        "so the fleet is below the floor for 90 s against 75 s allowed (no provisioning time is added "
        "for a node group whose provisioning is 0 s)",
    ),
    "a-floor-raised-while-nodes-come-owes-the-rise-its-own-allowance-seed-63": (
        Fleet(
            members=(
                Member(name="m1", capacity=4, replicas=6, startup_s=120, quota=12),
                Member(
                    name="m2",
                    capacity=26,
                    replicas=5,
                    startup_s=15,
                    grow_nodes=5,
                    provision_s=180,
                    quota=31,
                ),
                Member(name="m3", capacity=0, replicas=5, startup_s=60),
            ),
            spec=Spec(
                policy="StaticWeighted",
                fmin=12,
                fmax=15,
                weights=(2, 0, 4, 0, 3),
                priorities=(1, 3, 0, 3, 3),
            ),
            demand_pods=20,
        ),
        (
            ("change_bounds", {"extra": 19, "fmin": 43, "then": 7}),
            ("capacity_change", {"capacity": 34, "then": 6, "which": 2}),
            ("change_bounds", {"extra": 8, "fmin": 12, "then": 3}),
            ("flap", {"down_steps": 7, "times": 4, "up_steps": 2, "which": 3}),
            ("flap", {"down_steps": 1, "times": 3, "up_steps": 8, "which": 4}),
            ("flap", {"down_steps": 3, "times": 4, "up_steps": 9, "which": 0}),
            ("capacity_change", {"capacity": 18, "then": 4, "which": 3}),
            ("change_bounds", {"extra": 40, "fmin": 40, "then": 12}),
            ("change_bounds", {"extra": 10, "fmin": 60, "then": 7}),
            ("capacity_change", {"capacity": 25, "then": 1, "which": 4}),
            ("change_bounds", {"extra": 39, "fmin": 38, "then": 2}),
            ("change_bounds", {"extra": 1, "fmin": 11, "then": 13}),
            ("change_bounds", {"extra": 44, "fmin": 31, "then": 12}),
            ("flap", {"down_steps": 3, "times": 2, "up_steps": 7, "which": 0}),
            ("capacity_change", {"capacity": 24, "then": 15, "which": 0}),
            ("change_bounds", {"extra": 49, "fmin": 12, "then": 16}),
            ("change_bounds", {"extra": 36, "fmin": 3, "then": 10}),
            ("capacity_change", {"capacity": 32, "then": 19, "which": 1}),
            ("flap", {"down_steps": 10, "times": 2, "up_steps": 1, "which": 0}),
            ("change_bounds", {"extra": 45, "fmin": 35, "then": 9}),
            ("flap", {"down_steps": 2, "times": 4, "up_steps": 3, "which": 1}),
            ("flap", {"down_steps": 12, "times": 2, "up_steps": 1, "which": 3}),
            ("change_bounds", {"extra": 23, "fmin": 49, "then": 3}),
            ("change_bounds", {"extra": 32, "fmin": 19, "then": 10}),
            ("flap", {"down_steps": 8, "times": 2, "up_steps": 7, "which": 4}),
            ("change_bounds", {"extra": 8, "fmin": 52, "then": 4}),
            ("flap", {"down_steps": 8, "times": 1, "up_steps": 7, "which": 0}),
            ("change_bounds", {"extra": 30, "fmin": 18, "then": 12}),
            ("flap", {"down_steps": 8, "times": 1, "up_steps": 12, "which": 4}),
            ("capacity_change", {"capacity": 11, "then": 12, "which": 4}),
            ("change_bounds", {"extra": 60, "fmin": 56, "then": 6}),
            ("change_bounds", {"extra": 36, "fmin": 58, "then": 18}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 63 --examples 480 --no-shrink, its fleet 435: StaticWeighted; "
        "F.min rises 18 -> 56 at t=6615 s and m2 (2 pods on firm room, nodes of 2 in 180 s) is asked for "
        "10, then F.min rises to 58 at 6705 s and m2 for 12. The first nodes come at 6810 s (56 "
        "scheduled: the first rise met within its allowance), the last at about 6900 s (the second rise "
        "met 195 s after it). The measure ran the whole allowance from the first rise, so the two "
        "replicas the second rise asked for were owed 90 s before they were asked for",
    ),
    "a-blip-within-the-grace-moves-max-for-the-floor-seed-71": (
        Fleet(
            members=(
                Member(name="m1", capacity=0, replicas=3, startup_s=120, quota=8),
                Member(name="m2", capacity=0, replicas=4, startup_s=15, quota=10),
                Member(name="m3", capacity=1, replicas=6, startup_s=15, grow_nodes=3, provision_s=30),
                Member(name="m4", capacity=11, replicas=7, startup_s=0),
                Member(name="m5", capacity=30, replicas=14, startup_s=120, grow_nodes=4, quota=4),
            ),
            spec=Spec(
                policy="Prioritized",
                fmin=43,
                fmax=82,
                scaling_to_zero=True,
                delay_s=15,
                weights=(1, 0, 0, 2, 0),
                priorities=(0, 0, 2, 3, 2),
            ),
            demand_pods=15,
        ),
        (
            ("change_bounds", {"extra": 36, "fmin": 42, "then": 6}),
            ("top_tier_blips", {"down_steps": 7, "times": 3, "up_steps": 13}),
            ("make_ties", {"capacity": 31, "level": 1, "policy": "Aggregated", "then": 13}),
            ("wait", {"steps": 3}),
            ("tiny_max_scaling_to_zero", {"pods": 3, "then": 31}),
            ("change_bounds", {"extra": 13, "fmin": 58, "then": 7}),
            ("make_ties", {"capacity": 26, "level": 1, "policy": "Aggregated", "then": 12}),
            ("capacity_change", {"capacity": 5, "then": 19, "which": 3}),
            ("make_ties", {"capacity": None, "level": 1, "policy": "DynamicWeighted", "then": 10}),
            ("tiny_max_scaling_to_zero", {"pods": 5, "then": 33}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "Aggregated",
                    "priorities": (0, 2, 1, 2, 1),
                    "scaling_to_zero": False,
                    "then": 12,
                    "weights": (3, 0, 0, 4, 0),
                },
            ),
            ("flap", {"down_steps": 2, "times": 3, "up_steps": 7, "which": 4}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Aggregated",
                    "priorities": (0, 1, 2, 2, 1),
                    "scaling_to_zero": False,
                    "then": 14,
                    "weights": (4, 4, 3, 0, 0),
                },
            ),
            ("top_tier_blips", {"down_steps": 2, "times": 1, "up_steps": 8}),
            ("flap", {"down_steps": 10, "times": 2, "up_steps": 1, "which": 2}),
            ("top_tier_blips", {"down_steps": 1, "times": 2, "up_steps": 25}),
            (
                "change_policy",
                {
                    "delay_s": 0,
                    "policy": "Prioritized",
                    "priorities": (3, 1, 2, 3, 1),
                    "scaling_to_zero": False,
                    "then": 10,
                    "weights": (3, 4, 3, 2, 2),
                },
            ),
            ("wait", {"steps": 5}),
            ("load_step", {"pods": 9, "ramp_steps": 4, "then": 15}),
            (
                "change_policy",
                {
                    "delay_s": 60,
                    "policy": "Prioritized",
                    "priorities": (2, 1, 1, 1, 0),
                    "scaling_to_zero": False,
                    "then": 8,
                    "weights": (2, 4, 0, 1, 2),
                },
            ),
            ("make_ties", {"capacity": 12, "level": 0, "policy": "StaticWeighted", "then": 3}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "StaticWeighted",
                    "priorities": (0, 3, 0, 1, 1),
                    "scaling_to_zero": True,
                    "then": 17,
                    "weights": (1, 3, 0, 0, 2),
                },
            ),
            ("tiny_max_scaling_to_zero", {"pods": 2, "then": 37}),
            ("top_tier_blips", {"down_steps": 6, "times": 2, "up_steps": 28}),
            ("load_step", {"pods": 3, "ramp_steps": 20, "then": 3}),
            ("wait", {"steps": 8}),
            ("flap", {"down_steps": 9, "times": 4, "up_steps": 8, "which": 2}),
            ("load_step", {"pods": 25, "ramp_steps": 4, "then": 14}),
            ("load_step", {"pods": 60, "ramp_steps": 20, "then": 3}),
            ("wait", {"steps": 1}),
            (
                "change_policy",
                {
                    "delay_s": 60,
                    "policy": "Prioritized",
                    "priorities": (2, 2, 2, 1, 3),
                    "scaling_to_zero": False,
                    "then": 10,
                    "weights": (2, 4, 4, 4, 0),
                },
            ),
            ("change_bounds", {"extra": 8, "fmin": 53, "then": 4}),
            ("tiny_max_scaling_to_zero", {"pods": 2, "then": 32}),
            ("tiny_max_scaling_to_zero", {"pods": 3, "then": 39}),
            ("load_step", {"pods": 3, "ramp_steps": 4, "then": 16}),
            ("wait", {"steps": 16}),
            ("top_tier_blips", {"down_steps": 8, "times": 2, "up_steps": 18}),
            ("capacity_change", {"capacity": 20, "then": 14, "which": 2}),
            ("flap", {"down_steps": 2, "times": 1, "up_steps": 8, "which": 4}),
            ("make_ties", {"capacity": None, "level": 1, "policy": "DynamicWeighted", "then": 1}),
            ("top_tier_blips", {"down_steps": 3, "times": 3, "up_steps": 17}),
            ("change_bounds", {"extra": 6, "fmin": 24, "then": 1}),
            ("change_bounds", {"extra": 39, "fmin": 21, "then": 9}),
            ("wait", {"steps": 14}),
            (
                "change_policy",
                {
                    "delay_s": 15,
                    "policy": "DynamicWeighted",
                    "priorities": (2, 0, 3, 1, 2),
                    "scaling_to_zero": False,
                    "then": 10,
                    "weights": (2, 1, 2, 2, 4),
                },
            ),
            ("wait", {"steps": 20}),
            ("top_tier_blips", {"down_steps": 1, "times": 1, "up_steps": 32}),
            ("make_ties", {"capacity": 10, "level": 1, "policy": "StaticWeighted", "then": 1}),
            ("make_ties", {"capacity": 21, "level": 3, "policy": "Aggregated", "then": 18}),
            ("change_bounds", {"extra": 28, "fmin": 23, "then": 16}),
            (
                "change_policy",
                {
                    "delay_s": 0,
                    "policy": "DynamicWeighted",
                    "priorities": (3, 3, 1, 3, 0),
                    "scaling_to_zero": True,
                    "then": 15,
                    "weights": (3, 0, 0, 0, 0),
                },
            ),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "StaticWeighted",
                    "priorities": (0, 0, 0, 1, 3),
                    "scaling_to_zero": False,
                    "then": 20,
                    "weights": (2, 2, 2, 0, 0),
                },
            ),
            ("top_tier_blips", {"down_steps": 3, "times": 3, "up_steps": 10}),
        ),
        ChurnBreach,
        "bench/fleet_state_machine.py --seed 71 --examples 500 --no-shrink, its fleet 28: StaticWeighted "
        "weights [2, 2, 2, 0, 0] F 23..51; m1 (8 running) blips three times, 45 s each, within the 60 s "
        "grace. Each blip, the floor step counted only the reachable clusters: 19 held under their maxes "
        "against F.min 23, so 4-5 max moved from m2 (quota-bound) to m4 (weight 0, with room); each "
        "return, the period optimization moved it back: m2 and m4 reversed 6 times in 7 minutes",
    ),
    "a-rejoin-cuts-running-pods-while-the-floor-waits-for-nodes-seed-72": (
        Fleet(
            members=(
                Member(name="m1", capacity=16, replicas=9, startup_s=15, grow_nodes=3, provision_s=180),
                Member(name="m2", capacity=8, replicas=12, startup_s=60),
                Member(name="m3", capacity=12, replicas=13, startup_s=15),
                Member(
                    name="m4", capacity=0, replicas=5, startup_s=120, grow_nodes=0, provision_s=0, quota=2
                ),
                Member(name="m5", capacity=22, replicas=20, startup_s=60),
            ),
            spec=Spec(
                policy="StaticWeighted",
                fmin=42,
                fmax=47,
                weights=(3, 2, 0, 1, 0),
                priorities=(1, 3, 3, 1, 1),
            ),
            demand_pods=21,
        ),
        (
            ("flap", {"down_steps": 3, "times": 3, "up_steps": 6, "which": 0}),
            ("flap", {"down_steps": 9, "times": 1, "up_steps": 7, "which": 0}),
            ("flap", {"down_steps": 1, "times": 4, "up_steps": 3, "which": 1}),
            ("flap", {"down_steps": 7, "times": 2, "up_steps": 8, "which": 1}),
            ("flap", {"down_steps": 12, "times": 4, "up_steps": 5, "which": 4}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 72 --examples 500 --no-shrink, its fleet 229: StaticWeighted "
        "weights [3, 2, 0, 1, 0] F 42..47; m5 (22 Ready) fails over and m1 stands in, with 10 pods "
        "waiting for nodes (180 s); m5 rejoins before they come. §3 read m1's waiting pods as running, "
        "so under F.max m5, the flapper, gave way: its replicas were written 22 -> 5 and the fleet sat "
        "below the floor until m1's nodes came (315 s against 270 s)",
    ),
    "a-cluster-de-selected-while-down-runs-without-an-hpa-seed-73": (
        Fleet(
            members=(
                Member(name="m1", capacity=9, replicas=7, startup_s=60, grow_nodes=1, provision_s=0, quota=7),
                Member(name="m2", capacity=0, replicas=3, startup_s=60),
                Member(name="m3", capacity=0, replicas=2, startup_s=0, grow_nodes=3, provision_s=30, quota=3),
                Member(name="m4", capacity=36, replicas=12, startup_s=60, grow_nodes=0, provision_s=0),
            ),
            spec=Spec(
                policy="Aggregated",
                fmin=3,
                fmax=18,
                scaling_to_zero=True,
                weights=(4, 0, 1, 3, 0),
                priorities=(1, 3, 1, 2, 2),
            ),
            demand_pods=54,
        ),
        (
            ("load_step", {"pods": 23, "ramp_steps": 4, "then": 14}),
            ("load_step", {"pods": 15, "ramp_steps": 4, "then": 14}),
            ("top_tier_blips", {"down_steps": 11, "times": 3, "up_steps": 20}),
            ("edit_affinity", {"then": 17, "which": 0}),
            ("make_ties", {"capacity": 22, "level": 0, "policy": "Prioritized", "then": 18}),
            ("flap", {"down_steps": 9, "times": 4, "up_steps": 9, "which": 3}),
            ("flap", {"down_steps": 1, "times": 4, "up_steps": 11, "which": 4}),
            ("top_tier_blips", {"down_steps": 6, "times": 1, "up_steps": 17}),
            (
                "change_policy",
                {
                    "delay_s": 15,
                    "policy": "StaticWeighted",
                    "priorities": (1, 2, 2, 0, 2),
                    "scaling_to_zero": False,
                    "then": 17,
                    "weights": (2, 0, 3, 1, 0),
                },
            ),
            ("wait", {"steps": 14}),
            ("flap", {"down_steps": 9, "times": 2, "up_steps": 3, "which": 0}),
            ("edit_affinity", {"then": 7, "which": 0}),
            ("capacity_change", {"capacity": 7, "then": 17, "which": 4}),
            ("wait", {"steps": 3}),
            ("change_bounds", {"extra": 29, "fmin": 28, "then": 2}),
            ("wait", {"steps": 3}),
            ("make_ties", {"capacity": None, "level": 3, "policy": "Prioritized", "then": 1}),
            ("wait", {"steps": 19}),
            ("cluster_outage", {"then": 6, "which": 4}),
            ("edit_affinity", {"then": 16, "which": 0}),
            ("cluster_outage", {"then": 11, "which": 1}),
            ("cluster_outage", {"then": 4, "which": 2}),
            ("cluster_back", {"then": 11, "which": 4}),
            ("cluster_back", {"then": 1, "which": 4}),
            ("cluster_outage", {"then": 5, "which": 0}),
            ("make_ties", {"capacity": None, "level": 0, "policy": "Aggregated", "then": 18}),
            ("make_ties", {"capacity": 10, "level": 1, "policy": "Prioritized", "then": 16}),
            ("cluster_back", {"then": 3, "which": 0}),
            ("capacity_change", {"capacity": 25, "then": 7, "which": 0}),
        ),
        UnmanagedBreach,
        "bench/fleet_state_machine.py --seed 73 --examples 500 --no-shrink, its fleet 335: m1 goes down "
        "running 3, is failed over, and is taken out of the selection while still down; the pass dropped "
        "its status row (a failed-over row has no counts and it held no HPA the pass could see), so when "
        "it answered its member HPA was removed and no drain began: 3 replicas ran with no HPA",
    ),
    "an-outage-during-a-breach-owes-its-part-from-the-outage-seed-74": (
        Fleet(
            members=(
                Member(name="m1", capacity=2, replicas=5, startup_s=120, quota=2),
                Member(name="m2", capacity=0, replicas=0, startup_s=60),
                Member(name="m3", capacity=2, replicas=1, startup_s=0, grow_nodes=6),
                Member(name="m4", capacity=12, replicas=17, startup_s=0, grow_nodes=6),
            ),
            spec=Spec(
                policy="Duplicated",
                fmin=16,
                fmax=17,
                scaling_to_zero=True,
                weights=(2, 0, 2, 4, 0),
                priorities=(3, 1, 1, 3, 3),
            ),
            demand_pods=12,
        ),
        (
            ("wait", {"steps": 14}),
            ("cluster_outage", {"then": 11, "which": 1}),
            ("wait", {"steps": 11}),
            ("make_ties", {"capacity": None, "level": 0, "policy": "Prioritized", "then": 1}),
            ("wait", {"steps": 7}),
            ("capacity_change", {"capacity": 17, "then": 4, "which": 0}),
            ("make_ties", {"capacity": 25, "level": 1, "policy": "StaticWeighted", "then": 2}),
            ("top_tier_blips", {"down_steps": 5, "times": 3, "up_steps": 36}),
            ("make_ties", {"capacity": 25, "level": 0, "policy": "DynamicWeighted", "then": 19}),
            ("capacity_change", {"capacity": 8, "then": 2, "which": 2}),
            ("capacity_change", {"capacity": 35, "then": 4, "which": 0}),
            ("top_tier_blips", {"down_steps": 9, "times": 1, "up_steps": 36}),
            ("cluster_back", {"then": 5, "which": 3}),
            (
                "change_policy",
                {
                    "delay_s": 60,
                    "policy": "Duplicated",
                    "priorities": (0, 2, 0, 1, 0),
                    "scaling_to_zero": True,
                    "then": 8,
                    "weights": (2, 2, 1, 3, 3),
                },
            ),
            ("wait", {"steps": 19}),
            ("wait", {"steps": 17}),
            ("capacity_change", {"capacity": 4, "then": 20, "which": 2}),
            ("capacity_change", {"capacity": 37, "then": 9, "which": 3}),
            ("change_bounds", {"extra": 14, "fmin": 17, "then": 6}),
            ("top_tier_blips", {"down_steps": 12, "times": 2, "up_steps": 27}),
            ("flap", {"down_steps": 7, "times": 2, "up_steps": 3, "which": 4}),
            ("top_tier_blips", {"down_steps": 7, "times": 1, "up_steps": 29}),
            ("tiny_max_scaling_to_zero", {"pods": 1, "then": 17}),
            ("change_bounds", {"extra": 1, "fmin": 49, "then": 3}),
            (
                "change_policy",
                {
                    "delay_s": 30,
                    "policy": "Prioritized",
                    "priorities": (2, 2, 3, 2, 3),
                    "scaling_to_zero": True,
                    "then": 7,
                    "weights": (4, 0, 1, 3, 0),
                },
            ),
            ("cluster_outage", {"then": 5, "which": 4}),
            ("flap", {"down_steps": 4, "times": 3, "up_steps": 7, "which": 2}),
            ("cluster_back", {"then": 2, "which": 4}),
            ("tiny_max_scaling_to_zero", {"pods": 5, "then": 35}),
            ("flap", {"down_steps": 8, "times": 3, "up_steps": 3, "which": 2}),
            (
                "change_policy",
                {
                    "delay_s": 60,
                    "policy": "DynamicWeighted",
                    "priorities": (3, 3, 1, 2, 2),
                    "scaling_to_zero": True,
                    "then": 7,
                    "weights": (2, 1, 0, 0, 0),
                },
            ),
            ("tiny_max_scaling_to_zero", {"pods": 4, "then": 31}),
            ("flap", {"down_steps": 11, "times": 2, "up_steps": 11, "which": 1}),
            ("tiny_max_scaling_to_zero", {"pods": 2, "then": 36}),
            ("flap", {"down_steps": 3, "times": 2, "up_steps": 1, "which": 3}),
            ("wait", {"steps": 5}),
            ("cluster_outage", {"then": 1, "which": 2}),
            ("change_bounds", {"extra": 32, "fmin": 35, "then": 5}),
            (
                "change_policy",
                {
                    "delay_s": 60,
                    "policy": "Aggregated",
                    "priorities": (0, 0, 2, 2, 2),
                    "scaling_to_zero": True,
                    "then": 20,
                    "weights": (1, 0, 0, 2, 0),
                },
            ),
            ("flap", {"down_steps": 8, "times": 2, "up_steps": 12, "which": 1}),
            ("capacity_change", {"capacity": 33, "then": 20, "which": 4}),
            ("tiny_max_scaling_to_zero", {"pods": 1, "then": 29}),
            ("make_ties", {"capacity": 40, "level": 1, "policy": "DynamicWeighted", "then": 9}),
            ("cluster_back", {"then": 14, "which": 0}),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "Duplicated",
                    "priorities": (0, 2, 3, 0, 3),
                    "scaling_to_zero": False,
                    "then": 20,
                    "weights": (1, 0, 2, 1, 0),
                },
            ),
            ("wait", {"steps": 1}),
            ("make_ties", {"capacity": 10, "level": 1, "policy": "StaticWeighted", "then": 18}),
            ("make_ties", {"capacity": 16, "level": 2, "policy": "DynamicWeighted", "then": 12}),
            ("change_bounds", {"extra": 35, "fmin": 23, "then": 2}),
            ("change_bounds", {"extra": 16, "fmin": 18, "then": 17}),
            ("wait", {"steps": 6}),
            ("make_ties", {"capacity": 26, "level": 0, "policy": "DynamicWeighted", "then": 17}),
            ("make_ties", {"capacity": 6, "level": 1, "policy": "Prioritized", "then": 2}),
            ("cluster_outage", {"then": 17, "which": 3}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 74 --examples 500 --no-shrink, its fleet 163: every "
        "cluster's room falls to 6 at t=14370 s (m2's 8 -> 6 Ready, a loss that starts the floor's "
        "allowance), and m4, with 6 Ready and nodes coming, goes down 30 s later. Its replicas can be "
        "replaced only after its grace (failover at 14460 s) and m3's new nodes (14535 s): 75 s after "
        "the outage's own allowance began, but the measure ran the outage's part from the room loss",
    ),
    "a-switch-to-duplicated-keeps-a-saturated-mark-seed-83": (
        Fleet(
            members=(
                Member(name="m1", capacity=13, replicas=12, startup_s=0),
                Member(name="m2", capacity=0, replicas=5, startup_s=120, grow_nodes=1, provision_s=180),
                Member(name="m3", capacity=0, replicas=1, startup_s=30, quota=8),
            ),
            spec=Spec(
                policy="Duplicated",
                fmin=15,
                fmax=26,
                delay_s=15,
                weights=(2, 0, 0, 0, 3),
                priorities=(1, 2, 3, 3, 2),
            ),
            demand_pods=12,
        ),
        (
            ("flap", {"down_steps": 1, "times": 1, "up_steps": 9, "which": 3}),
            (
                "change_policy",
                {
                    "delay_s": 15,
                    "policy": "Duplicated",
                    "priorities": (3, 1, 3, 2, 0),
                    "scaling_to_zero": True,
                    "then": 2,
                    "weights": (1, 4, 2, 0, 0),
                },
            ),
            ("top_tier_blips", {"down_steps": 12, "times": 2, "up_steps": 17}),
            ("capacity_change", {"capacity": 19, "then": 14, "which": 4}),
            ("capacity_change", {"capacity": 21, "then": 19, "which": 3}),
            ("capacity_change", {"capacity": 25, "then": 12, "which": 0}),
            ("flap", {"down_steps": 4, "times": 3, "up_steps": 6, "which": 4}),
            ("capacity_change", {"capacity": 4, "then": 15, "which": 0}),
            (
                "change_policy",
                {
                    "delay_s": 15,
                    "policy": "Prioritized",
                    "priorities": (2, 0, 0, 2, 1),
                    "scaling_to_zero": False,
                    "then": 14,
                    "weights": (3, 4, 0, 2, 1),
                },
            ),
            (
                "change_policy",
                {
                    "delay_s": 120,
                    "policy": "DynamicWeighted",
                    "priorities": (0, 1, 2, 0, 3),
                    "scaling_to_zero": True,
                    "then": 16,
                    "weights": (3, 0, 0, 2, 2),
                },
            ),
            ("top_tier_blips", {"down_steps": 1, "times": 3, "up_steps": 20}),
            ("top_tier_blips", {"down_steps": 3, "times": 2, "up_steps": 11}),
            ("top_tier_blips", {"down_steps": 3, "times": 3, "up_steps": 20}),
            ("flap", {"down_steps": 6, "times": 1, "up_steps": 8, "which": 1}),
            ("top_tier_blips", {"down_steps": 3, "times": 1, "up_steps": 38}),
            ("capacity_change", {"capacity": 40, "then": 9, "which": 3}),
            ("capacity_change", {"capacity": 10, "then": 12, "which": 0}),
            ("flap", {"down_steps": 8, "times": 2, "up_steps": 6, "which": 2}),
            (
                "change_policy",
                {
                    "delay_s": 15,
                    "policy": "Prioritized",
                    "priorities": (2, 1, 1, 0, 0),
                    "scaling_to_zero": False,
                    "then": 12,
                    "weights": (4, 4, 2, 0, 2),
                },
            ),
            ("capacity_change", {"capacity": 24, "then": 12, "which": 1}),
            (
                "change_policy",
                {
                    "delay_s": 15,
                    "policy": "Duplicated",
                    "priorities": (0, 3, 1, 1, 0),
                    "scaling_to_zero": False,
                    "then": 5,
                    "weights": (2, 3, 0, 0, 3),
                },
            ),
            ("capacity_change", {"capacity": 34, "then": 12, "which": 2}),
            ("capacity_change", {"capacity": 38, "then": 20, "which": 2}),
        ),
        FloorBreach,
        "bench/fleet_state_machine.py --seed 83 --examples 500 --no-shrink, its fleet 46: m3 is Saturated "
        "under Prioritized (its pod pends, no room), then the spec turns Duplicated F 15..26. The "
        "assignment kept m3's mark: m3 capped at 1..1 and 25 of its max moved to m1 (15..51, above "
        "F.max); when m3's room came back (quota 8) it stayed capped, and the fleet sat 2 below the "
        "floor of 15 for 480 s",
    ),
}


def replay(fleet: Fleet, rules: Rules) -> FleetMachine:
    """Run a reproduction as hypothesis would: each rule, the check after it, the teardown's settle."""
    machine = FleetMachine()
    machine.start(fleet)
    machine.promises_hold()
    for name, arguments in rules:
        getattr(machine, name)(**arguments)
        machine.promises_hold()
    machine.teardown()
    return machine


FIXED_BREACHES = frozenset(
    {
        "a-switch-to-duplicated-keeps-a-saturated-mark-seed-83",
        "an-outage-during-a-breach-owes-its-part-from-the-outage-seed-74",
        "a-cluster-de-selected-while-down-runs-without-an-hpa-seed-73",
        "a-rejoin-cuts-running-pods-while-the-floor-waits-for-nodes-seed-72",
        "a-blip-within-the-grace-moves-max-for-the-floor-seed-71",
        "a-floor-raised-while-nodes-come-owes-the-rise-its-own-allowance-seed-63",
        "a-failover-seen-late-then-elastic-room-misses-the-floor-seed-60",
        "min-above-capacity-fmin-above-room",
        "min-above-capacity-after-spec-change",
        "floor-waits-the-delay",
        "optimization-overfills-a-full-cluster-and-flaps",
        "floor-waits-the-delay-and-overfills-again",
        "weighted-cluster-with-no-room",
        "flapping-cluster-rejoin-drains-the-stand-in",
        "flapping-cluster-rejoins-many-times",
        "two-flappers-the-later-failover-gives-way",
        "trigger-bounces-max-no-cluster-can-hold",
        "scaling-to-zero-start-counts-pending-pods-as-held",
        "held-flapper-keeps-the-max-the-floor-needs",
        "a-min-on-a-cluster-that-holds-nothing-counts-for-nothing",
        "quota-refusals-not-read-yet",
        "spill-moves-pods-nodes-are-coming-for",
        "failover-reassignment-undoes-the-optimization",
        "max-that-fits-nowhere-moves-each-period",
        "drain-from-bottom-hands-the-stand-in-to-a-flapper",
        "rejoin-at-zero-waits-for-a-reassignment",
        "room-added-by-hand-is-not-used",
        "failover-puts-the-excess-max-on-clusters-without-room",
        "flapper-held-within-its-grown-grace-ran-all-its-max",
        "flapper-held-within-its-grown-grace-seed-1",
        "flaps-on-a-fleet-that-cannot-hold-f-min-move-a-roomless-max",
        "prioritized-flaps-turn-a-max-five-times",
        "failover-onto-elastic-room-a-quota-leaves-one-pod-seed-1",
        "deselected-cluster-unreachable-while-drained-is-never-drained-seed-10",
        "prioritized-failover-and-rejoin-turn-a-max-five-times-seed-13",
        "tiny-max-dynamic-weighted-flips-a-cluster-at-each-top-tier-blip-seed-22",
        "failovers-and-rejoins-rewrite-a-bursting-cluster-seed-31",
        "a-loss-of-room-while-nodes-come-restarts-the-floor-seed-40",
        "a-cluster-deselected-while-nodes-come-restarts-the-floor-seed-41",
        "a-sole-holder-failed-over-within-the-hour-keeps-its-grown-grace-seed-60",
    }
)
"""Breaches this machine found that the planner now keeps: each is replayed as a regression test."""


@pytest.mark.parametrize("name", sorted(FIXED_BREACHES))
def test_a_fixed_breach_stays_fixed(name: str) -> None:
    fleet, rules, _, _ = KNOWN_BREACHES[name]
    replay(fleet, rules)


OPEN_BREACHES = [name for name in KNOWN_BREACHES if name not in FIXED_BREACHES]
"""Breaches found and not yet kept, each run as a strict xfail: it fails loudly once the planner keeps
the promise, and then it joins FIXED_BREACHES."""


if OPEN_BREACHES:

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param(
                name,
                marks=pytest.mark.xfail(
                    strict=True, raises=KNOWN_BREACHES[name][2], reason=KNOWN_BREACHES[name][3]
                ),
            )
            for name in OPEN_BREACHES
        ],
    )
    def test_known_breach_is_fixed(name: str) -> None:
        fleet, rules, _, _ = KNOWN_BREACHES[name]
        replay(fleet, rules)


def test_a_spec_change_while_a_cluster_is_down_keeps_the_floor() -> None:
    """Found by seed 106: F.min raised to 40 while m2 was unreachable within its grace. The split read
    m2's unknown room as room for everything and gave it 20 (never written there), m1 with room for 36
    kept 18, and the clusters down next were given shares in turn: 18 replicas for 315 s (allowed
    270 s). A held cluster now receives nothing (design §4 Failover)."""
    members = (
        Member("m1", 36, 24, 30, grow_nodes=0),
        Member("m2", 1, 0, 30, grow_nodes=0),
        Member("m3", 3, 0, 30, grow_nodes=6, provision_s=180, quota=12),
        Member("m4", 5, 0, 30),
        Member("m5", 1, 0, 30, grow_nodes=0, quota=0),
    )
    machine = FleetMachine()
    machine.start(Fleet(members, Spec("DynamicWeighted", 1, 1, weights=(1, 1, 1, 0, 0)), 0))
    machine.load_step(pods=0, ramp_steps=0, then=1)
    machine.change_bounds(extra=1, fmin=1, then=1)
    machine.cluster_outage(then=1, which=1)
    machine.change_bounds(extra=0, fmin=40, then=1)
    machine.promises_hold()
    machine.cluster_outage(then=1, which=3)
    machine.cluster_outage(then=15, which=2)
    machine.cluster_outage(then=4, which=1)
    machine.promises_hold()
    machine.teardown()  # raises FloorBreach without the fix
