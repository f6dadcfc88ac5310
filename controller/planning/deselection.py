"""A cluster that leaves the selection (its labels or the clusterAffinity changed) while it runs replicas.

Its member HPA goes with its share of the bounds (the split now runs over the clusters still selected),
but its replicas would keep running and serving with nothing to scale them (DESIGN §4, promise 2). So it
is drained as a cluster the split gives max 0 is, gently: on the first pass its replicas are handed to
the selected clusters (each raised within its max and its room, by its headroom), and once they are up
(every selected cluster's pods Ready) or one optimization period has passed, it is written to 0. A
Warning says so, and its status row (state ``Deselected``) stays until it runs none, so that a restarted
controller finishes the drain and ``kubectl get`` shows where the replicas went.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from controller.planning.fleet import Fleet, Slot
from controller.planning.observation import ClusterObservation
from fhpa_api.models import ClusterStatus

DESELECTED = "Deselected"
REASON = "ClusterDeselected"


@dataclass(frozen=True)
class Deselected:
    """A de-selected cluster still running replicas, and when its replicas were handed over."""

    cluster: ClusterObservation
    handed_at: datetime
    drain: bool  # written to 0 by this pass


def deselected_clusters(
    registered: list[ClusterObservation],
    selected: list[ClusterObservation],
    rows: Mapping[str, ClusterStatus],
) -> list[ClusterObservation]:
    """Reachable clusters outside the selection that were in it when the controller last looked (they
    have a status row: selected then, or draining since) and still run replicas."""
    chosen = {o.name for o in selected}
    return [
        o
        for o in registered
        if o.name not in chosen
        and o.healthy
        and o.workload_found
        and o.current_replicas > 0
        and o.name in rows
    ]


def drain(
    fleet: Fleet, clusters: list[ClusterObservation], rows: Mapping[str, ClusterStatus], wait_seconds: float
) -> list[Deselected]:
    """Hand each new de-selected cluster's replicas to the selected ones, and drain those handed over
    once the selected clusters run them (or ``wait_seconds`` passed): what this pass decides for each."""
    decided: list[Deselected] = []
    for cluster in clusters:
        row = rows[cluster.name]
        if row.state != DESELECTED or row.drained_at is None:
            takers = _hand_over(fleet, cluster.current_replicas)
            fleet.event(
                REASON,
                f"{cluster.name}: no longer selected by the clusterAffinity, with {cluster.current_replicas} "
                f"replicas running and its member HPA removed: "
                + (f"handed to {', '.join(takers)}; " if takers else "no selected cluster can take them; ")
                + "it is drained to 0 once they run there",
                warning=True,
            )
            decided.append(Deselected(cluster, fleet.now, drain=not takers))
            continue
        waited = (fleet.now - row.drained_at).total_seconds() >= wait_seconds
        decided.append(Deselected(cluster, row.drained_at, drain=waited or _taken_up(fleet)))
    return decided


def _hand_over(fleet: Fleet, replicas: int) -> list[str]:
    """Raise the selected clusters by ``replicas`` in all, each by its share of the headroom (max, and its
    room where known, minus what it runs), most headroom first; the names of those raised."""
    room = {s.name: _headroom(s) for s in fleet.ordered()}
    total = sum(room.values())
    if total <= 0:
        return []
    give = min(replicas, total)
    shares = {n: give * r // total for n, r in room.items()}
    left = give - sum(shares.values())
    for name in sorted(room, key=lambda n: (-(room[n] - shares[n]), n)):
        if left <= 0:
            break
        if shares[name] < room[name]:
            shares[name] += 1
            left -= 1
    for name, extra in shares.items():
        if extra > 0:
            slot = fleet.slots[name]
            fleet.write_replicas(slot, slot.current + extra, "replicas of a de-selected cluster handed over")
    return sorted(n for n, extra in shares.items() if extra > 0)


def _headroom(slot: Slot) -> int:
    if not slot.can_receive or not slot.cluster.workload_found or slot.current <= 0:
        return 0
    top = slot.max_replicas
    if slot.cluster.available_replicas is not None:  # what the cluster can hold of this workload
        top = min(top, slot.cluster.available_replicas)
    return max(top - slot.current, 0)


def _taken_up(fleet: Fleet) -> bool:
    """Every selected cluster runs what it was asked for, Ready: the handed replicas serve there."""
    return all(s.cluster.ready_replicas >= s.cluster.current_replicas for s in fleet.slots.values())
