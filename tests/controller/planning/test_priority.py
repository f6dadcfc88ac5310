"""Prioritized scale-up cascade and scale-down pinning (DESIGN §4), through the planner."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controller.planning import priority
from controller.planning.fleet import Fleet, Slot
from controller.planning.observation import CapacityObservation, ClusterObservation
from controller.planning.plan import Plan
from fhpa_api.models import Condition
from tests.support.planning_builders import (
    T0,
    bounds,
    fhpa,
    hpa_bounds,
    obs,
    owned_hpa,
    reasons,
    row,
    run,
    settle,
    update,
    writes,
)

S = timedelta(seconds=1)


def seed_scale_up_fleet(scaling_to_zero: bool):
    """Seed 002's scale-up: member1 8..23 (priority 2), member2 1..1 (priority 1)."""
    f = fhpa(
        "Prioritized",
        8,
        24,
        priorities={"member1": 2, "member2": 1},
        autoscaleMultiClusterDelay=30,
        scalingToZero=scaling_to_zero,
    )
    f, fleet, p = settle(f, [obs("member1", 15, 20), obs("member2", 0, 1)])
    assert bounds(p) == {"member1": (8, 23), "member2": (1, 1)}
    # the load grows: member1's HPA wants 16, 10 are ready and 6 cannot be scheduled
    fleet = update(
        fleet, "member1", current_replicas=16, ready_replicas=10, pending_replicas=6, hpa_desired=16
    )
    return f, fleet


def test_seed_scale_up_waits_for_the_delay_then_moves_max_down_the_priorities() -> None:
    f, fleet = seed_scale_up_fleet(scaling_to_zero=True)
    first = run(f, fleet, T0 + 10 * S)
    assert not first.has_member_writes  # pending for 0 s: the cluster-autoscaler gets its chance
    assert row(first, "member1").pending_since == T0 + 10 * S
    assert first.requeue_after_seconds == 30  # the end of the delay
    f = f.model_copy(update={"status": first.status})
    moved = run(f, fleet, T0 + 40 * S)
    assert bounds(moved) == {"member1": (8, 10), "member2": (1, 14)}
    assert hpa_bounds(moved) == {"member1": (8, 10), "member2": (1, 14)}
    assert writes(moved) == {"member2": 6}  # raised by the 6 pods that pend, also with scalingToZero
    assert row(moved, "member1").state == "Saturated"
    assert "ScaledAcrossClusters" in reasons(moved)


def test_seed_scale_up_raises_the_next_cluster_by_the_pods_that_pend() -> None:
    f, fleet = seed_scale_up_fleet(scaling_to_zero=False)
    assert next(o for o in fleet if o.name == "member2").current_replicas == 1  # the initial replicas
    f = f.model_copy(update={"status": run(f, fleet, T0 + 10 * S).status})
    moved = run(f, fleet, T0 + 40 * S)
    assert bounds(moved) == {"member1": (8, 10), "member2": (1, 14)}
    # member2 runs 1: the 6 pods member1 cannot schedule start there now, not as its HPA ramps up from 1
    assert writes(moved) == {"member2": 7}


def test_pending_that_clears_before_the_delay_moves_nothing() -> None:
    f, fleet = seed_scale_up_fleet(scaling_to_zero=False)
    f = f.model_copy(update={"status": run(f, fleet, T0 + 10 * S).status})
    cleared = update(fleet, "member1", ready_replicas=16, pending_replicas=0)
    p = run(f, cleared, T0 + 40 * S)
    assert not p.has_member_writes
    assert row(p, "member1").pending_since is None


def test_scale_up_cascades_to_the_third_priority() -> None:
    f = fhpa("Prioritized", 1, 30, priorities={"a": 3, "b": 2, "c": 1})
    f, fleet, p = settle(f, [obs("a", 5, 10), obs("b", 1, 10), obs("c", 1, 10)])
    assert bounds(p) == {"a": (1, 10), "b": (1, 10), "c": (1, 10)}
    fleet = update(fleet, "a", current_replicas=10, ready_replicas=8, pending_replicas=2)
    f, fleet, p = settle(f, fleet, T0 + S)
    assert bounds(p) == {"a": (1, 8), "b": (1, 12), "c": (1, 10)}
    # b grows into its new max and saturates too: a stays capped, b's surplus goes on to c
    fleet = update(fleet, "a", current_replicas=8, pending_replicas=0)
    fleet = update(fleet, "b", current_replicas=12, ready_replicas=9, pending_replicas=3)
    p = run(f, fleet, T0 + 2 * S)
    assert bounds(p) == {"a": (1, 8), "b": (1, 9), "c": (1, 13)}


