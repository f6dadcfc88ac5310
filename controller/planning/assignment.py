"""The initial assignment (DESIGN §3): each candidate cluster's member-HPA min/max and its first replicas.

Runs on create, on a spec change and on a change of the candidate set. Pure: the same candidates in
any order give the same result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from controller.planning.observation import ClusterObservation
from controller.planning.policies import policy_of
from controller.planning.policy import available, split
from fhpa_api.models import FederatedHPA


@dataclass(frozen=True)
class Bounds:
    """A member HPA's minReplicas/maxReplicas; max 0 means the cluster gets no HPA."""

    min_replicas: int
    max_replicas: int

    @property
    def has_hpa(self) -> bool:
        return self.max_replicas > 0


def initial_assignment(
    fhpa: FederatedHPA,
    candidates: Sequence[ClusterObservation],
    flapped: Mapping[str, datetime] | None = None,
) -> dict[str, Bounds]:
    """Min/max per candidate cluster for ``fhpa``'s policy, with keep-what-runs and 1 <= min <= max.

    Clusters that get no share come back as Bounds(0, 0). ``flapped``: clusters failed over within the
    last hour and when they last were; their running replicas give way first when F.max cannot keep
    everything that runs (see keep_what_runs).
    """
    spec = fhpa.spec
    if not candidates:
        return {}
    if not policy_of(fhpa).divides_bounds:  # every cluster gets the federated bounds
        return {c.name: finalize_one(spec.effective_min, spec.max_replicas) for c in candidates}
    capacity = {c.name: available(c) for c in candidates}
    maxes = split(fhpa, spec.max_replicas, candidates, capacity)
    mins = split(fhpa, spec.effective_min, candidates, capacity)
    # what runs: pods that cannot be scheduled do not run, and keeping a max for them only keeps them
    # pending (the floor counts scheduled pods) while another cluster has room
    current = {c.name: max(c.current_replicas - c.pending_replicas, 0) for c in candidates}
    ready = {c.name: min(c.ready_replicas, current[c.name]) for c in candidates}
    maxes = keep_what_runs(maxes, current, flapped, ready)
    return finalize(mins, maxes, spec.effective_min, capacity)


