"""Period and trigger optimization, and min redistribution (DESIGN §4)."""

from __future__ import annotations

from datetime import timedelta

from controller.planning import optimization
from controller.planning.fleet import Fleet, Slot
from controller.planning.planner import assignment_key
from fhpa_api.models import ClusterStatus, FederatedHPA, FederatedHPAStatus
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
)

S = timedelta(seconds=1)


def with_bounds(f: FederatedHPA, table: dict[str, tuple[int, int]], optimized_ago: float) -> FederatedHPA:
    """``f`` as the planner left it after assigning ``table`` (min, max per cluster)."""
    status = FederatedHPAStatus(
        assignment_key=assignment_key(f, list(table)),
        last_optimization_time=T0 - optimized_ago * S,
        clusters=[ClusterStatus(name=n, min_replicas=lo, max_replicas=hi) for n, (lo, hi) in table.items()],
    )
    return f.model_copy(update={"status": status})


def test_seed_period_optimization() -> None:
    # weights 2/1/1, current 6/6/6, max 7/8/7: slack 4 is shared 2/1/1, becoming 8/7/7
    f = fhpa("StaticWeighted", 3, 22, weights={"c1": 2, "c2": 1, "c3": 1})
    table = {"c1": (1, 7), "c2": (1, 8), "c3": (1, 7)}
    f = with_bounds(f, table, optimized_ago=60)
    fleet = [obs(n, 6, hpa=owned_hpa(f, lo, hi, 6)) for n, (lo, hi) in table.items()]
    p = run(f, fleet)
    assert bounds(p) == {"c1": (1, 8), "c2": (1, 7), "c3": (1, 7)}
    assert hpa_bounds(p) == {"c1": (1, 8), "c2": (1, 7)}
    assert p.status.last_optimization_time == T0
    assert p.requeue_after_seconds == 60
    assert "Optimized" in reasons(p)


def test_period_optimization_waits_for_the_period() -> None:
    f = fhpa("StaticWeighted", 3, 22, weights={"c1": 2, "c2": 1, "c3": 1})
    table = {"c1": (1, 7), "c2": (1, 8), "c3": (1, 7)}
    f = with_bounds(f, table, optimized_ago=20)
    fleet = [obs(n, 6, hpa=owned_hpa(f, lo, hi, 6)) for n, (lo, hi) in table.items()]
    p = run(f, fleet)
    assert not p.has_member_writes
    assert p.requeue_after_seconds == 40


def test_period_optimization_never_drops_a_max_below_current() -> None:
    f = fhpa("DynamicWeighted", 2, 20)
    table = {"a": (1, 10), "b": (1, 10)}
    f = with_bounds(f, table, optimized_ago=600)
    fleet = [obs("a", 9, 1, hpa=owned_hpa(f, 1, 10, 9)), obs("b", 2, 50, hpa=owned_hpa(f, 1, 10, 2))]
    p = run(f, fleet)
    # slack 1 + 8 = 9 shared by available 1/50: a keeps its 9, b gets the rest
    assert bounds(p) == {"a": (1, 9), "b": (1, 11)}


def test_aggregated_optimization_fills_the_biggest_cluster_first() -> None:
    f = fhpa("Aggregated", 2, 20)
    table = {"a": (1, 10), "b": (1, 10)}
    f = with_bounds(f, table, optimized_ago=600)
    fleet = [obs("a", 4, 30, hpa=owned_hpa(f, 1, 10, 4)), obs("b", 4, 8, hpa=owned_hpa(f, 1, 10, 4))]
    assert bounds(run(f, fleet)) == {"a": (1, 16), "b": (1, 4)}


def test_trigger_optimization_caps_the_pending_cluster_at_ready() -> None:
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1}, autoscaleMultiClusterDelay=0)
    f, fleet, p = settle(f, [obs("a", 5), obs("b", 5)])
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    fleet = update(fleet, "a", current_replicas=10, ready_replicas=6, pending_replicas=4)
    p = run(f, fleet, T0 + S)
    assert bounds(p) == {"a": (1, 6), "b": (1, 14)}
    assert row(p, "a").state == "Saturated"
    assert "ScaledAcrossClusters" in reasons(p)


