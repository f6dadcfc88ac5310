"""DynamicWeighted: F.min and F.max divided by the replicas each cluster can hold at assignment."""

from __future__ import annotations

from controller.planning.divide import divide
from controller.planning.firm_first import divide_firm_first
from controller.planning.observation import ClusterObservation
from controller.planning.policies.base import ByWeight, Capacity, Clusters, by_room, dynamic_weight
from fhpa_api.models import FederatedHPA


class DynamicWeighted(ByWeight):
    """The weight is the cluster's room (unknown: room for all of F.max), for the split and for metric
    shares alike. The split divides by firm room first, each share up to it, and only what firm room
    cannot hold by elastic room: nodes are not bought while firm room elsewhere is free."""

    name = "DynamicWeighted"
    elastic_first = True
    reads_capacity = True
    split_words = (
        "DynamicWeighted: F.min and F.max are divided by the replicas each cluster could hold at assignment"
    )

    def weight(self, fhpa: FederatedHPA, cluster: ClusterObservation) -> int:
        return dynamic_weight(fhpa, cluster)

    def preference_order(self, fhpa: FederatedHPA, clusters: Clusters) -> list[str]:
        """More room first, firm before elastic, unknown room before any number (the weight counts
        unknown as F.max only so that it divides)."""
        return by_room(clusters)

    def split(self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity) -> dict[str, int]:
        """Firm room first, then elastic; what neither holds is divided by room as a whole."""
        shares, left = divide_firm_first(total, clusters, capacity, fhpa.spec.max_replicas)
        rest = divide(left, {c.name: self.weight(fhpa, c) for c in clusters})
        return {c.name: shares.get(c.name, 0) + rest.get(c.name, 0) for c in clusters}

    def capped_split(
        self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity
    ) -> tuple[dict[str, int], int]:
        return divide_firm_first(total, clusters, capacity, fhpa.spec.max_replicas)
