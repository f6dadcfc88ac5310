"""Prioritized: clusters filled in priority order, one tier at a time."""

from __future__ import annotations

from controller.planning.affinity import priority
from controller.planning.observation import ClusterObservation
from controller.planning.policies.base import UNKNOWN, Clusters, InOrder, PreferenceView, holding
from fhpa_api.models import ClusterAutoscalingPreference, FederatedHPA


class Prioritized(InOrder):
    """Priority descending decides the order. The higher tiers run first: a full cluster spills down
    the order, scale-down drains the lowest tier first, and clusters at 0 wake one at a time. A metric
    share follows what each cluster runs, uncapped: the preferred cluster runs up to its max and the
    spill raises the next one."""

    name = "Prioritized"
    tiered = True
    shares_capped_by_room = False
    zero_wake_note = " (the highest-priority cluster at 0 first)"

    def preference_order(self, fhpa: FederatedHPA, clusters: Clusters) -> list[str]:
        prefs = fhpa.spec.preferences
        return [c.name for c in sorted(clusters, key=lambda c: (-priority(prefs, c), *holding(c), c.name))]

    def least_preferred(self, fhpa: FederatedHPA, clusters: Clusters) -> str:
        """The lowest priority (ties: the one holding least, then the name that sorts last)."""
        return self.preference_order(fhpa, clusters)[-1]

    def share_weight(self, fhpa: FederatedHPA, cluster: ClusterObservation, runs: int) -> int:
        return runs

    def explain_split(
        self, fhpa: FederatedHPA, view: PreferenceView, cluster: str, assigned_max: int | None
    ) -> list[str]:
        pref = view.preference(cluster)
        if pref == UNKNOWN:
            return [
                "Prioritized: its priority comes from a preference that selects by labels (not in status)"
            ]
        prio = pref.priority or 0 if isinstance(pref, ClusterAutoscalingPreference) else 0
        return [
            f"Prioritized: priority {prio}; clusters are filled in priority order, each up to what it can "
            "hold, and what is left goes to the highest priority"
        ]
