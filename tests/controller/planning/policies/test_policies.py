"""The assignment policies' registry: every policy the API names has a strategy, and a new policy is
its own module plus its name in the API."""

from __future__ import annotations

from typing import get_args

import pytest

from controller.planning import policies
from controller.planning.policies import STRATEGIES, policy_named
from controller.planning.policies.static_weighted import StaticWeighted
from fhpa_api import models
from fhpa_api.models import ASSIGNMENT_TYPES, AssignmentType
from tests.support.planning_builders import bounds, fhpa, obs, run, writes

SIXTH = "StaticWeightedCopy"


class StaticWeightedCopy(StaticWeighted):
    """A sixth policy for the test: StaticWeighted's answers under another name."""

    name = SIXTH


def test_every_assignment_type_has_its_strategy() -> None:
    assert set(ASSIGNMENT_TYPES) == set(get_args(AssignmentType))
    assert set(STRATEGIES) == set(ASSIGNMENT_TYPES)
    assert all(strategy.name == name for name, strategy in STRATEGIES.items())


def test_an_unknown_name_is_planned_by_room() -> None:
    """Admission refuses it; an object that got past is planned as DynamicWeighted, as it always was."""
    assert policy_named("NoSuchPolicy") is STRATEGIES["DynamicWeighted"]
    fleet = [obs("a", 0, available=30), obs("b", 0, available=10)]
    assert bounds(run(fhpa("NoSuchPolicy", 4, 20), fleet)) == bounds(
        run(fhpa("DynamicWeighted", 4, 20), fleet)
    )


def test_a_sixth_policy_needs_only_its_module_and_the_enum(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sixth policy, planned end to end through ``plan()``.

    Its module is this test's :class:`StaticWeightedCopy`; the enum is ``fhpa_api.models.ASSIGNMENT_TYPES``
    (monkeypatched to include it; the ``AssignmentType`` Literal is for the type checker alone), and it is
    registered as ``controller.planning.policies`` registers the five (an entry in ``STRATEGIES``,
    monkeypatched here). No other module changes: the planner plans it exactly as StaticWeighted, weights
    and all, where an unregistered name would be planned by room.
    """
    fleet = [obs("a", 0, available=100), obs("b", 0, available=1), obs("c", 0)]
    weights = {"a": 1, "b": 3, "c": 0}
    static = run(fhpa("StaticWeighted", 4, 16, weights=weights), fleet)
    unregistered = run(fhpa(SIXTH, 4, 16, weights=weights), fleet)
    assert bounds(unregistered) != bounds(static)

    monkeypatch.setattr(models, "ASSIGNMENT_TYPES", (*ASSIGNMENT_TYPES, SIXTH))
    monkeypatch.setitem(policies.STRATEGIES, SIXTH, StaticWeightedCopy())
    assert set(STRATEGIES) == set(models.ASSIGNMENT_TYPES)
    sixth = run(fhpa(SIXTH, 4, 16, weights=weights), fleet)
    assert bounds(sixth) == bounds(static)
    assert writes(sixth) == writes(static)
    assert sixth.hpa_actions == static.hpa_actions
    assert sixth.status.clusters == static.status.clusters
