"""Duplicated: nothing is divided, so nothing moves between clusters."""

from __future__ import annotations

from controller.planning.policies.duplicated import Duplicated
from tests.support.planning_builders import fhpa, obs

POLICY = Duplicated()
F = fhpa("Duplicated", 3, 10)


def test_it_divides_nothing_and_every_holder_shares_alike() -> None:
    assert not POLICY.divides_bounds and not POLICY.reads_capacity
    assert POLICY.share_weight(F, obs("a", 5, available=40), 5) == 1
    assert POLICY.share_weight(F, obs("b", 1, available=2), 1) == 1


def test_a_mechanic_that_asks_anyway_is_answered_by_room() -> None:
    """A cluster still marked full by an earlier policy hands its max on by room (DynamicWeighted's way)."""
    clusters = [obs("a", available=2), obs("b", available=6)]
    assert POLICY.split(F, 8, clusters, {"a": 2, "b": 6}) == {"a": 2, "b": 6}
    assert POLICY.least_preferred(F, clusters) == "a"
