"""Which clusters a ClusterAffinity selects, and which autoscaling preference applies to a cluster.

Karmada's ClusterAffinity semantics: every field that is set must match (clusterNames, exclude,
labelSelector, fieldSelector on provider/region/zone); an affinity with nothing set matches every
cluster. An operator this module does not know matches nothing, so a malformed object that slipped
past admission narrows the selection instead of widening it.
"""

from __future__ import annotations

from controller.planning.observation import ClusterObservation
from controller.planning.selectors import label_selector_matches, requirement_matches
from fhpa_api.models import (
    ClusterAffinity,
    ClusterAutoscalingPreference,
    FieldSelector,
)

FIELD_KEYS = ("provider", "region", "zone")


def field_selector_matches(selector: FieldSelector | None, cluster: ClusterObservation) -> bool:
    """Karmada's FieldSelector: requirements on the cluster's provider, region and zone."""
    if selector is None:
        return True
    fields = {"provider": cluster.provider, "region": cluster.region, "zone": cluster.zone}
    for req in selector.match_expressions or []:
        if req.key not in fields:
            return False
        if not requirement_matches(fields[req.key], req.operator, req.values or []):
            return False
    return True


def affinity_matches(affinity: ClusterAffinity | None, cluster: ClusterObservation) -> bool:
    """True when ``cluster`` is selected by ``affinity`` (None selects every cluster)."""
    if affinity is None:
        return True
    if affinity.cluster_names and cluster.name not in affinity.cluster_names:
        return False
    if affinity.exclude and cluster.name in affinity.exclude:
        return False
    if not label_selector_matches(affinity.label_selector, cluster.labels):
        return False
    return field_selector_matches(affinity.field_selector, cluster)


def preference_for(
    preferences: list[ClusterAutoscalingPreference], cluster: ClusterObservation
) -> ClusterAutoscalingPreference | None:
    """The first preference whose targetCluster matches: a cluster never mixes two entries."""
    return next((p for p in preferences if affinity_matches(p.target_cluster, cluster)), None)


def static_weight(preferences: list[ClusterAutoscalingPreference], cluster: ClusterObservation) -> int:
    """The cluster's staticWeight; no matching entry means weight 0 (no share)."""
    pref = preference_for(preferences, cluster)
    return pref.static_weight or 0 if pref is not None else 0


def priority(preferences: list[ClusterAutoscalingPreference], cluster: ClusterObservation) -> int:
    """The cluster's priority; no matching entry means priority 0."""
    pref = preference_for(preferences, cluster)
    return pref.priority or 0 if pref is not None else 0