def seed_scale_down_fleet():
    """Seed 002's scale-down: priorities 3/2/1 running 4/9/4, load falling everywhere."""
    f = fhpa("Prioritized", 1, 17, priorities={"c1": 3, "c2": 2, "c3": 1})
    f, fleet, p = settle(f, [obs("c1", 4, 4), obs("c2", 9, 9), obs("c3", 4, 4)])
    assert bounds(p) == {"c1": (1, 4), "c2": (1, 9), "c3": (1, 4)}
    for name in ("c1", "c2", "c3"):
        fleet = update(fleet, name, hpa_desired=2)
    return f, fleet


def test_seed_scale_down_pins_higher_priorities_while_lower_ones_drain() -> None:
    f, fleet = seed_scale_down_fleet()
    f, fleet, p = settle(f, fleet, T0 + S)
    # the controller writes no replicas: it raises the higher clusters' HPA min to what they run
    assert writes(p) == {}
    assert hpa_bounds(p) == {"c1": (4, 4), "c2": (9, 9)}
    assert row(p, "c1").pinned_min_replicas == 4 and row(p, "c2").pinned_min_replicas == 9
    assert row(p, "c1").min_replicas == 1  # the assigned min is remembered
    assert reasons(p).count("Pinned") == 2
    # c3's HPA brings it to its min: c2 is released, c1 stays pinned while c2 is above its min
    fleet = update(fleet, "c3", current_replicas=1, hpa_desired=1)
    f, fleet, p = settle(f, fleet, T0 + 2 * S)
    assert hpa_bounds(p) == {"c2": (1, 9)}
    assert row(p, "c2").pinned_min_replicas is None and row(p, "c1").pinned_min_replicas == 4
    # c2 drains to its min: c1 is released and the unused max flows back up to it, as far as c1 has room
    fleet = update(fleet, "c2", current_replicas=1, hpa_desired=1)
    fleet = update(fleet, "c1", available_replicas=20)
    f, fleet, p = settle(f, fleet, T0 + 3 * S)
    assert row(p, "c1").pinned_min_replicas is None
    assert bounds(p) == {"c1": (1, 15), "c2": (1, 1), "c3": (1, 1)}
    assert "Unpinned" in reasons(p) and "Optimized" in reasons(p)


def test_no_pins_while_the_load_is_steady() -> None:
    f = fhpa("Prioritized", 1, 17, priorities={"c1": 3, "c2": 2, "c3": 1})
    f, fleet, _ = settle(f, [obs("c1", 4, 4), obs("c2", 9, 9), obs("c3", 4, 4)])
    assert not run(f, fleet, T0 + S).has_member_writes


def test_a_restarted_controller_keeps_the_pins() -> None:
    f, fleet = seed_scale_down_fleet()
    f, fleet, _ = settle(f, fleet, T0 + S)
    fleet = update(fleet, "c3", hpa_desired=2)  # c3's HPA still sheds
    again = run(f, fleet, T0 + 2 * S)  # same status, same fleet: nothing repeated, nothing lost
    assert not again.has_member_writes
    assert row(again, "c1").pinned_min_replicas == 4


STABILIZED = [Condition(type="AbleToScale", status="True", reason="ScaleDownStabilized")]


def scale_down_stabilized(fleet: list[ClusterObservation], name: str) -> list[ClusterObservation]:
    """The fleet with ``name``'s HPA holding a scale-down in its stabilization window."""
    cluster = next(o for o in fleet if o.name == name)
    assert cluster.hpa is not None
    return update(fleet, name, hpa=cluster.hpa.model_copy(update={"conditions": STABILIZED}))


def test_a_stabilized_scale_down_pins_but_not_while_another_cluster_wants_more() -> None:
    f = fhpa("Prioritized", 1, 17, priorities={"c1": 3, "c2": 2, "c3": 1})
    f, fleet, _ = settle(f, [obs("c1", 4, 4), obs("c2", 9, 9), obs("c3", 4, 4)])
    calm = scale_down_stabilized(fleet, "c3")
    assert row(run(f, calm, T0 + S), "c1").pinned_min_replicas == 4
    busy = update(calm, "c1", hpa_desired=6, hpa_limited=True)  # c1 is at its max and wants more
    assert row(run(f, busy, T0 + S), "c1").pinned_min_replicas is None


def test_a_drop_to_the_max_we_lowered_is_not_falling_load() -> None:
    f, fleet = seed_scale_up_fleet(scaling_to_zero=False)
    f, fleet, _ = settle(f, fleet, T0 + 10 * S)
    f, fleet, p = settle(f, fleet, T0 + 40 * S)
    assert bounds(p)["member1"] == (8, 10)
    # member1's HPA obeys its new max: 16 -> 10, which is our capping, not the load
    fleet = update(
        fleet, "member1", current_replicas=10, ready_replicas=10, pending_replicas=0, hpa_desired=10
    )
    fleet = update(fleet, "member2", current_replicas=7, ready_replicas=7, hpa_desired=7)
    p = run(f, fleet, T0 + 50 * S)
    assert row(p, "member1").pinned_min_replicas is None


