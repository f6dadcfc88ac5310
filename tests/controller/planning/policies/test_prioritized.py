"""Prioritized: priority decides the order; the higher tiers run first."""

from __future__ import annotations

from controller.planning.policies.prioritized import Prioritized
from tests.support.planning_builders import fhpa, obs

POLICY = Prioritized()
F = fhpa("Prioritized", 2, 20, priorities={"a": 1, "b": 5, "c": 5})


def test_the_order_is_priority_descending_ties_by_name() -> None:
    clusters = [obs("a"), obs("c"), obs("b"), obs("d")]  # d has no preference: priority 0
    assert POLICY.preference_order(F, clusters) == ["b", "c", "a", "d"]
    assert POLICY.least_preferred(F, clusters) == "d"


def test_the_split_fills_the_order_each_up_to_its_capacity() -> None:
    clusters = [obs("a"), obs("b"), obs("c")]
    assert POLICY.split(F, 12, clusters, {"a": None, "b": 4, "c": 3}) == {"a": 5, "b": 4, "c": 3}
    # what nobody holds goes to the most preferred
    assert POLICY.split(F, 12, clusters, {"a": 1, "b": 4, "c": 3}) == {"a": 1, "b": 8, "c": 3}


def test_it_spills_down_its_tiers_and_shares_follow_what_runs() -> None:
    assert POLICY.tiered and POLICY.divides_bounds and not POLICY.shares_capped_by_room
    assert POLICY.share_weight(F, obs("a", 7, available=100), 7) == 7