def test_saturated_cluster_gets_slack_again_when_its_capacity_grows() -> None:
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 5), obs("b", 5)])
    fleet = update(
        fleet, "a", current_replicas=10, ready_replicas=6, pending_replicas=4, available_replicas=6
    )
    f, fleet, _ = settle(f, fleet, T0 + S)
    fleet = update(
        fleet, "a", current_replicas=6, ready_replicas=6, pending_replicas=0
    )  # its HPA obeyed max 6
    # a period later a still has no room: it stays capped, b keeps the slack
    f, fleet, p = settle(f, fleet, T0 + 61 * S)
    assert row(p, "a").state == "Saturated" and bounds(p)["a"] == (1, 6)
    # nodes were added: a has room for 30, and the next optimization shares the slack again
    fleet = update(fleet, "a", available_replicas=30)
    p = run(f, fleet, T0 + 122 * S)
    assert row(p, "a").state is None
    # running 6/5, slack 9 shared 1:1 (the odd one to b, which holds the larger max: ties keep the holder)
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}


def test_min_redistribution_moves_the_idle_clusters_min_to_the_running_ones() -> None:
    f = fhpa("StaticWeighted", 6, 12, weights={"a": 1, "b": 1}, scalingToZero=True)
    table = {"a": (3, 6), "b": (3, 6)}
    f = with_bounds(f, table, optimized_ago=10)
    fleet = [obs("a", 3, hpa=owned_hpa(f, 3, 6, 3)), obs("b", 0, hpa=owned_hpa(f, 3, 6, 0))]
    p = run(f, fleet)
    assert bounds(p) == {"a": (6, 6), "b": (3, 6)}  # b idles at 0; its HPA keeps min 3 for the wake-up
    assert "MinRedistributed" in reasons(p)


def test_duplicated_does_nothing_after_assignment() -> None:
    f = fhpa("Duplicated", 1, 10, autoscaleMultiClusterDelay=0)
    f, fleet, _ = settle(f, [obs("a", 5), obs("b", 5)])
    fleet = update(fleet, "a", current_replicas=10, ready_replicas=6, pending_replicas=4)
    p = run(f, fleet, T0 + 600 * S)
    assert not p.has_member_writes
    assert p.requeue_after_seconds is None


def test_scale_assist_false_assigns_and_then_never_acts() -> None:
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1}, scaleAssist=False)
    f, fleet, p = settle(f, [obs("a", 5), obs("b", 5)])
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    fleet = update(fleet, "a", current_replicas=10, ready_replicas=6, pending_replicas=4)
    p = run(f, fleet, T0 + 600 * S)
    assert not p.has_member_writes
    scaling = next(c for c in p.status.conditions or [] if c.type == "ScalingActive")
    assert scaling.status == "False" and scaling.reason == "ScaleAssistDisabled"


def test_trigger_cap_keeps_pods_that_are_scheduled_but_still_starting() -> None:
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 5, 40), obs("b", 5, 40)])
    # 10 run in a: 6 ready, 2 starting, 2 unschedulable: the cap is the 8 it holds, not the 6 ready
    fleet = update(fleet, "a", current_replicas=10, ready_replicas=6, pending_replicas=2)
    fleet = update(fleet, "a", available_replicas=8)
    p = run(f, fleet, T0 + S)
    assert bounds(p) == {"a": (1, 8), "b": (1, 12)}
    # its capacity has not grown: a period later it is still capped, b keeps the slack
    f = f.model_copy(update={"status": p.status})
    later = update(fleet, "a", current_replicas=8, ready_replicas=8, pending_replicas=0)
    later = update(later, "a", hpa=owned_hpa(f, 1, 8, 8))
    later = update(later, "b", hpa=owned_hpa(f, 1, 12, 5))
    assert bounds(run(f, later, T0 + 61 * S))["a"] == (1, 8)


