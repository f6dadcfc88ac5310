"""StaticWeighted: F.min and F.max divided by the weights the preferences give the clusters."""

from __future__ import annotations

from controller.planning.affinity import static_weight
from controller.planning.divide import divide
from controller.planning.observation import ClusterObservation
from controller.planning.policies.base import ByWeight, PreferenceView
from fhpa_api.models import FederatedHPA


class StaticWeighted(ByWeight):
    """The spec alone decides the split, so an explanation can show its numbers from status."""

    name = "StaticWeighted"
    elastic_first = True
    reads_capacity = False

    def weight(self, fhpa: FederatedHPA, cluster: ClusterObservation) -> int:
        return static_weight(fhpa.spec.preferences, cluster)

    def share_weight(self, fhpa: FederatedHPA, cluster: ClusterObservation, runs: int) -> int:
        return static_weight(fhpa.spec.preferences, cluster)

    def explain_split(
        self, fhpa: FederatedHPA, view: PreferenceView, cluster: str, assigned_max: int | None
    ) -> list[str]:
        spec = fhpa.spec
        weights = view.weights()
        if weights is None or cluster not in weights:
            return [
                "StaticWeighted: its weight comes from a preference that selects by labels (not in status)"
            ]
        total = sum(weights.values())
        max_share = divide(spec.max_replicas, weights)[cluster]
        min_share = divide(spec.effective_min, weights)[cluster]
        shown = ", ".join(f"{n} {w}" for n, w in sorted(weights.items()))
        line = (
            f"StaticWeighted: weight {weights[cluster]} of {total} ({shown}): F.max {spec.max_replicas} "
            f"divides to max {max_share}, F.min {spec.effective_min} to min {min_share}"
        )
        if min_share < 1 <= (assigned_max or 0):
            line += "; every member HPA has min >= 1"
        return [line]

    def split_max_from_spec(self, fhpa: FederatedHPA, view: PreferenceView, cluster: str) -> int | None:
        weights = view.weights()
        if weights is None or cluster not in weights:
            return None
        return divide(fhpa.spec.max_replicas, weights)[cluster]