def keep_what_runs(
    maxes: Mapping[str, int],
    current: Mapping[str, int],
    flapped: Mapping[str, datetime] | None = None,
    ready: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Raise maxes that a split put below running replicas, taking from the largest surplus.

    Clusters are served in name order, one replica at a time, each from the cluster with the most
    surplus (max - current) at that moment, ties by name. A running cluster the split gave max 0 first
    gets one replica of max (so that every running cluster keeps an HPA, DESIGN §4 promise 2), then is
    served like the others; a cluster that runs nothing keeps max 0 and gets no HPA.

    When no surplus is left (F.max is below what runs), a cluster in ``flapped`` (failed over within
    the hour, with the time of its last failover) gives way, down to max 0, to those that did not fail
    over or failed over earlier: the stand-in that took over keeps serving, and the flapper, drained,
    cannot take the floor down with it on its next blip (promises 1 and 4 both kept). It gives way to
    the stand-in's ``ready`` replicas only (default: what runs): a stand-in still starting serves
    nothing yet, and Ready pods that serve are not stopped for it (a short blip of a sole holder).
    What is still short stays capped, and a running cluster still at max 0 is drained by the planner.
    """
    result = _from_surplus(maxes, current)
    last = dict(flapped or {})
    serving = current if ready is None else ready
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


def _from_surplus(maxes: Mapping[str, int], current: Mapping[str, int]) -> dict[str, int]:
    """keep_what_runs's first part: only a surplus (max above what runs) is given."""
    result = dict(maxes)
    for name in sorted(result):
        if result[name] == 0 and current.get(name, 0) > 0:
            donor = _largest_surplus(result, current)
            if donor is None:
                break
            result[donor] -= 1
            result[name] += 1
    for name in sorted(result):
        while 0 < result[name] < current.get(name, 0):
            donor = _largest_surplus(result, current)
            if donor is None:
                return result
            result[donor] -= 1
            result[name] += 1
    return result


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


def finalize(
    mins: Mapping[str, int],
    maxes: Mapping[str, int],
    federated_min: int,
    capacity: Mapping[str, int | None] | None = None,
) -> dict[str, Bounds]:
    """Apply 1 <= min <= max per cluster, then keep the mins summing to at least F.min.

    Capping a min at its max (after keep-what-runs took max from a cluster) can leave the mins short of
    F.min; the shortfall is raised where a min is below its max, most room first, ties by name. A min
    is also never above what its cluster can hold (``capacity``, None: unknown): a min share on a full
    cluster only keeps pods pending while another has room, so it goes where there is room too. When
    the clusters cannot hold F.min at all, the mins stay short (the floor gives way, FloorHeld False).
    """
    maxes = _room_for_the_floor(mins, maxes, federated_min, capacity or {})
    ceiling = {n: min_ceiling(m, (capacity or {}).get(n)) for n, m in maxes.items()}
    bounds = {n: finalize_one(min(mins.get(n, 0), ceiling[n]), m) for n, m in maxes.items()}
    return raise_mins(bounds, federated_min, ceiling, capacity)


def _room_for_the_floor(
    mins: Mapping[str, int], maxes: Mapping[str, int], federated_min: int, capacity: Mapping[str, int | None]
) -> dict[str, int]:
    """Move max from clusters given more than they can hold to clusters with room, as far as the mins
    would otherwise fall short of F.min (DESIGN §4 promise 1 from the first pass; a split by weight
    knows no capacity). Nothing moves while the mins can reach F.min: the policy's split stands.

    Takers are first the clusters the split gave a share, then those it gave none (a StaticWeighted
    weight of 0) that have room: the floor outranks a weight of 0 when the weighted clusters cannot
    hold F.min (README, "Where the controller goes beyond DESIGN §4"). A donor gives up to what it
    cannot hold, down to max 0 when it can hold nothing (then it gets no HPA).
    """
    result = dict(maxes)
    holds = {n: _holds(m, capacity.get(n)) for n, m in result.items()}
    short = federated_min - sum(min(max(mins.get(n, 0), 1), holds[n]) for n, m in result.items() if m > 0)
    excess = {n: m - holds[n] for n, m in result.items() if m > holds[n]}
    shared = {
        n: c - result[n] for n, c in capacity.items() if n in result and c is not None and c > result[n] > 0
    }
    shared.update({n: short for n, c in capacity.items() if n in result and c is None and result[n] > 0})
    unshared = {n: short if c is None else c for n, c in capacity.items() if n in result and result[n] == 0}
    unshared = {n: r for n, r in unshared.items() if r > 0}
    for room in (shared, unshared):
        while short > 0 and excess and room:
            donor = min(excess, key=lambda n: (-excess[n], n))
            taker = min(room, key=lambda n: (-room[n], n))
            result[donor] -= 1
            result[taker] += 1
            short -= 1
            for table, name in ((excess, donor), (room, taker)):
                table[name] -= 1
                if table[name] <= 0:
                    del table[name]
    return result


def _holds(max_replicas: int, available: int | None) -> int:
    """What a cluster with this max can run of the workload (its max when its capacity is unknown)."""
    return max_replicas if available is None else min(max_replicas, max(available, 0))


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


def initial_replicas(bounds: Bounds, current: int, scaling_to_zero: bool) -> int | None:
    """The replicas to write when an assignment takes effect, or None when nothing is written.

    clamp(current, min, max); a cluster that had none gets min, or stays at 0 with scalingToZero.
    Current replicas inside [min, max] are never written.
    """
    if not bounds.has_hpa:
        return None
    if current == 0 and scaling_to_zero:
        return None
    target = min(max(current, bounds.min_replicas), bounds.max_replicas)
    return None if target == current else target
