"""The baselines `fhpa simulate --compare` runs next to the scenario's own FederatedHPA.

Both keep the scenario's fleet, load, outages and the FederatedHPA's bounds, metrics and behavior, and
change only how the bounds are spread, so the difference in the table is the policy's doing:
- ``static-split``: each cluster's own HPA with an equal share of min and max and no help afterwards
  (KubeFed v1 style): StaticWeighted with equal weights and ``scaleAssist: false``;
- ``duplicated``: every cluster's HPA gets the full min/max (Duplicated).
"""

from __future__ import annotations

import copy
from typing import Any

from simulator.scenario import Scenario

STATIC_SPLIT = "static-split"
DUPLICATED = "duplicated"


def static_split(raw_fhpa: dict[str, Any], clusters: list[str]) -> dict[str, Any]:
    """StaticWeighted with weight 1 for every cluster (an equal split) and no assistance."""
    raw = copy.deepcopy(raw_fhpa)
    spec = raw.setdefault("spec", {})
    spec["federatedHPAAssignment"] = {
        "federatedHPAAssignmentType": "StaticWeighted",
        "clusterAutoscalingPreference": [
            {"targetCluster": {"clusterNames": [name]}, "staticWeight": 1} for name in clusters
        ],
    }
    spec["scaleAssist"] = False
    spec.pop("scalingToZero", None)
    spec.pop("autoscaleMultiClusterDelay", None)
    return raw


def duplicated(raw_fhpa: dict[str, Any]) -> dict[str, Any]:
    raw = copy.deepcopy(raw_fhpa)
    spec = raw.setdefault("spec", {})
    spec["federatedHPAAssignment"] = {"federatedHPAAssignmentType": "Duplicated"}
    spec.pop("scalingToZero", None)
    spec.pop("autoscaleMultiClusterDelay", None)
    return raw


def baseline_scenarios(scenario: Scenario) -> list[tuple[str, Scenario]]:
    raw = scenario.file.federated_hpa
    names = [c.name for c in scenario.file.clusters]
    return [
        (STATIC_SPLIT, scenario.with_federated_hpa(static_split(raw, names), STATIC_SPLIT)),
        (DUPLICATED, scenario.with_federated_hpa(duplicated(raw), DUPLICATED)),
    ]
