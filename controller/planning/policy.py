"""How each assignment policy ranks and weights clusters, and how it shares out a number of replicas.

The initial assignment, the optimizations, failover and scaling to zero all ask the same questions
("who gets the next replica?", "who is the least preferred?"), so the answers live here once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.planning.affinity import priority, static_weight
from controller.planning.divide import divide, greedy_fill
from controller.planning.observation import ClusterObservation
from fhpa_api.models import FederatedHPA

DUPLICATED = "Duplicated"
STATIC_WEIGHTED = "StaticWeighted"
DYNAMIC_WEIGHTED = "DynamicWeighted"
AGGREGATED = "Aggregated"
PRIORITIZED = "Prioritized"
ORDERED_POLICIES = (AGGREGATED, PRIORITIZED)


def available(cluster: ClusterObservation) -> int | None:
    """What the cluster can hold of this workload; None when unknown (treated as unlimited)."""
    return cluster.available_replicas


def dynamic_weight(fhpa: FederatedHPA, cluster: ClusterObservation) -> int:
    """DynamicWeighted's weight: the available replicas; unknown counts as room for all of F.max."""
    return cluster.available_or(fhpa.spec.max_replicas)


def weights(fhpa: FederatedHPA, clusters: Sequence[ClusterObservation]) -> dict[str, int]:
    """The weights of the weighted policies (StaticWeighted, DynamicWeighted)."""
    if fhpa.spec.assignment_type == STATIC_WEIGHTED:
        return {c.name: static_weight(fhpa.spec.preferences, c) for c in clusters}
    return {c.name: dynamic_weight(fhpa, c) for c in clusters}


def preference_order(fhpa: FederatedHPA, clusters: Sequence[ClusterObservation]) -> list[str]:
    """Cluster names, most preferred first, by the policy's own measure; ties by name.

    Prioritized: priority descending. Aggregated: available descending (unknown first, as unlimited).
    Weighted policies: weight descending.
    """
    policy = fhpa.spec.assignment_type
    if policy == PRIORITIZED:
        prefs = fhpa.spec.preferences
        return [c.name for c in sorted(clusters, key=lambda c: (-priority(prefs, c), c.name))]
    if policy == AGGREGATED:

        def room(c: ClusterObservation) -> tuple[int, int, str]:
            amount = available(c)
            return (0, 0, c.name) if amount is None else (1, -amount, c.name)

        return [c.name for c in sorted(clusters, key=room)]
    w = weights(fhpa, clusters)
    return sorted(w, key=lambda n: (-w[n], n))


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
    if fhpa.spec.assignment_type in ORDERED_POLICIES:
        return greedy_fill(total, preference_order(fhpa, clusters), capacity)
    return divide(total, weights(fhpa, clusters))


def least_preferred(fhpa: FederatedHPA, clusters: Sequence[ClusterObservation]) -> str | None:
    """The cluster to send to zero first (DESIGN §4): smallest replicas for Aggregated, smallest weight,
    smallest available, or lowest priority; ties go to the name that sorts last. Aggregated breaks a tie
    on replicas by the smallest available (unknown counts as unlimited), so its most preferred cluster
    is the last to go."""
    if not clusters:
        return None
    if fhpa.spec.assignment_type == AGGREGATED:
        order = preference_order(fhpa, clusters)
        rank = {name: i for i, name in enumerate(order)}  # most preferred first, ties by name
        return max(clusters, key=lambda c: (-c.current_replicas, rank[c.name])).name
    return preference_order(fhpa, clusters)[-1]