def test_a_reassignment_remembers_that_a_cluster_is_full() -> None:
    # a's capacity is unknown (unlimited to the split) but its pods pended: it was capped and marked
    # Saturated. A failover of c reassigns the fleet; a must not be handed a max its pods pend against.
    f = fhpa("DynamicWeighted", 2, 30, autoscaleMultiClusterDelay=0)
    f, fleet, _ = settle(f, [obs("a", 5), obs("b", 5, 20), obs("c", 5, 20)])
    fleet = update(fleet, "a", current_replicas=12, ready_replicas=6, pending_replicas=6)
    f, fleet, p = settle(f, fleet, T0 + S)
    assert row(p, "a").state == "Saturated" and bounds(p)["a"][1] == 6
    # its HPA obeyed max 6 and still wants 12: the cap is what holds it
    fleet = update(fleet, "a", current_replicas=6, pending_replicas=0, hpa_desired=12, hpa_limited=True)
    f, fleet, _ = settle(f, fleet, T0 + 2 * S)
    down = update(fleet, "c", healthy=False)
    f, down, _ = settle(f, down, T0 + 10 * S)
    f, down, p = settle(f, down, T0 + 71 * S)  # c failed over: a new assignment over a and b
    assert "Assigned" in reasons(p)
    assert row(p, "a").state == "Saturated"
    assert bounds(p)["a"][1] == 6, bounds(p)
    assert sum(hi for _, hi in bounds(p).values()) == 30


def trended(f: FederatedHPA, table: dict[str, tuple[int, int, int]], ago: float) -> FederatedHPA:
    """``f`` after an assignment of (min, max, trend of the max) per cluster, the trend ``ago`` s old."""
    f = with_bounds(f, {n: (lo, hi) for n, (lo, hi, _) in table.items()}, optimized_ago=60)
    rows = [
        r.model_copy(update={"max_trend": table[r.name][2] or None, "max_trend_time": T0 - ago * S})
        for r in f.status.clusters
    ]
    return f.model_copy(update={"status": f.status.model_copy(update={"clusters": rows})})


def test_period_optimization_does_not_turn_a_max_back_by_a_small_step() -> None:
    # a's max just came down to 10 and b's went up to 10; a now runs 7 and b 5: the shares say a 11, b 9,
    # one replica back each way. Every period would nudge them to and fro: the band holds them.
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    table = {"a": (1, 10, -1), "b": (1, 10, 1)}
    fleet = [obs("a", 7, hpa=owned_hpa(f, 1, 10, 7)), obs("b", 5, hpa=owned_hpa(f, 1, 10, 5))]
    p = run(trended(f, table, ago=120), fleet)
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    assert not p.has_member_writes
    # the same step an hour after the last move, or with no trend at all, is made
    assert bounds(run(trended(f, table, ago=3700), fleet)) == {"a": (1, 11), "b": (1, 9)}
    assert bounds(run(trended(f, {"a": (1, 10, 0), "b": (1, 10, 0)}, ago=120), fleet)) == {
        "a": (1, 11),
        "b": (1, 9),
    }


def test_period_optimization_turns_back_at_once_for_a_cluster_at_its_max() -> None:
    # a runs its max and its HPA wants more: it gets its share at once, whatever the band says
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    table = {"a": (1, 10, -1), "b": (1, 10, 1)}
    fleet = [obs("a", 10, hpa=owned_hpa(f, 1, 10, 10)), obs("b", 8, hpa=owned_hpa(f, 1, 10, 8))]
    fleet = update(fleet, "a", hpa_desired=11, hpa_limited=True)  # held at max, TooManyReplicas
    assert bounds(run(trended(f, table, ago=120), fleet)) == {"a": (1, 11), "b": (1, 9)}


