"""The initial assignment (DESIGN §3): each candidate cluster's member-HPA min/max and its first replicas.

Runs on create, on a spec change and on a change of the candidate set. The seven steps of §3 run in
order, each a small function over plain maps keyed by cluster name; pure, so the same candidates in
any order give the same result.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from controller.planning.observation import ClusterObservation
from controller.planning.policies import policy_of
from controller.planning.policy import available, preference_order, split_mins, split_with_excess
from controller.planning.split_record import split_records
from fhpa_api.models import FederatedHPA, SplitStatus


@dataclass(frozen=True)
class Bounds:
    """A member HPA's minReplicas/maxReplicas; max 0 means the cluster gets no HPA."""

    min_replicas: int
    max_replicas: int

    @property
    def has_hpa(self) -> bool:
        return self.max_replicas > 0

    def clamp(self, replicas: int) -> int:
        return min(max(replicas, self.min_replicas), self.max_replicas)


@dataclass(frozen=True)
class Assignment:
    """The bounds of every candidate (Bounds(0, 0): no HPA), the first replicas of those with an HPA,
    the clusters at 0 that scalingToZero starts so that the running ones hold the floor, and what the
    split read and gave each candidate (none for a policy that does not divide)."""

    bounds: dict[str, Bounds]
    replicas: dict[str, int]
    started: frozenset[str] = frozenset()
    splits: Mapping[str, SplitStatus] = field(default_factory=dict)


@dataclass(frozen=True)
class Terms:
    """What §3 reads of each candidate: its room (None: unknown, unlimited), current and running replicas.

    A cluster runs what is scheduled (current - pending), and never more than its room: keeping a max
    for pods that cannot be scheduled only keeps them pending while another cluster has room. Pods
    waiting for the nodes a node autoscaler is adding are pending too, although the spill rules do not
    count them yet (``pending.as_counted`` moves them to ``pending_coming_replicas``): were they read
    as running, a rejoining cluster's Ready pods would give way to pods that have no node yet.
    """

    available: dict[str, int | None]
    current: dict[str, int]
    runs: dict[str, int]
    ready: dict[str, int]

    @classmethod
    def of(cls, candidates: Sequence[ClusterObservation]) -> Terms:
        room = {c.name: _non_negative(available(c)) for c in candidates}
        runs = {c.name: _holds(_scheduled(c), room[c.name]) for c in candidates}
        return cls(
            available=room,
            current={c.name: c.current_replicas for c in candidates},
            runs=runs,
            ready={c.name: min(c.ready_replicas, runs[c.name]) for c in candidates},
        )

    def room(self, name: str, max_replicas: int) -> int:
        """What a cluster with this max can hold."""
        return _holds(max_replicas, self.available[name])

    def floor(self, federated_min: int) -> int:
        """F: F.min, or the candidates' combined room when that is smaller."""
        if any(a is None for a in self.available.values()):
            return federated_min
        return min(federated_min, sum(a or 0 for a in self.available.values()))


def _scheduled(cluster: ClusterObservation) -> int:
    """Current minus every pending pod: those the spill rules count and those still waiting for nodes."""
    waiting = cluster.pending_coming_replicas
    return max(cluster.current_replicas - cluster.pending_replicas - waiting, 0)


