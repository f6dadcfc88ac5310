"""DynamicWeighted: room is the weight, for the split and for metric shares."""

from __future__ import annotations

from controller.planning.observation import CapacityObservation
from controller.planning.policies.dynamic_weighted import DynamicWeighted
from tests.support.planning_builders import bounds, fhpa, obs, run

POLICY = DynamicWeighted()
F = fhpa("DynamicWeighted", 2, 30)


def test_the_split_divides_by_room_unknown_as_all_of_fmax() -> None:
    clusters = [obs("a", available=10), obs("b")]
    assert POLICY.split(F, 20, clusters, {"a": 10, "b": None}) == {"a": 5, "b": 15}
    assert POLICY.preference_order(F, clusters) == ["b", "a"]
    assert POLICY.least_preferred(F, clusters) == "a"
    assert POLICY.share_weight(F, obs("a", 4, available=10), 4) == 10
    assert POLICY.reads_capacity and not POLICY.tiered


def _hybrid() -> list:
    """On-prem that holds 40 now (it runs 20) and a cloud at zero nodes whose node group can add 400."""
    cloud = CapacityObservation(firm=0, elastic=400, source="cluster-autoscaler")
    onprem = CapacityObservation(firm=40)
    return [obs("onprem", 20, 40, capacity=onprem), obs("cloud", 0, 400, capacity=cloud)]


def test_the_split_weighs_firm_room_first_then_elastic() -> None:
    # by room as a whole, 40 : 400 would give on-prem 18 of 200 and buy cloud nodes for the rest while
    # on-prem has room; by firm room first on-prem gets what it holds and the cloud what it cannot
    f = fhpa("DynamicWeighted", 2, 200)
    room = {"onprem": 40, "cloud": 400}
    assert POLICY.capped_split(f, 200, _hybrid(), room) == ({"onprem": 40, "cloud": 160}, 0)
    assert POLICY.split(f, 2, _hybrid(), room) == {"onprem": 2, "cloud": 0}
    assert bounds(run(f, _hybrid())) == {"onprem": (2, 40), "cloud": (1, 160)}
    # a holds 10 now; the other 30 are divided by elastic room, 20 : 60
    grow = [
        obs("a", 0, 30, capacity=CapacityObservation(firm=10, elastic=20)),
        obs("b", 0, 60, capacity=CapacityObservation(firm=0, elastic=60)),
    ]
    assert POLICY.capped_split(f, 40, grow, {"a": 30, "b": 60}) == ({"a": 17, "b": 23}, 0)


def test_without_elastic_room_the_split_is_by_available_as_before() -> None:
    clusters = [obs("a", available=10), obs("b", available=30)]
    assert POLICY.capped_split(F, 20, clusters, {"a": 10, "b": 30}) == ({"a": 5, "b": 15}, 0)
