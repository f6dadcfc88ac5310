"""Aggregated: room decides the order, and the cluster running the fewest goes to zero first."""

from __future__ import annotations

from controller.planning.observation import CapacityObservation
from controller.planning.policies.aggregated import Aggregated
from tests.support.planning_builders import bounds, fhpa, obs, owned_hpa, run

POLICY = Aggregated()
F = fhpa("Aggregated", 2, 20)


def test_the_order_is_room_descending_unknown_first() -> None:
    clusters = [obs("a", available=3), obs("b", available=9), obs("c"), obs("d", available=9)]
    assert POLICY.preference_order(F, clusters) == ["c", "b", "d", "a"]


def test_the_least_preferred_runs_fewest_then_has_least_room() -> None:
    clusters = [obs("a", 2, available=50), obs("b", 2, available=5), obs("c", 4, available=1)]
    assert POLICY.least_preferred(F, clusters) == "b"
    assert POLICY.least_preferred(F, [obs("a", 2), obs("b", 2)]) == "b"  # unknown room: by name


def test_a_full_cluster_is_capped_by_the_trigger_and_shares_weigh_room() -> None:
    assert not POLICY.tiered and POLICY.shares_capped_by_room and POLICY.reads_capacity
    assert POLICY.share_weight(F, obs("a", 3, available=8), 3) == 8
    assert POLICY.share_weight(F, obs("a", 3), 3) == 20  # unknown room: all of F.max


def _hybrid() -> list:
    """On-prem that holds 40 now (it runs 20) and a cloud at zero nodes whose node group can add 400."""
    cloud = CapacityObservation(firm=0, elastic=400, source="cluster-autoscaler")
    onprem = CapacityObservation(firm=40)
    return [obs("onprem", 20, 40, capacity=onprem), obs("cloud", 0, 400, capacity=cloud)]


def test_firm_room_ranks_before_elastic_room() -> None:
    clusters = [*_hybrid(), obs("fixed", 0, 30, capacity=CapacityObservation(firm=30))]
    assert POLICY.preference_order(F, clusters) == ["onprem", "fixed", "cloud"]


def test_the_walk_fills_firm_room_before_any_node_has_to_come() -> None:
    # the cloud's 400 is room (never capped at 0), but it is used only for what on-prem cannot hold
    f = fhpa("Aggregated", 2, 200)
    assert POLICY.capped_split(f, 200, _hybrid(), {"onprem": 40, "cloud": 400}) == (
        {"onprem": 40, "cloud": 160},
        0,
    )
    assert bounds(run(f, _hybrid())) == {"onprem": (2, 40), "cloud": (1, 160)}


def _two_node_groups(cheap_nodes: int, dear_nodes: int) -> list:
    """After a campaign: a node group of at most 8 nodes whose HPA holds max 80 and one of at most 30
    holding 120 (10 pods a node), each running 20 pods on the nodes it has up now."""
    cheap = CapacityObservation(firm=cheap_nodes * 10, elastic=80 - cheap_nodes * 10)
    dear = CapacityObservation(firm=dear_nodes * 10, elastic=300 - dear_nodes * 10)
    f = fhpa("Aggregated", 2, 200)
    return [
        obs("cheap", 20, 80, capacity=cheap, hpa=owned_hpa(f, 1, 80, 20)),
        obs("dear", 20, 300, capacity=dear, hpa=owned_hpa(f, 1, 120, 20)),
    ]


def test_the_room_nodes_must_come_for_stays_with_the_cluster_that_holds_all_of_its_room() -> None:
    # after a peak each group loses an idle node in turn, so the one with a node more flips back and
    # forth; the max of what only new nodes can hold must not follow it (promise 4: calm)
    f = fhpa("Aggregated", 2, 200)
    for cheap_nodes, dear_nodes in [(5, 5), (5, 4), (4, 4), (4, 3)]:
        clusters = _two_node_groups(cheap_nodes, dear_nodes)
        shares, left = POLICY.capped_split(f, 200, clusters, {"cheap": 80, "dear": 300})
        assert shares == {"cheap": 80, "dear": 120} and left == 0