def initial_assignment(
    fhpa: FederatedHPA,
    candidates: Sequence[ClusterObservation],
    flapped: Mapping[str, datetime] | None = None,
) -> Assignment:
    """Min/max and first replicas per candidate cluster for ``fhpa``'s policy (DESIGN §3).

    Clusters that get no share come back as Bounds(0, 0). ``flapped``: clusters failed over within the
    last hour and when they last were; their running replicas give way first when F.max cannot keep
    everything that runs (see keep_what_runs).
    """
    spec = fhpa.spec
    if not candidates:
        return Assignment({}, {})
    if not policy_of(fhpa).divides_bounds:  # every cluster gets the federated bounds
        return _duplicated(fhpa, candidates)
    terms = Terms.of(candidates)
    order = preference_order(fhpa, candidates)
    maxes, excess = split_with_excess(fhpa, spec.max_replicas, candidates, terms.available)
    min_shares = split_mins(fhpa, spec.effective_min, candidates, terms.available)
    splits = split_records(fhpa, candidates, terms.available, order, maxes, min_shares, excess)
    givers = list(reversed(order)) if policy_of(fhpa).tiered else None
    maxes = keep_what_runs(maxes, terms.runs, flapped, terms.ready, terms.current, givers)
    floor = terms.floor(spec.effective_min)
    maxes, mins = hold_the_floor(maxes, min_shares, terms, floor, order)
    started: set[str] = set()
    if spec.effective_scaling_to_zero:
        started = start_for_floor(mins, maxes, terms, floor, order)
        running = [n for n in mins if terms.current[n] > 0 or n in started]
        target = min(floor, sum(terms.room(n, maxes[n]) for n in running))
        mins = raise_held(mins, maxes, terms, target, running)
    bounds = {c.name: Bounds(mins.get(c.name, 0), maxes[c.name] if c.name in mins else 0) for c in candidates}
    replicas = {
        n: 0
        if _stays_at_zero(terms.current[n], n in started, spec.effective_scaling_to_zero)
        else b.clamp(terms.current[n])
        for n, b in bounds.items()
        if b.has_hpa
    }
    return Assignment(bounds, replicas, frozenset(started), splits)


def _duplicated(fhpa: FederatedHPA, candidates: Sequence[ClusterObservation]) -> Assignment:
    """Every candidate gets F.min..F.max, whatever its room: its min is its own floor, and the pods it has
    no room for pend in place, where a cluster autoscaler sees them (DESIGN §3 Duplicated)."""
    b = finalize_one(fhpa.spec.effective_min, fhpa.spec.max_replicas)
    return Assignment(
        {c.name: b for c in candidates}, {c.name: b.clamp(c.current_replicas) for c in candidates}
    )


def _stays_at_zero(current: int, started: bool, scaling_to_zero: bool) -> bool:
    """Step 7: under scalingToZero a cluster with no replicas stays at 0 unless the floor started it."""
    return scaling_to_zero and current == 0 and not started


def _non_negative(amount: int | None) -> int | None:
    return None if amount is None else max(amount, 0)


def _holds(count: int, room: int | None) -> int:
    return count if room is None else min(count, room)


def step_four_mins(min_shares: Mapping[str, int], maxes: Mapping[str, int], terms: Terms) -> dict[str, int]:
    """Step 4: each HPA's min is its share, at least 1, at most its max and what its cluster holds.

    A cluster with no room keeps min 1, a min that holds no replica (an HPA needs one)."""
    return {n: max(1, min(min_shares.get(n, 0), terms.room(n, m))) for n, m in maxes.items() if m > 0}


def held(mins: Mapping[str, int], terms: Terms, names: Collection[str] | None = None) -> int:
    """What the mins hold: each counted only as far as its cluster has room."""
    return sum(_holds(m, terms.available[n]) for n, m in mins.items() if names is None or n in names)


