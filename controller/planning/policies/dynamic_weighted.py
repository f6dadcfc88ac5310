"""DynamicWeighted: F.min and F.max divided by the replicas each cluster can hold at assignment."""

from __future__ import annotations

from controller.planning.observation import ClusterObservation
from controller.planning.policies.base import ByWeight, Clusters, by_room, dynamic_weight
from fhpa_api.models import FederatedHPA


class DynamicWeighted(ByWeight):
    """The weight is the cluster's available replicas (unknown: room for all of F.max), for the split
    and for metric shares alike."""

    name = "DynamicWeighted"
    reads_capacity = True
    split_words = (
        "DynamicWeighted: F.min and F.max are divided by the replicas each cluster could hold at assignment"
    )

    def weight(self, fhpa: FederatedHPA, cluster: ClusterObservation) -> int:
        return dynamic_weight(fhpa, cluster)

    def preference_order(self, fhpa: FederatedHPA, clusters: Clusters) -> list[str]:
        """More room first, unknown room before any number (the weight counts unknown as F.max only so
        that it divides)."""
        return by_room(clusters)
