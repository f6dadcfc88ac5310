"""Aggregated: clusters filled by available capacity, largest first, each up to what it can hold."""

from __future__ import annotations

from controller.planning.firm_first import fill_firm_first
from controller.planning.policies.base import (
    Capacity,
    Clusters,
    InOrder,
    by_room,
    holders_of_their_room_first,
)
from fhpa_api.models import FederatedHPA


class Aggregated(InOrder):
    """Room decides the order (unknown first, as unlimited; firm room before elastic room), and the walk
    fills every firm room before any elastic one; a cluster already given all of its room keeps it in the
    walk over elastic rooms, so node groups losing idle nodes in turn do not turn that walk around. A
    full cluster is capped by the trigger, not spilled down the order, and metric shares weigh the
    clusters by room."""

    name = "Aggregated"
    elastic_first = True
    tiered = False
    shares_capped_by_room = True
    zero_wake_note = ""
    split_words = (
        "Aggregated: clusters are filled by available capacity, largest first, each up to what it can hold "
        "at assignment"
    )

    def preference_order(self, fhpa: FederatedHPA, clusters: Clusters) -> list[str]:
        return by_room(clusters)

    def split(self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity) -> dict[str, int]:
        order = self.preference_order(fhpa, clusters)
        shares, left = fill_firm_first(
            total, order, holders_of_their_room_first(clusters), clusters, capacity
        )
        if left and order:
            shares[order[0]] += left
        return shares

    def capped_split(
        self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity
    ) -> tuple[dict[str, int], int]:
        """Firm rooms first, in order, then elastic rooms, the clusters that hold all of theirs first: only
        the remainder is left."""
        order = self.preference_order(fhpa, clusters)
        return fill_firm_first(total, order, holders_of_their_room_first(clusters), clusters, capacity)

    def least_preferred(self, fhpa: FederatedHPA, clusters: Clusters) -> str:
        """The cluster running the fewest replicas; a tie goes to the least room (unknown counts as
        unlimited), then to the name that sorts last, so the most preferred cluster is the last to go."""
        rank = {name: i for i, name in enumerate(self.preference_order(fhpa, clusters))}
        return max(clusters, key=lambda c: (-c.current_replicas, rank[c.name])).name
