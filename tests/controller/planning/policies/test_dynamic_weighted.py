"""DynamicWeighted: room is the weight, for the split and for metric shares."""

from __future__ import annotations

from controller.planning.policies.dynamic_weighted import DynamicWeighted
from tests.support.planning_builders import fhpa, obs

POLICY = DynamicWeighted()
F = fhpa("DynamicWeighted", 2, 30)


def test_the_split_divides_by_room_unknown_as_all_of_fmax() -> None:
    clusters = [obs("a", available=10), obs("b")]
    assert POLICY.split(F, 20, clusters, {"a": 10, "b": None}) == {"a": 5, "b": 15}
    assert POLICY.preference_order(F, clusters) == ["b", "a"]
    assert POLICY.least_preferred(F, clusters) == "a"
    assert POLICY.share_weight(F, obs("a", 4, available=10), 4) == 10
    assert POLICY.reads_capacity and not POLICY.tiered