def test_the_spill_stays_while_the_saturated_cluster_still_wants_more() -> None:
    f, fleet = seed_scale_up_fleet(scaling_to_zero=False)
    fleet = update(fleet, "member1", available_replicas=10)  # no room beyond the 10 it holds
    f, fleet, _ = settle(f, fleet, T0 + 10 * S)
    f, fleet, p = settle(f, fleet, T0 + 40 * S)
    assert bounds(p) == {"member1": (8, 10), "member2": (1, 14)}
    # member1's HPA obeys the cap and still wants 16; member2 has only just started, at its min of 1:
    # that is not a drained scale-down, so the max must not flow back to member1
    fleet = update(
        fleet, "member1", current_replicas=10, pending_replicas=0, hpa_desired=16, hpa_limited=True
    )
    p = run(f, fleet, T0 + 45 * S)
    assert bounds(p) == {"member1": (8, 10), "member2": (1, 14)}
    assert row(p, "member1").state == "Saturated"
    assert not p.has_member_writes


def test_an_hpa_the_cap_just_brought_down_does_not_hand_the_spill_back() -> None:
    # The native HPA that finds itself above its new max rescales to the max without computing a
    # metric: it reports desired = max and leaves ScalingLimited as it was (False). Taking that for
    # "no longer wants more" handed the max straight back and bounced the pending pods every 90 s.
    f, fleet = seed_scale_up_fleet(scaling_to_zero=False)
    fleet = update(fleet, "member1", available_replicas=10)
    f, fleet, _ = settle(f, fleet, T0 + 10 * S)
    f, fleet, p = settle(f, fleet, T0 + 40 * S)
    assert bounds(p) == {"member1": (8, 10), "member2": (1, 14)}
    fleet = update(
        fleet, "member1", current_replicas=10, pending_replicas=0, hpa_desired=10, hpa_limited=False
    )
    p = run(f, fleet, T0 + 55 * S)
    assert bounds(p) == {"member1": (8, 10), "member2": (1, 14)}
    assert row(p, "member1").state == "Saturated"
    # once its HPA wants fewer than it holds (the load fell) and member2 is back at its min, it is released
    fleet = update(fleet, "member1", current_replicas=9, hpa_desired=9, hpa_limited=False)
    fleet = update(fleet, "member2", current_replicas=1, ready_replicas=1, hpa_desired=1)
    p = run(f, fleet, T0 + 110 * S)
    assert row(p, "member1").state is None