def hold_the_floor(
    maxes: Mapping[str, int], min_shares: Mapping[str, int], terms: Terms, floor: int, order: Sequence[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """Steps 4 and 5: the mins, and as long as they hold less than F, max moved to room and mins raised.

    5a moves one replica of max at a time, up to the shortfall, from the cluster with the most max
    above its room to the cluster earliest in order of preference whose max is under its room (one at
    max 0 included, which is how a cluster of weight 0 is reached last). 5b recomputes the mins, 5c
    raises them where there is room. What room cannot hold stays short: the floor yields to capacity.
    """
    result = dict(maxes)
    mins = step_four_mins(min_shares, result, terms)
    short = floor - held(mins, terms)
    if short <= 0:
        return result, mins
    for _ in range(short):
        donor, taker = _donor(result, terms), _taker(result, terms, order)
        if donor is None or taker is None:
            break
        result[donor] -= 1
        result[taker] += 1
    mins = step_four_mins(min_shares, result, terms)
    return result, raise_held(mins, result, terms, floor)


def _donor(maxes: Mapping[str, int], terms: Terms) -> str | None:
    gaps = {n: m - room for n, m in maxes.items() if (room := terms.available[n]) is not None and m > room}
    return min(gaps, key=lambda n: (-gaps[n], n)) if gaps else None


def _taker(maxes: Mapping[str, int], terms: Terms, order: Sequence[str]) -> str | None:
    return next(
        (n for n in order if (room := terms.available[n]) is None or maxes[n] < room),
        None,
    )


def raise_held(
    mins: Mapping[str, int],
    maxes: Mapping[str, int],
    terms: Terms,
    target: int,
    names: Collection[str] | None = None,
) -> dict[str, int]:
    """5c: raise mins (of ``names``, default all) where there is room, the largest room first, ties by
    name, until they hold ``target`` or no room is left."""
    result = dict(mins)
    pool = [n for n in result if names is None or n in names]
    short = target - held(result, terms, pool)
    while short > 0:
        room = {n: terms.room(n, maxes[n]) - result[n] for n in pool}
        room = {n: r for n, r in room.items() if r > 0}
        if not room:
            break
        name = min(room, key=lambda n: (-room[n], n))
        take = min(short, room[name])
        result[name] += take
        short -= take
    return result


def start_for_floor(
    mins: Mapping[str, int], maxes: Mapping[str, int], terms: Terms, floor: int, order: Sequence[str]
) -> set[str]:
    """Step 6: start clusters at 0, in order of preference, until the running ones can hold F.

    A cluster with no room is never started for this: all it could add is a pending pod."""
    running = {n for n in mins if terms.current[n] > 0}
    holding = sum(terms.room(n, maxes[n]) for n in running)
    started: set[str] = set()
    for name in order:
        if holding >= floor:
            break
        if name in mins and name not in running and terms.room(name, maxes[name]) >= 1:
            started.add(name)
            holding += terms.room(name, maxes[name])
    return started


def keep_what_runs(
    maxes: Mapping[str, int],
    runs: Mapping[str, int],
    flapped: Mapping[str, datetime] | None = None,
    ready: Mapping[str, int] | None = None,
    current: Mapping[str, int] | None = None,
    givers: Sequence[str] | None = None,
) -> dict[str, int]:
    """Steps 2 and 3: every replica under an HPA, then no max below what its cluster ``runs``.

    Step 2: a cluster with replicas (``current``, default what runs) that the split left at max 0 takes
    one replica of max from the largest surplus (max - runs), so that it keeps an HPA; with no surplus
    anywhere it stays at max 0 and the planner drains it. Step 3: clusters are served in name order,
    one replica at a time, each from the cluster with the most surplus at that moment, ties by name.

    When no surplus is left (F.max is below what runs), a cluster in ``flapped`` (failed over within
    the hour, with the time of its last failover) gives way, down to max 0, to those that did not fail
    over or failed over earlier: the stand-in that took over keeps serving, and the flapper, drained,
    cannot take the floor down with it on its next blip (promises 1 and 4 both kept). It gives way to
    the stand-in's ``ready`` replicas only (default: what runs): a stand-in still starting serves
    nothing yet, and Ready pods that serve are not stopped for it (a short blip of a sole holder).
    What is still short stays capped, and a running cluster still at max 0 is drained by the planner.

    ``givers``: the order in which clusters give up their surplus (the first with any gives), where the
    policy fills clusters one tier at a time; by default the largest surplus gives. A tiered split
    fills the preferred clusters first, so the least preferred gives: a cluster that rejoins keeps what
    it runs at the expense of the bottom of the order, as the optimization would place it, and the
    preferred clusters' maxes do not move for it (and back a period later).
    """
    result = _from_surplus(maxes, runs, runs if current is None else current, givers)
    last = dict(flapped or {})
    serving = runs if ready is None else ready
    for name in sorted(result):
        while result[name] < serving.get(name, 0):
            donors = [n for n in last if result.get(n, 0) > 0 and _yields_to(n, name, last)]
            if not donors:
                return result
            donor = min(donors, key=lambda n: (-result[n], n))
            result[donor] -= 1
            result[name] += 1
    return result


def _yields_to(donor: str, taker: str, last_failover: Mapping[str, datetime]) -> bool:
    """Does ``donor``'s running share give way to ``taker``'s? The later failover gives way first."""
    if donor == taker or donor not in last_failover:
        return False
    return taker not in last_failover or last_failover[taker] < last_failover[donor]


def _from_surplus(
    maxes: Mapping[str, int],
    runs: Mapping[str, int],
    current: Mapping[str, int],
    givers: Sequence[str] | None = None,
) -> dict[str, int]:
    """keep_what_runs's first part: only a surplus (max above what runs) is given."""
    result = dict(maxes)
    for name in sorted(result):
        if result[name] == 0 and current.get(name, 0) > 0:
            donor = _giver(result, runs, givers)
            if donor is None:
                break
            result[donor] -= 1
            result[name] += 1
    for name in sorted(result):
        while 0 < result[name] < runs.get(name, 0):
            donor = _giver(result, runs, givers)
            if donor is None:
                return result
            result[donor] -= 1
            result[name] += 1
    return result


def _giver(maxes: Mapping[str, int], runs: Mapping[str, int], givers: Sequence[str] | None) -> str | None:
    """The first of ``givers`` with a surplus (max above what runs) that keeps a max of its own, or the
    largest surplus: a tier is not left without an HPA to spare the order."""
    first = next((n for n in givers or [] if maxes.get(n, 0) > max(runs.get(n, 0), 1)), None)
    return first if first is not None else _largest_surplus(maxes, runs)


def _largest_surplus(maxes: Mapping[str, int], current: Mapping[str, int]) -> str | None:
    surplus = {n: m - current.get(n, 0) for n, m in maxes.items() if m > current.get(n, 0)}
    if not surplus:
        return None
    return min(surplus, key=lambda n: (-surplus[n], n))


def finalize_one(min_replicas: int, max_replicas: int) -> Bounds:
    """1 <= min <= max for one HPA; max 0 means no HPA."""
    if max_replicas <= 0:
        return Bounds(0, 0)
    return Bounds(min(max(min_replicas, 1), max_replicas), max_replicas)


def min_ceiling(max_replicas: int, available: int | None) -> int:
    """The highest min a cluster's HPA may get: its max, and no more than it can hold (at least 1)."""
    return max_replicas if available is None else min(max_replicas, max(available, 1))


def raise_mins(
    bounds: Mapping[str, Bounds],
    federated_min: int,
    ceiling: Mapping[str, int] | None = None,
    capacity: Mapping[str, int | None] | None = None,
) -> dict[str, Bounds]:
    """Raise mins (never past max, nor past ``ceiling``) until they sum to at least ``federated_min``
    or no room is left.

    A min counts only as far as its cluster can hold it (``capacity``, None: unknown): a min of 1 on a
    cluster that can hold nothing keeps no replica running, so the others' mins cover it (promise 1).
    """
    result = dict(bounds)
    top = {n: min(b.max_replicas, (ceiling or {}).get(n, b.max_replicas)) for n, b in result.items()}
    short = federated_min - sum(
        _held_min(b.min_replicas, (capacity or {}).get(n)) for n, b in result.items() if b.has_hpa
    )
    while short > 0:
        room = {n: top[n] - b.min_replicas for n, b in result.items() if b.has_hpa}
        room = {n: r for n, r in room.items() if r > 0}
        if not room:
            break
        name = min(room, key=lambda n: (-room[n], n))
        take = min(short, room[name])
        old = result[name]
        result[name] = Bounds(old.min_replicas + take, old.max_replicas)
        short -= take
    return result


def _held_min(min_replicas: int, available: int | None) -> int:
    return min_replicas if available is None else min(min_replicas, max(available, 0))