def test_a_reassignment_drops_the_mark_of_a_cluster_no_longer_pressing_against_its_cap() -> None:
    # capacity unknown: nothing but this clears the mark. Nothing pends and its HPA is content at 6.
    f = fhpa("DynamicWeighted", 2, 30, autoscaleMultiClusterDelay=0)
    f, fleet, _ = settle(f, [obs("a", 5), obs("b", 5, 20), obs("c", 5, 20)])
    fleet = update(fleet, "a", current_replicas=12, ready_replicas=6, pending_replicas=6)
    f, fleet, p = settle(f, fleet, T0 + S)
    fleet = update(fleet, "a", current_replicas=6, pending_replicas=0, hpa_desired=6, hpa_limited=False)
    f, fleet, _ = settle(f, fleet, T0 + 2 * S)
    down = update(fleet, "c", healthy=False)
    f, down, _ = settle(f, down, T0 + 10 * S)
    f, down, p = settle(f, down, T0 + 71 * S)
    assert row(p, "a").state is None


def held_and_pressing(b_available: int = 40):
    """a (5 of max 15) stops answering; b runs its max 15 and wants 25. Past the blip tolerance (30 s)."""
    f = fhpa("StaticWeighted", 2, 30, weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 5, 40), obs("b", 15, b_available)])
    down = update(update(fleet, "a", healthy=False), "b", hpa_desired=25, hpa_limited=True)
    f, down, p = settle(f, down, T0 + S)
    assert bounds(p) == {"a": (1, 15), "b": (1, 15)}  # a blip so far: nothing moves
    return f, down


def test_a_held_clusters_unused_max_goes_to_a_cluster_pressing_for_more() -> None:
    # Waiting for a's failover (the grace) left b capped while a's pods no longer served
    # (regions-outage bench)
    f, down = held_and_pressing()
    p = run(f, down, T0 + 31 * S)
    assert bounds(p)["a"] == (1, 5)  # keeps max for what it ran: its rejoin keeps what runs
    assert bounds(p)["b"][1] == 25
    assert sum(hi for _, hi in bounds(p).values()) == 30
    assert "unused max" in " ".join(e.message for e in p.events)


def test_a_held_cluster_lends_nothing_while_nobody_presses() -> None:
    f = fhpa("StaticWeighted", 2, 30, weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 5, 40), obs("b", 10, 40)])
    f, fleet, _ = settle(f, update(fleet, "a", healthy=False), T0 + S)
    p = run(f, fleet, T0 + 31 * S)
    assert bounds(p) == {"a": (1, 15), "b": (1, 15)}


def test_a_held_cluster_lends_only_what_the_pressing_cluster_has_room_for() -> None:
    f, down = held_and_pressing(b_available=18)
    p = run(f, down, T0 + 31 * S)
    assert bounds(p)["b"][1] == 18 and bounds(p)["a"][1] == 12


def test_a_cluster_whose_max_was_lowered_within_the_hour_takes_no_loan() -> None:
    # found by review: a primary blipping three times an hour turned the standby's max up on each
    # blip and down again after it (churn)
    f, down = held_and_pressing()
    rows = [
        r.model_copy(update={"max_trend": -1, "max_trend_time": T0}) if r.name == "b" else r
        for r in f.status.clusters
    ]
    f = f.model_copy(update={"status": f.status.model_copy(update={"clusters": rows})})
    assert bounds(run(f, down, T0 + 31 * S))["b"][1] == 15


def test_a_held_cluster_that_answers_again_keeps_what_it_runs_from_the_others_surplus() -> None:
    # found by review: a was cut off from the controller only; its pods kept serving and its live
    # HPA (max 15) grew it to 12 while its recorded max had been lowered to 5 by the lending. On its
    # return, writing max 5 would stop 7 serving pods while b has surplus
    f, down = held_and_pressing()
    f, down, p = settle(f, down, T0 + 31 * S)
    assert bounds(p) == {"a": (1, 5), "b": (1, 25)}
    back = update(
        down, "a", healthy=True, current_replicas=12, ready_replicas=12, hpa=owned_hpa(f, 1, 15, 12)
    )
    back = update(back, "b", current_replicas=18, ready_replicas=18, hpa=owned_hpa(f, 1, 25, 18))
    p = run(f, back, T0 + 40 * S)
    assert bounds(p)["a"][1] == 12 and bounds(p)["b"][1] == 18
    assert sum(hi for _, hi in bounds(p).values()) == 30