def test_while_the_load_falls_the_lowest_priority_gives_up_what_the_fleet_no_longer_needs() -> None:
    # a (priority 2) runs 10 of max 10, b (priority 1) runs 20 of max 30: the load fell to half of the
    # CPU target, so the fleet needs 15 of its 30 running: once b's HPA decides to scale down (its
    # window has passed) b's max drops to 5 at once, the 25 freed go to a, which has room for them
    f = fhpa("Prioritized", 2, 40, priorities={"a": 2, "b": 1})
    f, fleet, p = settle(f, [obs("a", 10, 10), obs("b", 20, 100)])
    assert bounds(p) == {"a": (2, 10), "b": (1, 30)}
    fleet = update(fleet, "a", available_replicas=40)
    f, fleet, p = settle(f, fleet, T0 + 120 * S)
    fleet = update(fleet, "b", hpa_desired=15)  # wants fewer than run: the demand fell
    fleet = [
        o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": 0.5})}) if o.hpa else o
        for o in fleet
    ]
    p = run(f, fleet, T0 + 240 * S)
    assert bounds(p)["b"] == (1, 5)
    assert bounds(p)["a"][1] == 35
    assert "DrainedFirst" in reasons(p)
    # within the tolerance of the target nothing is taken
    steady = [o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": 0.95})}) for o in fleet]
    assert "DrainedFirst" not in reasons(run(f, steady, T0 + 240 * S))


def test_a_drained_cluster_gets_no_max_back_while_its_hpa_remembers_the_higher_count() -> None:
    # the HPA's scale-down window keeps its highest recommendation for 5 minutes: handing the max back
    # within it lets the HPA climb straight back, and the next drain follows (a 1 <-> 70 bounce)
    f = fhpa("Prioritized", 2, 40, priorities={"a": 2, "b": 1})
    f, fleet, p = settle(f, [obs("a", 10, 40), obs("b", 20, 100)])
    f, fleet, p = settle(f, fleet, T0 + 120 * S)
    fleet = update(fleet, "b", hpa_desired=15)
    fleet = [
        o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": 0.5})}) if o.hpa else o
        for o in fleet
    ]
    f, fleet, p = settle(f, fleet, T0 + 240 * S)
    assert bounds(p)["b"] == (1, 5)
    fleet = update(fleet, "b", current_replicas=5, ready_replicas=5, hpa_desired=5)
    calm = [o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": 1.0})}) for o in fleet]
    _, _, p = settle(f, calm, T0 + 400 * S)  # a period later, inside the 300 s window: b stays at 5
    assert bounds(p)["b"] == (1, 5)


def test_a_member_hpa_blind_to_its_metrics_is_no_sign_that_the_load_fell() -> None:
    """An HPA that cannot read its metrics keeps wanting what it last computed: 20 running and 15
    wanted there is a broken metric pipeline, not a fall in load, and nothing is drained for it."""
    f = fhpa("Prioritized", 2, 40, priorities={"a": 2, "b": 1})
    f, fleet, p = settle(f, [obs("a", 10, 10), obs("b", 20, 100)])
    f, fleet, p = settle(f, fleet, T0 + 120 * S)
    fleet = update(fleet, "b", hpa_desired=15)
    blind = Condition(type="ScalingActive", status="False", reason="FailedGetResourceMetric", message="no")
    fleet = [
        o.model_copy(
            update={
                "hpa": o.hpa.model_copy(
                    update={
                        "metric_ratio": 0.5,
                        "conditions": [*o.hpa.conditions, blind] if o.name == "b" else o.hpa.conditions,
                    }
                )
            }
        )
        if o.hpa
        else o
        for o in fleet
    ]
    p = run(f, fleet, T0 + 240 * S)
    assert "DrainedFirst" not in reasons(p)
    assert bounds(p)["b"] == (1, 30)


CLOUD = CapacityObservation(firm=20, elastic=80, source="cluster-autoscaler")  # b: a node group


def drained_fleet():
    """a (priority 2) lost nodes and runs 10, b (priority 1, a cloud node group) took the rest and runs
    20; the load is steady at target, so no HPA moves."""
    f = fhpa("Prioritized", 2, 40, priorities={"a": 2, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 10, 10), obs("b", 20, 100, capacity=CLOUD)])
    f, fleet, p = settle(f, at_target(fleet), T0 + 120 * S)
    assert "Pinned" not in reasons(p)
    return f, at_target(fleet)


def test_room_that_returns_to_a_preferred_cluster_takes_back_what_a_cloud_below_runs() -> None:
    # a's room comes back to 30: a is pinned at what its new max lets it hold of b's replicas above b's
    # min, and b's HPA then sheds the load that moved (and b's nodes go with it)
    f, fleet = drained_fleet()
    f, _, p = settle(f, update(fleet, "a", available_replicas=30), T0 + 240 * S)
    assert writes(p) == {}  # through the HPA's min, never a replica write against a running HPA
    a_max = bounds(p)["a"][1]
    assert 10 < a_max <= 30
    assert row(p, "a").pinned_min_replicas == a_max and hpa_bounds(p)["a"] == (a_max, a_max)
    assert "Pinned" in reasons(p)


def test_nothing_is_taken_back_for_elastic_room_unsteady_load_or_from_fixed_nodes() -> None:
    f, fleet = drained_fleet()
    back = update(fleet, "a", available_replicas=30)
    assert "Pinned" in reasons(run(f, back, T0 + 240 * S))
    # room that is only elastic (nodes would have to come) moves nothing
    elastic = CapacityObservation(firm=10, elastic=20, source="cluster-autoscaler")
    assert "Pinned" not in reasons(run(f, update(back, "a", capacity=elastic), T0 + 240 * S))
    # nor while the HPAs do not show the load (no metrics yet): it may not be steady
    blind = [o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": None})}) for o in back]
    assert "Pinned" not in reasons(run(f, blind, T0 + 240 * S))
    # b of fixed nodes keeps its share: moving it would save nothing
    assert "Pinned" not in reasons(run(f, update(back, "b", capacity=None), T0 + 240 * S))


def test_only_what_lets_a_node_go_is_taken_back() -> None:
    """Pods on the nodes a lower cluster's min keeps cost nothing more there: moving them up would only
    add to what the preferred cluster runs, and its HPA would hand them back at the next pass."""
    f, fleet = drained_fleet()
    back = update(fleet, "a", available_replicas=30)
    one_node = CLOUD.model_copy(update={"pods_per_node": 20})  # b's 20 pods share the node its min keeps
    assert "Pinned" not in reasons(run(f, update(back, "b", capacity=one_node), T0 + 240 * S))
    two_nodes = CLOUD.model_copy(update={"pods_per_node": 10})  # the 10 beyond that node let one go
    p = run(f, update(back, "b", capacity=two_nodes), T0 + 240 * S)
    assert row(p, "a").pinned_min_replicas == 20


def at_target(fleet, ratio: float = 1.0):
    """Every member HPA reports its metrics at ``ratio`` of target (at target unless told): the load is
    steady."""
    return [
        o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": ratio})}) if o.hpa else o
        for o in fleet
    ]


def test_a_pin_is_lowered_to_the_room_a_cluster_has_left() -> None:
    # found by the capacity-lost bench fleet: on-prem was pinned at 64 while it had room for 80, then
    # lost half its nodes; whenever a drain gave it max again, its HPA went to the stale pin and the
    # pods beyond its 40 pended, the spill took the max back down, and the next drain gave it back
    f = fhpa("Prioritized", 2, 200, priorities={"onprem": 2, "cloud": 1})
    shedding = owned_hpa(f, 1, 68, 103).model_copy(update={"desired_replicas": 90})  # the cloud sheds
    slots = {
        "onprem": Slot(cluster=obs("onprem", 40, 40), min_replicas=2, max_replicas=132, pin=64),
        "cloud": Slot(cluster=obs("cloud", 103, 110, hpa=shedding), min_replicas=1, max_replicas=68),
    }
    priority.pin_and_release(Fleet(fhpa=f, now=T0, slots=slots))
    assert slots["onprem"].hpa_min == 40  # still pinned (the cloud sheds), but within its room


def shedding_under_onprem(flapped: str | None) -> tuple[Fleet, dict[str, Slot]]:
    """On-prem (priority 2) runs 40; the cloud below runs 40 and its HPA wants 20: the load falls."""
    f = fhpa("Prioritized", 2, 200, priorities={"onprem": 2, "cloud": 1})
    slots = {
        "onprem": Slot(
            cluster=obs("onprem", 40, 100, hpa=owned_hpa(f, 2, 100, 40)), min_replicas=2, max_replicas=100
        ),
        "cloud": Slot(
            cluster=obs("cloud", 40, 100, hpa=owned_hpa(f, 1, 100, 40, desired=20)),
            min_replicas=1,
            max_replicas=100,
        ),
    }
    if flapped is not None:
        slots[flapped].flapped = True
    return Fleet(fhpa=f, now=T0, slots=slots), slots


@pytest.mark.parametrize("flapped", ["onprem", "cloud"])
def test_no_pin_is_taken_within_the_hour_after_a_failover(flapped: str) -> None:
    """After a failover the stand-ins keep what they run, as the drain leaves them: the member HPAs
    shed side by side for the hour, rather than the preferred tier being held at what it runs until
    every lower cluster has stepped down to its min (found on the failover and regions-outage bench
    fleets: the preferred cluster held 38 or 150 replicas for the fleet's 30)."""
    fleet, slots = shedding_under_onprem(None)
    priority.pin_and_release(fleet)
    assert slots["onprem"].pin == 40  # the rule: the tier above is pinned while the cloud sheds
    fleet, slots = shedding_under_onprem(flapped)
    priority.pin_and_release(fleet)
    assert slots["onprem"].pin is None


def test_a_drain_parks_no_max_above_the_room_of_the_tier_above() -> None:
    """The freed max goes only where there is room: with the tier above full, the lower cluster keeps
    its max and its own HPA scales down, rather than the full tier receiving max it cannot hold."""
    f = fhpa("Prioritized", 2, 40, priorities={"a": 2, "b": 1})
    f, fleet, p = settle(f, [obs("a", 10, 10), obs("b", 20, 100)])
    f, fleet, p = settle(f, fleet, T0 + 120 * S)
    fleet = update(fleet, "b", hpa_desired=15)
    fleet = [o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": 0.5})}) for o in fleet]
    p = run(f, fleet, T0 + 240 * S)
    assert bounds(p) == {"a": (2, 10), "b": (1, 30)}
    assert "DrainedFirst" not in reasons(p)
    # with room for 8 more on a, b gives up 8 of its max and no more
    roomy = update(fleet, "a", available_replicas=18)
    p = run(f, roomy, T0 + 240 * S)
    assert bounds(p)["a"][1] == 18 and bounds(p)["b"][1] == 22


def test_a_returning_higher_tier_is_no_fall_in_demand() -> None:
    """When a higher tier's pods come back every HPA sees its load per pod fall and holds a scale-down
    in its stabilization window: the lower tier is pinned under, never drained, until an HPA decides to
    scale down."""
    f = fhpa("Prioritized", 2, 200, priorities={"onprem": 2, "cloud": 1})
    f, fleet, p = settle(f, [obs("onprem", 40, 40), obs("cloud", 63, 300)])
    f, fleet, p = settle(f, fleet, T0 + 120 * S)
    lower = {"metric_ratio": 0.61, "conditions": STABILIZED}
    back = [o.model_copy(update={"hpa": o.hpa.model_copy(update=lower)}) for o in fleet]
    p = run(f, back, T0 + 240 * S)
    assert "DrainedFirst" not in reasons(p)
    assert bounds(p)["cloud"][1] >= 63
    assert row(p, "onprem").pinned_min_replicas == 40


def test_clusters_of_one_priority_are_not_lower_than_each_other() -> None:
    """Two clouds of priority 1 below an on-prem of priority 2: a cloud that sheds pins the on-prem
    cluster, never its peer, and a drain gives the freed max to the higher tier only."""
    f = fhpa("Prioritized", 2, 60, priorities={"onprem": 2, "cloud-a": 1, "cloud-b": 1})
    f, fleet, p = settle(f, [obs("onprem", 10, 10), obs("cloud-a", 10, 30), obs("cloud-b", 10, 30)])
    fleet = scale_down_stabilized(fleet, "cloud-b")
    p = run(f, fleet, T0 + S)
    assert row(p, "onprem").pinned_min_replicas == 10
    assert row(p, "cloud-a").pinned_min_replicas is None


def test_a_pin_releases_once_the_clusters_below_want_no_fewer() -> None:
    """A lower cluster that holds steady above its min (its HPA wants what it runs) releases the pin:
    waiting for it to reach its min would keep the higher cluster at its peak for good."""
    f, fleet = seed_scale_down_fleet()
    f, fleet, _ = settle(f, fleet, T0 + S)
    fleet = update(fleet, "c3", current_replicas=3, hpa_desired=3)  # settled above its min of 1
    f, fleet, p = settle(f, fleet, T0 + 2 * S)
    assert row(p, "c2").pinned_min_replicas is None
    f, fleet, p = settle(f, fleet, T0 + 3 * S)  # c2 idle at what it runs: c1 is released too
    assert row(p, "c1").pinned_min_replicas is None


def test_a_pin_holds_while_the_cluster_below_has_just_stepped_down() -> None:
    """A native HPA scales down in steps; the sync that makes a step reports the count it stepped from
    as its current and the new count as desired, while the workload already runs the new count. That
    cluster is on its way down, not wanting what it runs: the pin above it stays, so the higher tier
    does not shed between two steps of the lower one."""
    f, fleet = seed_scale_down_fleet()
    f, fleet, _ = settle(f, fleet, T0 + S)
    fleet = update(fleet, "c3", current_replicas=3, hpa_desired=3)
    c3 = next(o for o in fleet if o.name == "c3")
    assert c3.hpa is not None
    stepped = update(fleet, "c3", hpa=c3.hpa.model_copy(update={"current_replicas": 4}))
    f, fleet, p = settle(f, stepped, T0 + 2 * S)
    assert row(p, "c2").pinned_min_replicas == 9
    f, fleet, p = settle(f, update(fleet, "c3", hpa_desired=3), T0 + 3 * S)  # the next sync: it holds at 3
    assert row(p, "c2").pinned_min_replicas is None


def end_of_campaign(east_ratio: float) -> tuple[Fleet, dict[str, Slot]]:
    """east (priority 2) pinned at its campaign peak of 140 while west (priority 1, a node group of
    10-pod nodes whose min of 1 keeps one) sheds its 30; every HPA reads ``east_ratio`` of target."""
    f = fhpa("Prioritized", 2, 240, priorities={"east": 2, "west": 1})
    group = CapacityObservation(firm=140, elastic=10, source="cluster-autoscaler", pods_per_node=10)
    east_hpa = owned_hpa(f, 140, 150, 140).model_copy(update={"metric_ratio": east_ratio})
    west_hpa = owned_hpa(f, 1, 90, 30, desired=20).model_copy(update={"metric_ratio": east_ratio})
    slots = {
        "east": Slot(
            cluster=obs("east", 140, 150, hpa=east_hpa, capacity=group),
            min_replicas=1,
            max_replicas=150,
            pin=140,
        ),
        "west": Slot(
            cluster=obs("west", 30, 150, hpa=west_hpa, capacity=group), min_replicas=1, max_replicas=90
        ),
    }
    return Fleet(fhpa=f, now=T0, slots=slots), slots


def test_a_pin_follows_the_load_down_to_what_the_fleet_needs_of_the_cluster() -> None:
    """Found on the two-elastic-regions bench fleet: after the campaign the pin held east's 15 nodes
    for half an hour while west shed one window per step and the load fell to a fifth."""
    fleet, slots = end_of_campaign(east_ratio=0.5)  # the load asks for 85 replicas in all
    priority.pin_and_release(fleet)
    # still pinned (west sheds), but at the load's need less the 10 pods west's kept node holds
    assert slots["east"].pin == 75
    assert "Pinned" in [e.reason for e in fleet.events]


def test_a_pin_the_load_still_needs_stays_where_it_is() -> None:
    # the load asks for 133: beyond the tolerance below the 170 that run, but not below east's 140
    # (nor its 10% band): west sheds first, as it does when a pin takes load back up the order
    fleet, slots = end_of_campaign(east_ratio=0.78)
    priority.pin_and_release(fleet)
    assert slots["east"].pin == 140


def a_few_pods_above_a_kept_node(b_runs: int, a_room: int, ratio: float = 0.93) -> Plan:
    """a (priority 2) runs 30 and has firm room for ``a_room``; b (priority 1) is a node group of
    10-pod nodes whose min keeps one, running ``b_runs``; the load is steady at ``ratio`` of target
    (within the HPAs' band)."""
    f = fhpa("Prioritized", 2, 80, priorities={"a": 2, "b": 1})
    group = CapacityObservation(firm=20, elastic=80, source="cluster-autoscaler", pods_per_node=10)
    f, fleet, _ = settle(f, [obs("a", 30, 30), obs("b", b_runs, 100, capacity=group)])
    f, fleet, p = settle(f, at_target(fleet, ratio), T0 + 120 * S)
    assert "Pinned" not in reasons(p)
    return run(f, update(at_target(fleet, ratio), "a", available_replicas=a_room), T0 + 240 * S)


def test_a_take_back_of_a_few_pods_is_made_when_it_lets_a_node_go() -> None:
    # 2 pods are under a tenth of a's 30, but they are all b runs beyond its kept node: that node goes
    assert row(a_few_pods_above_a_kept_node(b_runs=12, a_room=40), "a").pinned_min_replicas == 32
    # 2 of b's 3 beyond its kept node would leave that node in use: not worth moving
    assert row(a_few_pods_above_a_kept_node(b_runs=13, a_room=32), "a").pinned_min_replicas is None


def test_fixed_room_takes_back_what_a_node_group_runs_under_the_policies_that_shed_node_groups_first() -> (
    None
):
    """Found by running the hybrid-quota-cloud bench fleet over two days: the night left on-prem and the
    cloud at 5 pods each, and as the morning's load rose both member HPAs grew side by side, so the
    cloud took a second node while on-prem had 23 pods of room under its quota (the second day cost
    29.03 against the first day's 24.47). The fixed cluster now takes back what the node group runs
    beyond its kept node, as Prioritized's preferred tier does."""
    for policy in ("Aggregated", "DynamicWeighted", "StaticWeighted"):
        f = fhpa(policy, 2, 80, weights={"a": 1, "b": 1} if policy == "StaticWeighted" else None)
        group = CapacityObservation(firm=20, elastic=80, source="cluster-autoscaler", pods_per_node=10)
        f, fleet, _ = settle(f, [obs("a", 30, 30), obs("b", 12, 100, capacity=group)])
        f, fleet, p = settle(f, at_target(fleet, 0.93), T0 + 120 * S)
        assert "Pinned" not in reasons(p)
        p = run(f, update(at_target(fleet, 0.93), "a", available_replicas=40), T0 + 240 * S)
        assert row(p, "a").pinned_min_replicas == 32, policy


def test_a_node_group_takes_nothing_back_from_another_under_the_policies_that_shed_node_groups_first() -> (
    None
):
    # a's node group has firm room again for what b's group runs beyond its kept node: Prioritized
    # takes it up its tiers, the divided policies leave node groups to their own HPAs
    for policy, taken in (("Prioritized", 32), ("Aggregated", None), ("DynamicWeighted", None)):
        prefs: dict[str, Any] = {"priorities": {"a": 2, "b": 1}} if policy == "Prioritized" else {}
        f = fhpa(policy, 2, 80, **prefs)
        group = CapacityObservation(firm=20, elastic=80, source="cluster-autoscaler", pods_per_node=10)
        a_group = CapacityObservation(firm=30, elastic=50, source="cluster-autoscaler", pods_per_node=10)
        f, fleet, _ = settle(f, [obs("a", 30, 80, capacity=a_group), obs("b", 12, 100, capacity=group)])
        f, fleet, p = settle(f, at_target(fleet, 0.93), T0 + 120 * S)
        assert "Pinned" not in reasons(p)
        roomier = a_group.model_copy(update={"firm": 40})
        p = run(f, update(at_target(fleet, 0.93), "a", capacity=roomier), T0 + 240 * S)
        assert row(p, "a").pinned_min_replicas == taken, policy


def test_a_quota_that_binds_first_does_not_hide_a_node_group() -> None:
    """Found by review: the quota's source replaced the cluster autoscaler's, and a node group under a
    binding quota counted as fixed room (never sent to 0, a take-back's receiver)."""
    room = CapacityObservation(firm=8, elastic=0, source="quota", pods_per_node=10)
    assert Slot(cluster=obs("cloud", 2, 8, capacity=room), min_replicas=1, max_replicas=8).pays_per_node
    fixed = CapacityObservation(firm=8, elastic=0, source="quota")
    assert not Slot(cluster=obs("onprem", 2, 8, capacity=fixed), min_replicas=1, max_replicas=8).pays_per_node


def test_a_take_back_is_made_only_when_the_clusters_below_would_shed() -> None:
    """2 more pods on a lower every HPA's ratio by 42/44: from 93% of target to 89%, past the native
    band of 10%, and b sheds; from 100% to 95.5%, within it, b keeps its 12 and the pin would only add
    2 pods to the fleet (found on the two-elastic-regions bench fleet: a fleet at 96% of target took 2
    of 35 pods back twice and sat at 73% of the target with 37)."""
    assert row(a_few_pods_above_a_kept_node(b_runs=12, a_room=40), "a").pinned_min_replicas == 32
    at_target_plan = a_few_pods_above_a_kept_node(b_runs=12, a_room=40, ratio=1.0)
    assert row(at_target_plan, "a").pinned_min_replicas is None


def a_take_back_under_way():
    """The take-back of :func:`a_few_pods_above_a_kept_node` (a pinned at 32 for b's 2 pods beyond its
    kept node), applied: a runs 32, its 2 new pods not Ready yet, b still runs its 12."""
    f = fhpa("Prioritized", 2, 80, priorities={"a": 2, "b": 1})
    group = CapacityObservation(firm=20, elastic=80, source="cluster-autoscaler", pods_per_node=10)
    f, fleet, _ = settle(f, [obs("a", 30, 30), obs("b", 12, 100, capacity=group)])
    f, fleet, _ = settle(f, at_target(fleet, 0.93), T0 + 120 * S)
    f, fleet, p = settle(f, update(at_target(fleet, 0.93), "a", available_replicas=40), T0 + 240 * S)
    assert row(p, "a").pinned_min_replicas == 32
    return f, update(fleet, "a", current_replicas=32, ready_replicas=30, hpa_desired=32), p


def test_a_take_back_pin_holds_for_the_scale_down_window_of_the_clusters_below() -> None:
    """The pods the pin adds must start and turn Ready before b's HPA sees its load fall, and b's HPA then
    holds its count for its scale-down window: judged at the next pass ("b wants no fewer"), the pin was
    released before b could shed, a gave the pods back, and the next take-back took them again (found
    on the two-elastic-regions bench fleet: pinned and released 15 s apart, 24 times a day)."""
    f, fleet, p = a_take_back_under_way()
    held_until = T0 + 240 * S + 360 * S  # b's scale-down window (300 s, unset) plus the settle period
    assert row(p, "a").take_back_held_until == held_until
    assert p.requeue_after_seconds is not None and p.requeue_after_seconds <= 360
    next_pass = run(f, fleet, T0 + 255 * S)
    assert "Unpinned" not in reasons(next_pass)
    assert row(next_pass, "a").pinned_min_replicas == 32
    assert "a" not in hpa_bounds(next_pass)  # its member HPA keeps minReplicas 32
    f = f.model_copy(update={"status": next_pass.status})
    ended = run(f, update(fleet, "a", ready_replicas=32), held_until)
    assert "Unpinned" in reasons(ended)
    assert row(ended, "a").pinned_min_replicas is None and row(ended, "a").take_back_held_until is None
    assert hpa_bounds(ended)["a"][0] == 2


def test_nothing_more_is_taken_back_while_a_take_back_pin_stands() -> None:
    """b still runs the 2 pods a is taking while its HPA waits out its window: counted again, they would
    be taken twice (a pinned at 34 for 2 pods)."""
    f, fleet, _ = a_take_back_under_way()
    ready = update(fleet, "a", ready_replicas=32)  # a's pods are Ready, b's HPA holds its 12
    p = run(f, ready, T0 + 330 * S)
    assert row(p, "a").pinned_min_replicas == 32
    assert "Pinned" not in reasons(p)


def test_a_take_back_hold_ends_with_its_pin() -> None:
    """a's room goes (its nodes drained again) while it holds a take-back: the pin goes with the room, and
    status keeps no hold for a pin that no longer exists (explain would promise its end)."""
    f, fleet, _ = a_take_back_under_way()
    p = run(f, update(fleet, "a", available_replicas=2, current_replicas=2, ready_replicas=2), T0 + 270 * S)
    assert row(p, "a").pinned_min_replicas is None
    assert row(p, "a").take_back_held_until is None
