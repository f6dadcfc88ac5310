"""The assignment policies, one module each, and the registry from a policy's API name to it.

Everything that depends on the policy (the planner's mechanics, the status and Events, the explanation,
the simulator's promises and report) asks the FederatedHPA's policy here rather than comparing names.
"""

from __future__ import annotations

from controller.planning.policies.aggregated import Aggregated
from controller.planning.policies.base import AssignmentPolicy
from controller.planning.policies.duplicated import Duplicated
from controller.planning.policies.dynamic_weighted import DynamicWeighted
from controller.planning.policies.prioritized import Prioritized
from controller.planning.policies.static_weighted import StaticWeighted
from fhpa_api.models import FederatedHPA

STRATEGIES: dict[str, AssignmentPolicy] = {
    p.name: p for p in (Duplicated(), StaticWeighted(), DynamicWeighted(), Aggregated(), Prioritized())
}
"""Each policy by its ``federatedHPAAssignmentType``; a new policy adds its instance here."""

FALLBACK = "DynamicWeighted"
"""Admission refuses any other name; an object that got past it anyway is still planned, by room."""


def policy_named(name: str) -> AssignmentPolicy:
    """The policy called ``name`` in the API (an unknown name: :data:`FALLBACK`)."""
    return STRATEGIES.get(name) or STRATEGIES[FALLBACK]


def policy_of(fhpa: FederatedHPA) -> AssignmentPolicy:
    """The FederatedHPA's assignment policy."""
    return policy_named(fhpa.spec.assignment_type)