def test_a_cluster_that_answers_again_keeps_only_what_the_ceiling_allows() -> None:
    f, down = held_and_pressing()
    f, down, _ = settle(f, down, T0 + 31 * S)
    back = update(
        down, "a", healthy=True, current_replicas=12, ready_replicas=12, hpa=owned_hpa(f, 1, 15, 12)
    )
    back = update(back, "b", current_replicas=25, ready_replicas=25, hpa=owned_hpa(f, 1, 25, 25))
    p = run(f, back, T0 + 40 * S)
    assert sum(hi for _, hi in bounds(p).values()) == 30  # no surplus anywhere: F.max holds


def test_the_trigger_moves_no_max_that_no_other_cluster_can_hold() -> None:
    # found by the fleet state machine: F.max above what every cluster can hold; the trigger capped a
    # full cluster and handed its max to another full one, whose pods then pended and were capped in
    # turn: the max went round the fleet every pass (calm: pods that fit nowhere stay where they are)
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1}, autoscaleMultiClusterDelay=0)
    f, fleet, _ = settle(f, [obs("a", 5, 10), obs("b", 5, 10)])
    fleet = update(fleet, "a", current_replicas=10, ready_replicas=8, pending_replicas=2)
    p = run(f, fleet, T0 + S)
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    assert row(p, "a").state == "Saturated"


def lowered_lately_and_lost_room(federated_min: int) -> Fleet:
    """a's max came down 10 minutes ago; b lost room (6 -> 4) and keeps 2 max it cannot use."""
    lowered = T0 - timedelta(minutes=10)
    slots = {
        "a": Slot(cluster=obs("a", 18, 32), min_replicas=18, max_replicas=18, trend=-1, trend_since=lowered),
        "b": Slot(cluster=obs("b", 4, 4), min_replicas=4, max_replicas=6),
    }
    return Fleet(fhpa=fhpa("Aggregated", federated_min, 24), now=T0, slots=slots)


def test_the_floor_outranks_the_deadband() -> None:
    # found by the fleet state machine: moving b's 2 unused max back up to a is a small reversal the band
    # holds back, but without it the mins cannot hold F.min 24 (a min never passes its max)
    fleet = lowered_lately_and_lost_room(24)
    assert optimization.optimize(fleet, "period optimization")
    assert (fleet.slots["a"].max_replicas, fleet.slots["b"].max_replicas) == (20, 4)


def test_the_deadband_holds_a_small_reversal_the_floor_does_not_need() -> None:
    assert not optimization.optimize(lowered_lately_and_lost_room(22), "period optimization")


def test_max_on_a_cluster_that_lost_its_room_moves_where_the_floor_can_run() -> None:
    # found by the fleet state machine: a's room went to 0 (its nodes lost) and the trigger left it max 1
    # for its pending pod; with F.min = F.max = 21 that one replica of max is the floor's
    f = fhpa("DynamicWeighted", 21, 21)
    slots = {
        "a": Slot(
            cluster=obs("a", 1, 0, ready_replicas=0, pending_replicas=1), min_replicas=1, max_replicas=1
        ),
        "b": Slot(cluster=obs("b", 20, 30), min_replicas=20, max_replicas=20),
    }
    fleet = Fleet(fhpa=f, now=T0, slots=slots)
    assert optimization.move_max_for_the_floor(fleet)
    assert (slots["a"].max_replicas, slots["b"].max_replicas) == (0, 21)
    assert slots["a"].replicas == 0  # drained: no HPA is left over its pending pod
    assert not optimization.move_max_for_the_floor(fleet)  # the floor holds: nothing more moves


def blip_fleet(held: bool, held_long: bool = False) -> tuple[Fleet, dict[str, Slot]]:
    """F.min 23: a (unreachable) ran 8 under max 8; b holds at most 10 (its quota) under max 34, c 5
    under max 5 and has room for 5 more. Without a, b and c hold 15 of the 23."""
    f = fhpa("StaticWeighted", 23, 47)
    slots = {
        "a": Slot(
            cluster=obs("a", 8, None, healthy=False),
            min_replicas=8,
            max_replicas=8,
            held=held,
            held_long=held_long,
        ),
        "b": Slot(cluster=obs("b", 8, 10), min_replicas=8, max_replicas=34),
        "c": Slot(cluster=obs("c", 5, 10), min_replicas=1, max_replicas=5),
    }
    return Fleet(fhpa=f, now=T0, slots=slots), slots


