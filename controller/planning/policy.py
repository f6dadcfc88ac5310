"""How the FederatedHPA's assignment policy ranks clusters and shares out a number of replicas.

The initial assignment, the optimizations, failover and scaling to zero all ask the same questions
("who gets the next replica?", "who is the least preferred?"); each policy answers them in its own
module (``controller.planning.policies``), and these are the questions as the mechanics ask them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.planning.divide import fill
from controller.planning.firm_first import room_kinds
from controller.planning.observation import ClusterObservation
from controller.planning.policies import policy_of
from fhpa_api.models import FederatedHPA


def available(cluster: ClusterObservation) -> int | None:
    """What the cluster can hold of this workload; None when unknown (treated as unlimited)."""
    return cluster.available_replicas


def preference_order(fhpa: FederatedHPA, clusters: Sequence[ClusterObservation]) -> list[str]:
    """Cluster names, most preferred first, by the policy's own measure; ties by name.

    Prioritized: priority descending. Aggregated and DynamicWeighted: available descending (unknown
    first, as unlimited). StaticWeighted: weight descending.
    """
    return policy_of(fhpa).preference_order(fhpa, clusters)


def split(
    fhpa: FederatedHPA,
    total: int,
    clusters: Sequence[ClusterObservation],
    capacity: Mapping[str, int | None],
) -> dict[str, int]:
    """Share ``total`` among ``clusters`` as the policy does.

    Weighted policies divide by weight; Aggregated and Prioritized fill clusters in preference order up
    to ``capacity`` (None: unlimited), and what nobody holds goes to the most preferred.
    """
    if not clusters:
        return {}
    return policy_of(fhpa).split(fhpa, total, clusters, capacity)


def split_mins(
    fhpa: FederatedHPA,
    total: int,
    clusters: Sequence[ClusterObservation],
    capacity: Mapping[str, int | None],
) -> dict[str, int]:
    """Share F.min as :func:`split` does, except that a tiered policy (Prioritized) walks its order over
    the firm rooms before the elastic rooms (DESIGN §3 Step 1).

    A min is the floor's promise of replicas that run now. On elastic room its pods pend until a node
    has come, so a failover that put the lost replicas on a preferred cluster's nodes-to-come would
    leave the fleet below its floor for a node's provisioning while a lower tier had room at once. The
    max keeps the policy's order over firm + elastic room: the preferred cluster can still grow into
    its nodes as the load asks. The other policies already rank firm room first (Aggregated,
    DynamicWeighted) or divide by the user's weights (StaticWeighted)."""
    if not clusters or not policy_of(fhpa).tiered:
        return split(fhpa, total, clusters, capacity)
    firm, _ = room_kinds(clusters, capacity)
    shares, left = fill(total, preference_order(fhpa, clusters), firm)
    rest = {n: None if (cap := capacity.get(n)) is None else max(0, cap - shares[n]) for n in shares}
    grown = split(fhpa, left, clusters, rest) if left else {}
    return {n: shares[n] + grown.get(n, 0) for n in shares}


def capped_split(
    fhpa: FederatedHPA,
    total: int,
    clusters: Sequence[ClusterObservation],
    capacity: Mapping[str, int | None],
) -> tuple[dict[str, int], int]:
    """Share ``total`` as the policy does, with no share above its cluster's ``capacity`` (None: no cap).

    Returns the shares and the excess: what no cluster had room for (DESIGN §3 Capacity cap). Where
    the excess goes is the caller's call.
    """
    if not clusters:
        return {}, total
    return policy_of(fhpa).capped_split(fhpa, total, clusters, capacity)


def split_with_excess(
    fhpa: FederatedHPA,
    total: int,
    clusters: Sequence[ClusterObservation],
    capacity: Mapping[str, int | None],
) -> tuple[dict[str, int], int]:
    """:func:`capped_split`, with the excess on one cluster (:func:`excess_home`, DESIGN §3 The excess):
    one place where a cluster autoscaler sees it, and the shares still sum to ``total``. Also returns
    the excess so placed (the assignment records it)."""
    shares, excess = capped_split(fhpa, total, clusters, capacity)
    if excess and clusters:
        first = excess_home(fhpa, clusters)
        shares[first] = shares.get(first, 0) + excess
    return shares, excess


def excess_home(fhpa: FederatedHPA, clusters: Sequence[ClusterObservation]) -> str:
    """Where max that no cluster has room for goes: the first cluster in order of preference that can
    hold at least one replica, or the first of all when none can (DESIGN §3 The excess).

    A cluster that holds nothing would only get an HPA over pods that never run, and lose it again as
    soon as a cluster with room returns: each failover and rejoin would turn its max around.
    """
    order = preference_order(fhpa, clusters)
    room = {c.name: available(c) for c in clusters}
    return next((n for n in order if (r := room[n]) is None or r > 0), order[0])


def least_preferred(fhpa: FederatedHPA, clusters: Sequence[ClusterObservation]) -> str | None:
    """The cluster to send to zero first (DESIGN §4): smallest replicas for Aggregated, smallest weight,
    smallest available, or lowest priority; ties go to the name that sorts last."""
    if not clusters:
        return None
    return policy_of(fhpa).least_preferred(fhpa, clusters)
