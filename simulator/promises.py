"""The FederatedHPA's four promises (DESIGN §4), measured from what the fleet did.

A pure function of the recorded steps (``StepSample``: replicas, pods, outages, the member HPAs that
this FederatedHPA owns, what the controller wrote) and a few numbers (``PromiseTerms``). It never asks
the planner what it meant to do, so the same measurement checks a run of this controller, a baseline,
or any other sequence of fleet states.

Every step's state holds for the step's length ``dt``. A *breach episode* is a run of consecutive
steps in which a promise does not hold; it is a violation when it lasts longer than the promise's
tolerance, and then it is reported once, at the episode's first step, however long it lasts.

1. ``floor``: the scheduled replicas (Ready or starting; Pending ones do not count) of the *eligible*
   clusters (selected, with the workload, reachable) are at least min(F.min, their capacity).
   Tolerance: the failover grace plus one pass (``failover_grace_s + dt``). A flapping cluster's grace
   grows with its failovers (promise 4): while an unreachable cluster is past the flag's grace but
   within its own grown grace (``ClusterSample.failover_grace_s``), the clock stops; calm wins for a
   flapper, and the floor is owed again one pass after that grace ends (it is failed over and the
   assignment re-runs). An elastic cluster's room still to come (its node group below its max) counts
   too; in a run where any has such room, the slowest node group's provisioning time is added to the
   tolerance: nodes cannot come faster. A floor that rises during a breach owes the rise its own
   tolerance, from the rise, and what an outage takes during a breach is owed one tolerance after the
   outage (what was owed before either keeps its own).
2. ``unmanaged-replicas``, per cluster: a reachable cluster that is selected, or was while the controller
   ran earlier in the run (one that left the selection is drained, not abandoned), runs replicas with no
   member HPA
   of this FederatedHPA (and no other HPA on the workload: a ConflictingHPA cluster's replicas are under
   the user's HPA). Tolerance: one optimization period. A drain the controller writes is not a breach
   while it lasts: from the first step of the episode in which the controller wrote the cluster's
   replicas down, at most one optimization period of steps stops the clock; past that the clock runs.
3. ``ceiling``: the maxes of this FederatedHPA's member HPAs in reachable clusters sum to at most F.max.
   Tolerance: one pass (``dt``): two steps in a row above F.max are a breach.
4. ``churn``, per cluster: a member max reverses direction (up then down, or down then up; no HPA
   counts as max 0) at most 4 times within any hour of flat demand. A reversal counts in a window when
   the demand stays flat from the move it reverses to the last reversal of the window; flat means
   max(demand) - min(demand) <= 10% of max(demand) (all zero is flat). So reversals while the demand
   changes never count. A change of the candidate set (a cluster failed over once its grace is over,
   rejoined after that, selected or de-selected; a blip within the grace is none) allows each max one
   move in each direction within its settle time, from the change (a failover's from its outage) to one
   pass and one optimization period after it (see ``_changes``): a reversal made by such a move is not
   counted; a further move within the settle time, or any move after it, is a move like any other.
   Within any such hour, too, a cluster's workload switches between 0 and running at most twice (a
   change of the candidate set allows one switch each way within its settle time, as it allows a max
   one move each way) and the controller writes its replicas at most 4 times (the same allowance: one
   write up and one down per change). A cluster unreachable
   before the controller ever reached it was never planned, so it is not held: the pass that first
   reaches it is a change of the candidate set (it joins).

The controller's outages: while the controller is down nothing can act, so those steps are not
measured; an episode open when it stops ends there, and the clock of a breach starts again at the
controller's first step back (a fresh process gets the same tolerance as after any fault). Churn needs
no rule: member maxes move only when the controller writes them.

Which breaches are violations depends on what the FederatedHPA promises: with scaleAssist, every policy
but Duplicated keeps all four; Duplicated keeps the floor and every replica under an HPA; without
scaleAssist (assign once, never act afterwards) no promise of §4 is made. The four figures are measured
for every run, promised or not, so that baselines can be compared on them.

One more check that is not a promise: the maxes of every member HPA this FederatedHPA owns (reachable or
not) must not sum below F.max for longer than one pass (DESIGN §3: they sum to exactly F.max; the
ceiling covers the other half). Every policy but Duplicated, with or without scaleAssist.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from controller.planning.policies import policy_named
from simulator.samples import ClusterSample, StepSample

FLOOR = "floor"
UNMANAGED = "unmanaged-replicas"
CEILING = "ceiling"
CHURN = "churn"
MAX_SUM_BELOW = "max-sum-below-federated-max"
PROMISES = (FLOOR, UNMANAGED, CEILING, CHURN)

CALM_WINDOW_S = 3600.0
"""Reversals are counted within any window shorter than this (an hour)."""
CALM_MAX_REVERSALS = 4
"""At most this many reversals of one member max within an hour of flat demand."""
CALM_MAX_ZERO_FLIPS = 2
"""At most this many switches of one cluster between 0 and running within an hour of flat demand: one
trip to 0 and back (scaling to zero waits an hour after a wake)."""
CALM_MAX_REPLICA_WRITES = 4
"""At most this many replica writes of the controller to one cluster within an hour of flat demand."""
FLAT_BAND = 0.10
"""Demand is flat over a span when max - min is at most this fraction of max."""
_EPS = 1e-9


@dataclass(frozen=True)
class Violation:
    t: float
    kind: str  # floor | unmanaged-replicas | ceiling | churn | max-sum-below-federated-max | ...
    detail: str


@dataclass(frozen=True)
class PromiseTerms:
    """The numbers the promises are measured against (seconds)."""

    step_s: float  # one pass: the controller reconciles once a step
    failover_grace_s: float  # PlannerConfig.failover_grace_seconds
    optimization_period_s: float  # PlannerConfig.optimization_period_seconds
    policy: str  # the FederatedHPA's assignment type
    scale_assist: bool = True

    @property
    def promised(self) -> frozenset[str]:
        """The promises this FederatedHPA makes (DESIGN §4)."""
        if not policy_named(self.policy).divides_bounds:
            return frozenset((FLOOR, UNMANAGED))
        if not self.scale_assist:
            return frozenset()
        return frozenset(PROMISES)

    @property
    def floor_tolerance_s(self) -> float:
        return self.failover_grace_s + self.step_s

    @property
    def unmanaged_tolerance_s(self) -> float:
        return self.optimization_period_s

    @property
    def ceiling_tolerance_s(self) -> float:
        return self.step_s


@dataclass(frozen=True)
class PromiseReport:
    """Violations (the promised breaches, in time order) and the figures behind them.

    The seconds are integrals over the steps of breach episodes (episodes longer than their tolerance,
    from their first step): zero when nothing breached. ``unmanaged_replica_seconds`` weighs each step
    by the replicas left unmanaged. ``max_reversals`` is the most reversals of one member max within an
    hour of flat demand (a count, breached above 4). ``allowed_moves`` counts the moves of member maxes,
    over the run and every cluster, that changes of the candidate set allowed (not a breach figure).
    """

    terms: PromiseTerms
    violations: list[Violation]
    floor_breach_seconds: float
    unmanaged_replica_seconds: float
    over_max_seconds: float
    max_reversals: int
    zero_flips: int = 0
    replica_writes: int = 0
    allowed_moves: int = 0

    def figures(self) -> dict[str, float | int]:
        return {
            "floor_breach_seconds": self.floor_breach_seconds,
            "unmanaged_replica_seconds": self.unmanaged_replica_seconds,
            "over_max_seconds": self.over_max_seconds,
            "max_reversals": self.max_reversals,
            "zero_flips": self.zero_flips,
            "replica_writes": self.replica_writes,
            "allowed_moves": self.allowed_moves,
        }


def measure(steps: Sequence[StepSample], terms: PromiseTerms) -> PromiseReport:
    """Measure the four promises (and the max-sum floor) over ``steps``, in time order."""
    dt = terms.step_s
    floor_v, floor_s = _floor(steps, terms)
    unmanaged_v, unmanaged_rs = _unmanaged(steps, terms)
    ceiling_v, over_s = _ceiling(steps, terms)
    churn_v, calm = _churn(steps, terms)
    below_v = _max_sum_below(steps, dt)
    promised = terms.promised
    violations = [v for v in floor_v + unmanaged_v + ceiling_v + churn_v if v.kind in promised]
    if policy_named(terms.policy).divides_bounds:
        violations += below_v
    violations.sort(key=lambda v: v.t)
    return PromiseReport(
        terms=terms,
        violations=violations,
        floor_breach_seconds=floor_s,
        unmanaged_replica_seconds=unmanaged_rs,
        over_max_seconds=over_s,
        max_reversals=calm["max_reversals"],
        zero_flips=calm["zero_flips"],
        replica_writes=calm["replica_writes"],
        allowed_moves=calm["allowed_moves"],
    )


# --- episodes -----------------------------------------------------------------------------------------


@dataclass
class _Episode:
    """A run of steps in which a promise does not hold."""

    start: float
    clock: float = 0.0  # seconds that count towards the tolerance
    weight: float = 0.0  # the figure's integral over the episode
    worst: tuple[float, str] = (float("-inf"), "")  # (how bad, what it looked like) at the worst step
    end: float = 0.0
    marks: list[tuple[int, float]] = field(default_factory=list)  # (step index, clock after it)

    def add(self, t: float, dt: float, clock: bool, weight: float, badness: float, what: str) -> None:
        self.clock += dt if clock else 0.0
        self.weight += weight
        self.end = t + dt
        if badness > self.worst[0]:
            self.worst = (badness, what)


Probe = Callable[["StepSample"], "tuple[float, str] | None"]
"""One step: None when the promise holds, else (how bad, a description of the step)."""


def _episodes(
    steps: Sequence[StepSample],
    dt: float,
    probe: Probe,
    paused: Sequence[bool] = (),
    restarts: Sequence[bool] = (),
) -> Iterator[_Episode]:
    """Episodes of a promise measured on the whole fleet (controller-down steps are not measured). A step
    marked in ``paused`` belongs to its episode but does not count towards the tolerance; one marked in
    ``restarts`` ends the open episode and begins a new one (a new fault, owed its own allowance)."""
    episode: _Episode | None = None
    for i, s in enumerate(steps):
        found = probe(s) if s.controller_up else None
        if found is None or (episode is not None and restarts and restarts[i]):
            if episode is not None:
                yield episode
            episode = None
        if found is None:
            continue
        if episode is None:
            episode = _Episode(start=s.t)
        episode.add(s.t, dt, not (paused and paused[i]), dt, found[0], found[1])
        episode.marks.append((i, episode.clock))
    if episode is not None:
        yield episode


def _breached(episode: _Episode, tolerance: float) -> bool:
    return episode.clock > tolerance + _EPS


def _fleet_breaches(
    steps: Sequence[StepSample],
    dt: float,
    probe: Probe,
    kind: str,
    tolerance: float,
    what: str,
    why: str,
    paused: Sequence[bool] = (),
    restarts: Sequence[bool] = (),
    breached: Callable[[_Episode, float], bool] = _breached,
) -> tuple[list[Violation], float]:
    """One violation per episode of a fleet-wide promise that outlasts ``tolerance``, and the seconds
    (episode weights) they add up to. ``what`` completes "... for Ns from t=...", ``why`` the allowance.
    ``breached`` judges an episode (by default: its clock outlasts the tolerance)."""
    violations, seconds = [], 0.0
    for ep in _episodes(steps, dt, probe, paused, restarts):
        if breached(ep, tolerance):
            seconds += ep.weight
            violations.append(
                Violation(
                    ep.start,
                    kind,
                    f"{ep.worst[1]}; {what} for {ep.clock:.0f}s from t={ep.start:.0f}s "
                    f"(allowed {tolerance:.0f}s: {why})",
                )
            )
    return violations, seconds


# --- 1. floor -----------------------------------------------------------------------------------------


def _eligible(c: ClusterSample) -> bool:
    return c.selected and c.workload and not c.down


def _firm(c: ClusterSample) -> int:
    """The replicas a cluster can run now: its capacity, capped by its quota."""
    return c.capacity if c.quota_pods is None else min(c.capacity, c.quota_pods)


def _lost_what_it_ran(before: ClusterSample, now: ClusterSample) -> bool:
    """The replicas a reachable cluster ran stopped counting for the floor through no act of the
    controller and no outage: its firm room fell below them (pods evicted), or the user took the cluster
    out of the selection (or its workload away) while it ran them."""
    ran = before.ready + before.starting
    if not _eligible(before) or ran == 0 or now.down:
        return False
    return not _eligible(now) or _firm(now) < ran


def _running_lost(steps: Sequence[StepSample]) -> list[bool]:
    """Per step: some cluster lost what it ran (``_lost_what_it_ran``). Such a loss is a change of its
    own: no planner can win those replicas back elsewhere sooner than the floor's allowance, whatever
    the floor was waiting for before. Idle nodes a node autoscaler removes evict nothing and do not
    count, and an outage has its failover grace instead."""
    lost = [False] * len(steps)
    for i in range(1, len(steps)):
        before, now = steps[i - 1].clusters, steps[i].clusters
        lost[i] = any(name in before and _lost_what_it_ran(before[name], c) for name, c in now.items())
    return lost


def _floor(steps: Sequence[StepSample], terms: PromiseTerms) -> tuple[list[Violation], float]:
    """Below min(F.min, the room of the eligible clusters) for longer than the grace. The room counts an
    elastic cluster's nodes still to come; then the autoscaler's look (one step) and the slowest node
    group's provisioning time are added to the tolerance (nodes that arrive turn elastic room into room
    there now, one look and one provisioning later). A
    loss of room that evicts running replicas, or a cluster taken out of the selection while it runs
    them, starts the allowance again."""

    def probe(s: StepSample) -> tuple[float, str] | None:
        eligible = {n: c for n, c in sorted(s.clusters.items()) if _eligible(c)}
        firm = sum(_firm(c) for c in eligible.values())
        elastic = sum(c.elastic_room for c in eligible.values())
        need, have = _need_and_have(s)
        if have >= need:
            return None
        per = ", ".join(f"{n} {c.ready + c.starting}/{c.replicas}" for n, c in eligible.items()) or "none"
        room = f"capacity {firm}" + (f" + elastic room {elastic}" if elastic else "")
        what = (
            f"{have} scheduled replicas below the floor {need} = min(F.min {s.fhpa_min}, "
            f"{room}) at t={s.t:.0f}s (reachable selected clusters, scheduled/replicas: {per})"
        )
        return float(need - have), what

    grows = [c.provision_s for s in steps for c in s.clusters.values() if c.elastic_room]
    # the node autoscaler sees pending pods at its next look (one step here), and the nodes it then
    # asks for are Ready a provisioning time later: a node group of 0 s still takes that look
    provision = max(grows) + terms.step_s if grows else 0.0
    why = "failover grace + one pass" + (" + the autoscaler's look + node provisioning" if grows else "")
    paused = _within_grown_grace(steps, terms.failover_grace_s)
    if any(paused):
        why += "; a flapper's grown grace not counted"
    allowed = terms.floor_tolerance_s + provision
    restarts = _running_lost(steps)
    out = _out_of_reach(steps)

    def breached(ep: _Episode, tolerance: float) -> bool:
        return _owed_past_allowance(
            [(i, *_need_and_have(steps[i]), clock, out[i]) for i, clock in ep.marks],
            tolerance,
        )

    return _fleet_breaches(
        steps, terms.step_s, probe, FLOOR, allowed, "below the floor", why, paused, restarts, breached
    )


def _need_and_have(s: StepSample) -> tuple[int, int]:
    """The floor at a step, min(F.min, the eligible clusters' firm and elastic room), and the replicas
    they schedule (Ready or starting)."""
    eligible = [c for c in s.clusters.values() if _eligible(c)]
    room = sum(_firm(c) + c.elastic_room for c in eligible)
    return min(s.fhpa_min, room), sum(c.ready + c.starting for c in eligible)


Spell = tuple[int, int]
"""An outage still on at a step: (the step it began at, the replicas its cluster ran just before)."""


def _out_of_reach(steps: Sequence[StepSample]) -> list[tuple[Spell, ...]]:
    """Per step: the outages still on of the clusters selected with the workload. An outage is a fault
    of its own: what it takes from the floor is owed one allowance after it began, while it lasts."""
    spells: dict[str, Spell] = {}
    result: list[tuple[Spell, ...]] = []
    for i, s in enumerate(steps):
        before = steps[i - 1].clusters if i else {}
        for n, c in s.clusters.items():
            if not c.down:
                spells.pop(n, None)
            elif n not in spells and n in before and _eligible(before[n]):
                spells[n] = (i, before[n].ready + before[n].starting)
        result.append(
            tuple(
                spell
                for n, spell in sorted(spells.items())
                if s.clusters[n].selected and s.clusters[n].workload
            )
        )
    return result


Mark = tuple[int, int, int, float, tuple[Spell, ...]]
"""A step of a floor episode: (its index, need, have, the episode clock after it, outages still on)."""


def _owed_past_allowance(marks: Sequence[Mark], tolerance: float) -> bool:
    """Whether a floor episode breaches: at some step the scheduled replicas are below a level the floor
    has asked for, without a break, for longer than the tolerance.

    A floor that rises within an episode owes the rise its own allowance: the replicas F.min asks for
    at t=90 s cannot be scheduled sooner than replicas asked for at t=0 (elastic room still needs the
    autoscaler's look and a provisioning time). The level owed at a step is therefore the lowest need
    since the latest step the allowance has run out for (the owed-since step); with a need that never
    rises this is the episode's clock against the tolerance, as for the other promises. In the same
    way, the replicas of an outage that began after the owed-since step and still lasts are not owed
    yet: they count as had. Once the cluster answers they count as what it runs, and nothing of an
    outage that ended is credited, so a blip never pays for what was owed before it."""
    before = [0.0] + [m[3] for m in marks[:-1]]  # the clock when each step began
    window: deque[int] = deque()  # steps from the owed-since step on, their needs increasing
    start = 0  # the earliest step that can still be the owed-since step
    for k, (_, need, have, clock, spells) in enumerate(marks):
        while window and marks[window[-1]][1] >= need:
            window.pop()
        window.append(k)
        # the owed-since step is the latest j whose allowance has run out by this step's end
        while start + 1 <= k and clock - before[start + 1] > tolerance + _EPS:
            start += 1
        if clock - before[start] <= tolerance + _EPS:
            continue
        while window[0] < start:
            window.popleft()
        since = marks[start][0]
        credit = sum(ran for began, ran in spells if began > since)
        if have + credit < marks[window[0]][1]:
            return True
    return False


def _within_grown_grace(steps: Sequence[StepSample], flag_grace_s: float) -> list[bool]:
    """Per step: an unreachable cluster that would be eligible is held past the flag's grace but within
    the grace its failovers have grown."""
    return [
        any(flag_grace_s - _EPS <= elapsed < grace - _EPS for elapsed, grace in spells.values())
        for spells in _unreachable_spells(steps, flag_grace_s)
    ]


def _unreachable_spells(
    steps: Sequence[StepSample], flag_grace_s: float
) -> list[dict[str, tuple[float, float]]]:
    """Per step, each unreachable cluster that would be eligible: (how long it has been unreachable, its
    grace). Its unreachable spell counts from the first step the controller was up to see it (a
    controller that was down sees it only on coming back), and a grace that shrank during the spell (an
    hour went by since its last failover) counts shrunk: the controller fails it over then. The grace
    recorded once it is failed over (longer again) is not its grace for this spell."""
    since: dict[str, float] = {}
    grace: dict[str, float] = {}
    out: list[dict[str, tuple[float, float]]] = []
    for s in steps:
        spells: dict[str, tuple[float, float]] = {}
        for name, c in s.clusters.items():
            if not (c.down and c.selected and c.workload):
                since.pop(name, None)
                grace.pop(name, None)
                continue
            if not s.controller_up and name not in since:
                continue
            recorded = flag_grace_s if c.failover_grace_s is None else c.failover_grace_s
            start = since.setdefault(name, s.t)
            grace[name] = min(grace.get(name, recorded), recorded)
            spells[name] = (s.t - start, grace[name])
        out.append(spells)
    return out


# --- 2. every replica under an HPA ---------------------------------------------------------------------


def _cluster_names(steps: Sequence[StepSample]) -> list[str]:
    return sorted({n for s in steps for n in s.clusters})


def _unmanaged_now(s: StepSample, name: str, was_selected: bool) -> bool:
    """Replicas with no HPA in a reachable cluster that is selected, or was reachable and selected at a
    step the controller ran earlier in the run (one that left the selection must be drained, not
    abandoned with its replicas running; one de-selected before the controller ever reached it was never
    its to drain)."""
    c = s.clusters.get(name)
    return (
        c is not None
        and s.controller_up
        and (c.selected or was_selected)
        and not c.down
        and c.replicas > 0
        and c.hpa_max is None
        and not c.foreign_hpa
    )


def _unmanaged(steps: Sequence[StepSample], terms: PromiseTerms) -> tuple[list[Violation], float]:
    dt, period = terms.step_s, terms.unmanaged_tolerance_s
    violations, replica_seconds = [], 0.0

    def close(name: str, ep: _Episode | None, drained_s: float) -> None:
        nonlocal replica_seconds
        if ep is None or not _breached(ep, period):
            return
        replica_seconds += ep.weight
        drain = f"; {drained_s:.0f}s of it a drain the controller wrote" if drained_s else ""
        violations.append(
            Violation(
                ep.start,
                UNMANAGED,
                f"{name}: {ep.worst[1]} with no member HPA for {ep.clock:.0f}s from t={ep.start:.0f}s"
                f"{drain} (allowed {period:.0f}s: one optimization period)",
            )
        )

    for name in _cluster_names(steps):
        episode: _Episode | None = None
        drain_start: float | None = None
        drained_s = 0.0
        was_selected = False
        for s in steps:
            c = s.clusters.get(name)
            was_selected = was_selected or (c is not None and c.selected and not c.down and s.controller_up)
            if not _unmanaged_now(s, name, was_selected):
                close(name, episode, drained_s)
                episode, drain_start, drained_s = None, None, 0.0
                continue
            c = s.clusters[name]
            if episode is None:
                episode = _Episode(start=s.t)
            if drain_start is None and c.drained:
                drain_start = s.t
            draining = drain_start is not None and s.t < drain_start + period - _EPS
            drained_s += dt if draining else 0.0
            episode.add(
                s.t,
                dt,
                not draining,
                0.0 if draining else c.replicas * dt,
                c.replicas,
                f"{c.replicas} replicas running",
            )
        close(name, episode, drained_s)
    return violations, replica_seconds


# --- 3. ceiling ---------------------------------------------------------------------------------------


def _ceiling(steps: Sequence[StepSample], terms: PromiseTerms) -> tuple[list[Violation], float]:
    def probe(s: StepSample) -> tuple[float, str] | None:
        maxes = {n: c.hpa_max for n, c in sorted(s.clusters.items()) if not c.down and c.hpa_max is not None}
        total = sum(maxes.values())
        if total <= s.fhpa_max:
            return None
        listing = ", ".join(f"{n} {m}" for n, m in maxes.items())
        return float(total - s.fhpa_max), (
            f"reachable member maxes sum to {total} > F.max {s.fhpa_max} at t={s.t:.0f}s ({listing})"
        )

    return _fleet_breaches(
        steps, terms.step_s, probe, CEILING, terms.ceiling_tolerance_s, "above F.max", "one pass"
    )


def _max_sum_below(steps: Sequence[StepSample], dt: float) -> list[Violation]:
    def probe(s: StepSample) -> tuple[float, str] | None:
        maxes = {n: c.hpa_max for n, c in sorted(s.clusters.items()) if c.hpa_max is not None}
        total = sum(maxes.values())
        if total >= s.fhpa_max:
            return None
        listing = ", ".join(f"{n} {m}" for n, m in maxes.items()) or "no member HPA"
        return float(s.fhpa_max - total), (
            f"member maxes sum to {total} < F.max {s.fhpa_max} at t={s.t:.0f}s ({listing})"
        )

    return _fleet_breaches(steps, dt, probe, MAX_SUM_BELOW, dt, "below F.max", "one pass")[0]


# --- 4. calm ------------------------------------------------------------------------------------------


def is_flat(demand: Sequence[float]) -> bool:
    """Flat demand: max - min at most FLAT_BAND of max (all zero is flat)."""
    high, low = max(demand), min(demand)
    return high - low <= FLAT_BAND * high + _EPS


@dataclass(frozen=True)
class _Counted:
    """One counted event of a cluster: a reversal, a 0 <-> running flip or a replica write. Demand must
    be flat from ``since`` (for a reversal, the move it reverses) to the last event of a window for the
    events of that window to count."""

    at: int  # the step of the event
    since: int


@dataclass(frozen=True)
class _Change:
    """A change of the candidate set at step ``at``; the moves it allows happen by step ``until``.
    ``members`` are the clusters that joined or left the set with it."""

    at: int
    until: int
    members: frozenset[str] = frozenset()


Events = Callable[[Sequence[StepSample], str, Sequence[_Change]], list[_Counted]]


@dataclass(frozen=True)
class _Measure:
    """One of the calm promise's counts: which events, and how many an hour of flat demand allows."""

    what: str  # completes "{cluster}: {what} N times from ..."
    limit: int
    figure: str  # its key in PromiseReport.figures()
    events: Events


def _max_of(s: StepSample, name: str) -> int:
    c = s.clusters.get(name)
    return (c.hpa_max or 0) if c is not None else 0


def _candidates(
    steps: Sequence[StepSample], spells: Sequence[dict[str, tuple[float, float]]]
) -> list[frozenset[str]]:
    """Per step, the candidate set as the controller has it: the eligible clusters and those unreachable
    within their grace (held, not yet failed over). A blip within the grace changes nothing. Only a
    cluster the controller has reached since it was selected can be held: one unreachable from the
    start was never planned, so the pass that first reaches it adds it to the candidates."""
    out = []
    reached: set[str] = set()
    for s, spell in zip(steps, spells, strict=True):
        for n, c in s.clusters.items():
            if not (c.selected and c.workload):
                reached.discard(n)
            elif s.controller_up and not c.down:
                reached.add(n)
        held = {n for n, (elapsed, grace) in spell.items() if elapsed < grace - _EPS and n in reached}
        out.append(frozenset(n for n, c in s.clusters.items() if _eligible(c)) | held)
    return out


def _changes(steps: Sequence[StepSample], terms: PromiseTerms) -> list[_Change]:
    """Each change of the candidate set (a failover once the cluster's grace is over, a rejoin after one,
    a selection or a de-selection) and the end of its settle time: the controller answers it on that pass
    and the next period optimization reshapes what that left, so one pass plus one optimization period,
    counted on steps the controller ran. A failover's moves start with its outage: what the controller
    lent while the cluster was held belongs to the same change."""
    spells = _unreachable_spells(steps, terms.failover_grace_s)
    sets = _candidates(steps, spells)
    wait = terms.step_s + terms.optimization_period_s
    out: list[_Change] = []
    for i in range(1, len(steps)):
        if sets[i] == sets[i - 1]:
            continue
        held = [spells[i - 1][n][0] for n in sets[i - 1] - sets[i] if n in spells[i - 1]]
        began = steps[i - 1].t - max(held) if held else steps[i].t  # a failover: when its outage began
        at = next(j for j in range(i + 1) if steps[j].t >= began - _EPS)
        out.append(_Change(at, _settled_by(steps, i, wait, terms.step_s), sets[i] ^ sets[i - 1]))
    return out


def _settled_by(steps: Sequence[StepSample], start: int, seconds: float, dt: float) -> int:
    """The last step within ``seconds`` of the controller's time from step ``start`` (steps it was down
    do not count: it answers a change only when it runs)."""
    ran, last = 0.0, start
    for j in range(start, len(steps)):
        if ran > seconds + _EPS:
            break
        last = j
        ran += dt if steps[j].controller_up else 0.0
    return last


def _moves(steps: Sequence[StepSample], name: str) -> list[tuple[int, int]]:
    """(step, direction) of each move of the cluster's max."""
    out: list[tuple[int, int]] = []
    for i in range(1, len(steps)):
        before, now = _max_of(steps[i - 1], name), _max_of(steps[i], name)
        if now != before:
            out.append((i, 1 if now > before else -1))
    return out


Tie = Callable[[_Change, int], bool]


def _allowed(
    moves: Sequence[tuple[int, int]], changes: Sequence[_Change], tied: Tie | None = None
) -> set[int]:
    """The steps of the moves a change of the candidate set allows: one in each direction per change,
    within its settle time, the latest change first where settle times overlap; with ``tied``, only
    for the changes it says the cluster takes part in, in that direction."""
    used: set[tuple[int, int]] = set()  # (change, direction)
    allowed: set[int] = set()
    for at, direction in moves:
        for k in range(len(changes) - 1, -1, -1):
            c = changes[k]
            if c.at <= at <= c.until and (k, direction) not in used and (tied is None or tied(c, direction)):
                used.add((k, direction))
                allowed.add(at)
                break
    return allowed


def _follows_max(steps: Sequence[StepSample], name: str) -> Tie:
    """Does the cluster take part in a change, in a direction: it joined or left the candidate set with
    it, or its max moved that way within the change's settle time? Replicas follow the max: a cluster
    whose max stayed put has no cause to start, drain or rescale because another cluster failed over."""
    moves = _moves(steps, name)

    def tied(change: _Change, direction: int) -> bool:
        return name in change.members or any(
            change.at <= at <= change.until and d == direction for at, d in moves
        )

    return tied


def _reversals(steps: Sequence[StepSample], name: str, changes: Sequence[_Change]) -> list[_Counted]:
    """Moves of the cluster's max against the way it moved last, but for those a candidate change allows."""
    moves = _moves(steps, name)
    allowed = _allowed(moves, changes)
    return [
        _Counted(at, last_at)
        for (last_at, last_direction), (at, direction) in pairwise(moves)
        if direction != last_direction and at not in allowed
    ]


def _flips(steps: Sequence[StepSample], name: str, changes: Sequence[_Change]) -> list[_Counted]:
    """Steps at which the cluster's workload went from 0 replicas to running, or back, but for those a
    change of the candidate set allows: its max moved with the change, and its replicas follow the max
    (a stand-in started at a failover and drained at the rejoin is one trip the fault made)."""
    switches: list[tuple[int, int]] = []
    previous: bool | None = None
    for i, s in enumerate(steps):
        c = s.clusters.get(name)
        running = c is not None and c.replicas > 0
        if previous is not None and running != previous:
            switches.append((i, 1 if running else -1))
        previous = running
    allowed = _allowed(switches, changes, _follows_max(steps, name))
    return [_Counted(i, i) for i, _ in switches if i not in allowed]


def _replica_writes(steps: Sequence[StepSample], name: str, changes: Sequence[_Change]) -> list[_Counted]:
    """Steps at which the controller wrote the cluster's replicas, but for those a change of the candidate
    set allows, one each way (up or down) within its settle time: the load of a failed cluster moving
    to the others, or a rejoin that brings the fleet back under F.max."""
    writes = [
        (i, 1 if _replicas_of(s, name) > _replicas_of(steps[i - 1], name) else -1)
        for i, s in enumerate(steps)
        if f"scale/{name}" in s.actions and i > 0
    ]
    allowed = _allowed(writes, changes, _follows_max(steps, name))
    first = [_Counted(0, 0)] if steps and f"scale/{name}" in steps[0].actions else []
    return first + [_Counted(i, i) for i, _ in writes if i not in allowed]


CALM_MEASURES = (
    _Measure("member max reversed direction", CALM_MAX_REVERSALS, "max_reversals", _reversals),
    _Measure("workload switched between 0 and running", CALM_MAX_ZERO_FLIPS, "zero_flips", _flips),
    _Measure("controller wrote the replicas", CALM_MAX_REPLICA_WRITES, "replica_writes", _replica_writes),
)


def _churn(steps: Sequence[StepSample], terms: PromiseTerms) -> tuple[list[Violation], dict[str, int]]:
    """Every calm count, per cluster: violations, and the most events of each within a flat hour; and
    how many moves the changes of the candidate set allowed."""
    changes = _changes(steps, terms)
    violations: list[Violation] = []
    most: dict[str, int] = {}
    for m in CALM_MEASURES:
        found, most[m.figure] = _counted(steps, m, changes)
        violations += found
    names = _cluster_names(steps)
    most["allowed_moves"] = sum(len(_allowed(_moves(steps, n), changes)) for n in names)
    return violations, most


def _counted(
    steps: Sequence[StepSample], m: _Measure, changes: Sequence[_Change]
) -> tuple[list[Violation], int]:
    demand = [s.demand_rps for s in steps]
    violations: list[Violation] = []
    most = 0
    for name in _cluster_names(steps):
        events = m.events(steps, name, changes)
        episode: _ChurnEpisode | None = None
        for k, last in enumerate(events):
            first: int | None = None  # the earliest event of the flat window under an hour ending here
            for j in range(k, -1, -1):
                r = events[j]
                if steps[last.at].t - steps[r.at].t >= CALM_WINDOW_S - _EPS:
                    break
                if not is_flat(demand[r.since : last.at + 1]):
                    break
                first = j
            count = 0 if first is None else k - first + 1
            most = max(most, count)
            if first is None or count <= m.limit:
                if episode is not None:
                    violations.append(episode.violation(steps, name, events, m))
                episode = None
            elif episode is None:
                episode = _ChurnEpisode(first=first, last=k, worst=count)
            else:
                episode.last, episode.worst = k, max(episode.worst, count)
        if episode is not None:
            violations.append(episode.violation(steps, name, events, m))
    return violations, most


@dataclass
class _ChurnEpisode:
    """Events ``first``..``last`` of one cluster, each past the limit within its flat hour."""

    first: int
    last: int
    worst: int  # the most events within one hour of flat demand

    def violation(
        self, steps: Sequence[StepSample], name: str, events: list[_Counted], m: _Measure
    ) -> Violation:
        first, last = events[self.first], events[self.last]
        span = steps[max(first.since - 1, 0) : last.at + 1]
        demand = [s.demand_rps for s in steps[first.since : last.at + 1]]
        t0, t1 = steps[first.at].t, steps[last.at].t
        return Violation(
            t0,
            CHURN,
            f"{name}: {m.what} {self.last - self.first + 1} times from t={t0:.0f}s "
            f"to {t1:.0f}s of flat demand ({min(demand):.0f}-{max(demand):.0f} rps), at most {self.worst} "
            f"within an hour (allowed {m.limit}): max {_shown(span, name, _max_of)}, "
            f"replicas {_shown(span, name, _replicas_of)}",
        )


def _replicas_of(s: StepSample, name: str) -> int:
    c = s.clusters.get(name)
    return c.replicas if c is not None else 0


def _shown(span: Sequence[StepSample], name: str, value: Callable[[StepSample, str], int]) -> str:
    """The values a cluster went through over ``span``, repeats collapsed, the first eight."""
    values: list[int] = []
    for s in span:
        v = value(s, name)
        if not values or values[-1] != v:
            values.append(v)
    return "->".join(str(v) for v in values[:8]) + ("->..." if len(values) > 8 else "")