def test_a_cluster_within_its_grace_holds_what_it_ran_for_the_floor() -> None:
    # found by the fleet state machine (seed 71): every blip moved max b->c for the floor, every
    # return moved it back
    fleet, slots = blip_fleet(held=True)
    assert not optimization.move_max_for_the_floor(fleet)
    assert (slots["b"].max_replicas, slots["c"].max_replicas) == (34, 5)


def test_a_failed_over_cluster_holds_nothing_for_the_floor() -> None:
    fleet, slots = blip_fleet(held=False)
    assert optimization.move_max_for_the_floor(fleet)
    assert (slots["b"].max_replicas, slots["c"].max_replicas) == (29, 10)


def test_a_held_cluster_holds_only_the_replicas_it_last_reported_ready() -> None:
    # its last-known counts have no pending pods (review): 8 current of which 2 Ready holds 2, so b
    # and c with 15 must take 6 more for the floor of 23
    fleet, slots = blip_fleet(held=True)
    slots["a"].cluster = slots["a"].cluster.model_copy(update={"ready_replicas": 2})
    assert optimization.move_max_for_the_floor(fleet)
    assert slots["c"].max_replicas == 10


def test_a_switch_to_duplicated_caps_no_cluster_the_policy_before_found_full() -> None:
    # found by the fleet state machine (seed 83): c was Saturated under Prioritized, its pod still
    # pending; the switch to Duplicated capped c at 1 and moved 25 of its max onto a (max 51 > F.max 26),
    # and c stayed capped when its room came back, below the floor
    f = fhpa("Prioritized", 15, 26, priorities={"a": 2, "b": 1, "c": 0})
    table = {"a": (10, 23), "b": (2, 2), "c": (1, 1)}
    f = with_bounds(f, table, optimized_ago=0)
    assert f.status is not None and f.status.clusters is not None
    f.status.clusters[2].state = "Saturated"
    duplicated = f.model_copy(deep=True)
    duplicated.spec.federated_hpa_assignment.federated_hpa_assignment_type = "Duplicated"
    duplicated.metadata.generation = (f.metadata.generation or 1) + 1
    fleet = [obs("a", 10, 10), obs("b", 2, 2), obs("c", 1, 0, ready_replicas=0, pending_replicas=1)]
    p = run(duplicated, fleet)
    assert bounds(p) == {"a": (15, 26), "b": (15, 26), "c": (15, 26)}
    assert "ScaledAcrossClusters" not in reasons(p)


def test_a_full_cluster_keeps_what_it_gave_when_nobody_has_room_for_it() -> None:
    """Found by a user-level review: onprem, Saturated under its quota (room 20, runs 18, max 50), and a
    cloud at all its room (max 100 of 100). The 2 between what onprem ran and its room were neither
    its excess nor anybody's share, so they went to the excess's home, the cloud, above its room: 2 of
    max a minute, 100 to 132, each period an Optimized event and two member writes."""
    slots = {
        "cloud": Slot(cluster=obs("cloud", 49, 100), min_replicas=1, max_replicas=100),
        "onprem": Slot(cluster=obs("onprem", 18, 20), min_replicas=2, max_replicas=50, saturated=True),
    }
    fleet = Fleet(fhpa=fhpa("Aggregated", 2, 150), now=T0, slots=slots)
    assert not optimization.optimize(fleet, "period optimization")
    assert (slots["cloud"].max_replicas, slots["onprem"].max_replicas) == (100, 50)
    # room appears in the cloud (it runs fewer and its room grew): then onprem's slack moves there
    slots["cloud"].cluster = obs("cloud", 49, 130)
    assert optimization.optimize(fleet, "period optimization")
    assert slots["cloud"].max_replicas <= 130 and slots["onprem"].max_replicas >= 20
