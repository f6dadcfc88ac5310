"""Duplicated: every cluster gets the federated bounds, F.min..F.max, and nothing moves between them."""

from __future__ import annotations

from controller.planning.observation import ClusterObservation
from controller.planning.policies.base import ByWeight, PreferenceView, dynamic_weight
from fhpa_api.models import FederatedHPA


class Duplicated(ByWeight):
    """Nothing is divided, so the order and the split matter only where a mechanic that runs under
    any policy asks (a cluster still marked full by a policy this object had before): they follow the
    clusters' room, as DynamicWeighted's do. Every holder weighs the same in a metric share."""

    name = "Duplicated"
    divides_bounds = False
    reads_capacity = False

    def weight(self, fhpa: FederatedHPA, cluster: ClusterObservation) -> int:
        return dynamic_weight(fhpa, cluster)

    def share_weight(self, fhpa: FederatedHPA, cluster: ClusterObservation, runs: int) -> int:
        return 1

    def explain_split(
        self, fhpa: FederatedHPA, view: PreferenceView, cluster: str, assigned_max: int | None
    ) -> list[str]:
        spec = fhpa.spec
        return [
            f"Duplicated: every cluster gets the federated bounds, "
            f"min {spec.effective_min} max {spec.max_replicas}"
        ]
