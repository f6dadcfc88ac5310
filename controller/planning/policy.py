"""How the FederatedHPA's assignment policy ranks clusters and shares out a number of replicas.

The initial assignment, the optimizations, failover and scaling to zero all ask the same questions
("who gets the next replica?", "who is the least preferred?"); each policy answers them in its own
module (``controller.planning.policies``), and these are the questions as the mechanics ask them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
