"""The initial assignment of DESIGN §3: every worked example, keep-what-runs, and initial replicas."""

from __future__ import annotations

from datetime import timedelta

from controller.planning.assignment import (
    Assignment,
    Terms,
    hold_the_floor,
    initial_assignment,
    keep_what_runs,
)
from controller.planning.observation import CapacityObservation
from tests.support.planning_builders import T0, bounds, fhpa, obs, owned_hpa, run, writes

STATIC = {"member1": 1, "member2": 2, "member3": 3}


def as_pairs(result: Assignment) -> dict[str, tuple[int, int]]:
    return {n: (b.min_replicas, b.max_replicas) for n, b in result.bounds.items() if b.has_hpa}


def test_seed000_duplicated() -> None:
    f = fhpa("Duplicated", 3, 10, clusters=["member1", "member2", "member3", "member5"])
    fleet = [
        obs("member1", 1),
        obs("member2", 4),
        obs("member3", 20),
        obs("member4", 5, hpa=owned_hpa(f, 3, 10, 5)),  # ours from before; no longer in the affinity
        obs("member5", 0),
    ]
    p = run(f, fleet)
    assert bounds(p) == {n: (3, 10) for n in ("member1", "member2", "member3", "member5")}
    # replicas 3/4/10/3: member2's 4 is inside [3, 10] and is not written
    assert writes(p) == {"member1": 3, "member3": 10, "member5": 3}
    assert {a.cluster: a.op for a in p.hpa_actions} == {
        "member1": "create",
        "member2": "create",
        "member3": "create",
        "member4": "delete",
        "member5": "create",
    }


def test_seed000_duplicated_removes_the_hpa_of_a_cluster_left_out() -> None:
    f = fhpa("Duplicated", 3, 10, clusters=["member1"])
    fleet = [obs("member1", 3, hpa=owned_hpa(f, 3, 10, 3)), obs("member4", 5, hpa=owned_hpa(f, 3, 10, 5))]
    p = run(f, fleet)
    assert [(a.cluster, a.op) for a in p.hpa_actions] == [("member4", "delete")]
    assert writes(p) == {}


def test_seed002_static_weighted() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights=STATIC)
    fleet = [obs("member1", 1), obs("member2", 4), obs("member3", 0)]
    # divide() gives max 1/3/6; keep-what-runs moves one from member3 to member2
    assert as_pairs(initial_assignment(f, fleet)) == {"member1": (1, 1), "member2": (1, 4), "member3": (2, 5)}
    assert writes(run(f, fleet)) == {"member3": 2}  # replicas 1/4/2


def test_seed002_static_weighted_scaling_to_zero_leaves_the_empty_cluster_at_zero() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights=STATIC, scalingToZero=True)
    p = run(f, [obs("member1", 1), obs("member2", 4), obs("member3", 0)])
    assert bounds(p) == {"member1": (1, 1), "member2": (1, 4), "member3": (2, 5)}
    assert writes(p) == {}  # replicas 1/4/0


def test_seed002_dynamic_weighted() -> None:
    f = fhpa("DynamicWeighted", 8, 24)
    fleet = [obs("member1", 0, 1), obs("member2", 0, 5), obs("member3", 0, 2)]
    # the capacity cap: each max cut to what its cluster holds, the 16 nobody holds on the most available
    assert as_pairs(initial_assignment(f, fleet)) == {
        "member1": (1, 1),
        "member2": (5, 21),
        "member3": (2, 2),
    }


def test_seed002_aggregated_maxes_sum_to_federated_max() -> None:
    f = fhpa("Aggregated", 8, 24)
    fleet = [obs("member1", 0, 8), obs("member2", 0, 2), obs("member3", 0, 2)]
    # the seed's 18 would leave the maxes summing to 22; what nobody holds goes to the first
    assert as_pairs(initial_assignment(f, fleet)) == {
        "member1": (8, 20),
        "member2": (1, 2),
        "member3": (1, 2),
    }


def test_seed002_prioritized() -> None:
    f = fhpa("Prioritized", 8, 24, priorities={"member1": 2, "member2": 1})
    fleet = [obs("member1", 15, 20), obs("member2", 0, 1)]
    assert as_pairs(initial_assignment(f, fleet)) == {"member1": (8, 23), "member2": (1, 1)}
    assert writes(run(f, fleet)) == {"member2": 1}  # replicas 15 and 1


def test_seed002_prioritized_scaling_to_zero() -> None:
    f = fhpa("Prioritized", 8, 24, priorities={"member1": 2, "member2": 1}, scalingToZero=True)
    p = run(f, [obs("member1", 15, 20), obs("member2", 0, 1)])
    assert bounds(p) == {"member1": (8, 23), "member2": (1, 1)}
    assert writes(p) == {}  # replicas 15 and 0


def test_aggregated_orders_by_available_ties_by_name() -> None:
    f = fhpa("Aggregated", 1, 6)
    fleet = [obs("b", 0, 3), obs("a", 0, 3), obs("c", 0, 5)]
    assert as_pairs(initial_assignment(f, fleet)) == {"c": (1, 5), "a": (1, 1)}


def test_cluster_without_a_preference_gets_no_share() -> None:
    f = fhpa("StaticWeighted", 1, 4, weights={"a": 1})
    assert as_pairs(initial_assignment(f, [obs("a"), obs("b")])) == {"a": (1, 4)}


def test_keep_what_runs_takes_from_the_largest_surplus_first() -> None:
    # b runs 6 with max 2; surpluses: a 4-0=4, c 4-1=3: a gives twice, then a and c tie (by name: a)
    assert keep_what_runs({"a": 4, "b": 2, "c": 4}, {"a": 0, "b": 6, "c": 1}) == {"a": 1, "b": 6, "c": 3}


def test_keep_what_runs_stops_when_surplus_runs_out() -> None:
    # F.max 6 below the 9 that run: a is served first (name order) and c has no surplus left for b
    assert keep_what_runs({"a": 2, "b": 2, "c": 2}, {"a": 4, "b": 5, "c": 0}) == {"a": 4, "b": 2, "c": 0}


def test_keep_what_runs_leaves_idle_clusters_with_no_share_alone() -> None:
    assert keep_what_runs({"a": 0, "b": 5}, {"a": 0, "b": 2}) == {"a": 0, "b": 5}


def test_keep_what_runs_gives_a_running_cluster_the_split_left_out_its_replicas_back() -> None:
    # DESIGN §4 promise 2: a running cluster keeps an HPA; here b has the surplus to give all of it
    assert keep_what_runs({"a": 0, "b": 5}, {"a": 3, "b": 0}) == {"a": 3, "b": 2}


def test_keep_what_runs_gives_every_running_cluster_one_replica_of_max_before_raising_any() -> None:
    # F.max 4 below the 6 that run, all given to a by the split: b and c get 1 each first, then a keeps 2
    assert keep_what_runs({"a": 4, "b": 0, "c": 0}, {"a": 2, "b": 2, "c": 2}) == {"a": 2, "b": 1, "c": 1}


def test_aggregated_keeps_a_small_running_cluster_under_an_hpa() -> None:
    # the audit's case: F.max far above what runs, Aggregated fills a; b's 6 replicas keep an HPA
    p = run(fhpa("Aggregated", 2, 100), [obs("a", 10, 200), obs("b", 6, 50)])
    assert bounds(p) == {"a": (2, 94), "b": (1, 6)}
    assert writes(p) == {}


def test_a_running_cluster_with_no_share_left_is_drained() -> None:
    # F.max 1 below what runs in two clusters: no surplus for b, so b is drained instead of left unmanaged
    p = run(fhpa("Aggregated", 1, 1), [obs("a", 3, 10), obs("b", 2, 5)])
    assert bounds(p) == {"a": (1, 1)}
    assert writes(p) == {"a": 1, "b": 0}  # a clamped to its max, as every assignment does
    assert not any(a.cluster == "b" and a.op != "delete" for a in p.hpa_actions)


def terms(available: dict[str, int | None], current: dict[str, int] | None = None) -> Terms:
    now = {n: (current or {}).get(n, 0) for n in available}
    return Terms(available=available, current=now, runs=now, ready=now)


def test_step_four_lifts_a_min_to_one_and_caps_it_at_max_and_room() -> None:
    maxes, mins = hold_the_floor(
        {"a": 3, "b": 2, "c": 0}, {"a": 0, "b": 5, "c": 1}, terms(dict.fromkeys("abc")), 0, "abc"
    )
    assert (maxes, mins) == ({"a": 3, "b": 2, "c": 0}, {"a": 1, "b": 2})
    _, mins = hold_the_floor({"a": 3, "b": 6}, {"a": 2, "b": 5}, terms({"a": 0, "b": 4}), 0, "ab")
    assert mins == {"a": 1, "b": 4}  # a holds nothing: min 1, which holds no replica


def test_step_five_raises_the_mins_where_there_is_room() -> None:
    # keep-what-runs took b's max down to 2: its min 5 is capped, the shortfall goes where there is room
    maxes, mins = hold_the_floor({"a": 8, "b": 2}, {"a": 5, "b": 5}, terms(dict.fromkeys("ab")), 10, "ab")
    assert (maxes, mins) == ({"a": 8, "b": 2}, {"a": 8, "b": 2})


def test_step_five_moves_max_from_the_widest_gap_to_the_first_with_room() -> None:
    # a holds 4 with max 16, c (weight 0, last in order) holds 10 with max 0; F 10 needs two more
    maxes, mins = hold_the_floor(
        {"a": 16, "b": 4, "c": 0}, {"a": 5, "b": 5, "c": 0}, terms({"a": 4, "b": 4, "c": 10}), 10, "abc"
    )
    assert maxes == {"a": 14, "b": 4, "c": 2}
    assert mins == {"a": 4, "b": 4, "c": 2}


def test_first_replicas_clamp_what_runs_and_leave_empty_clusters_at_zero_under_scaling_to_zero() -> None:
    fleet = [obs("a", 0), obs("b", 9), obs("c", 1)]
    weights = {"a": 1, "b": 1, "c": 1}
    plain = initial_assignment(fhpa("StaticWeighted", 6, 30, weights=weights), fleet)
    assert plain.replicas == {"a": 2, "b": 9, "c": 2}
    to_zero = initial_assignment(fhpa("StaticWeighted", 6, 30, weights=weights, scalingToZero=True), fleet)
    assert to_zero.replicas == {"a": 0, "b": 9, "c": 2}


def test_keep_what_runs_keeps_what_is_scheduled_not_what_pends() -> None:
    # found by the fleet state machine: m2 runs 6 but can hold 5 (1 pends). Keeping a max of 6 there
    # took it from m3, which has room, and the pod pended below the floor F.min 36 (capacity 37)
    f = fhpa("Prioritized", 36, 36, priorities={"m3": 1})
    fleet = [obs("m1", 0, 1), obs("m2", 6, 5, pending_replicas=1), obs("m3", 0, 31)]
    p = run(f, fleet)
    assert bounds(p)["m2"][1] == 5
    w = writes(p)
    assert w.get("m1", 0) + min(w.get("m2", 6), 5) + w.get("m3", 0) >= 36  # scheduled at once


def test_pods_waiting_for_nodes_do_not_outrank_ready_pods_when_a_flapper_rejoins() -> None:
    # found by the fleet state machine (seed 72): a (weight 3) stood in for b, runs 12 and waits for
    # nodes for 10 more; b, failed over within the hour, answers again running 22 Ready. F.max 34 keeps
    # 34 of the 44: a's 10 pods without a node give way, not b's 22 that serve (the floor F.min 30 is
    # then held at once instead of after the nodes come)
    f = fhpa("StaticWeighted", 30, 34, weights={"a": 3, "b": 0})
    group = CapacityObservation(firm=12, elastic=10, source="cluster-autoscaler", pods_per_node=2)
    a = obs("a", 22, 22, ready_replicas=12, pending_coming_replicas=10, capacity=group)
    b = obs("b", 22, 22)
    result = initial_assignment(f, [a, b], flapped={"b": T0})
    assert as_pairs(result)["b"][1] == 22
    assert as_pairs(result)["a"][1] == 12


def test_a_split_by_weight_gives_way_to_the_floor_where_capacity_is_known() -> None:
    # found by the fleet state machine: 23 by equal weights is 8/8/7, but m1 can hold 1 and m2 13, so
    # the mins (capped at what each holds) reached only 16 of F.min 21 until optimizations moved max
    p = run(
        fhpa("StaticWeighted", 21, 23, weights={"m1": 1, "m2": 1, "m3": 1}),
        [obs("m1", 0, 1), obs("m2", 0, 13), obs("m3", 0, 7)],
    )
    b = bounds(p)
    assert sum(lo for lo, _ in b.values()) >= 21
    assert sum(hi for _, hi in b.values()) == 23
    assert b["m1"][0] <= 1 and b["m3"][0] <= 7 and b["m2"][0] <= 13


def test_a_split_by_weight_is_capped_at_what_each_cluster_holds() -> None:
    # 23 by equal weights is 8/8/7; m1 holds 1, so the 7 above that are divided again over the clusters
    # still below their room: m2 takes 5 up to its 13 (m3 is at its 7); the 2 nobody holds are the
    # excess, on the first in order of preference (equal weights: by name, m1)
    p = run(
        fhpa("StaticWeighted", 3, 23, weights={"m1": 1, "m2": 1, "m3": 1}),
        [obs("m1", 0, 1), obs("m2", 0, 13), obs("m3", 0, 7)],
    )
    assert {n: hi for n, (_, hi) in bounds(p).items()} == {"m1": 3, "m2": 13, "m3": 7}


def test_the_floor_outranks_a_weight_of_zero_when_the_weighted_clusters_cannot_hold_it() -> None:
    # found by the fleet state machine: m1 (weight 1) can hold nothing, m2 (weight 0) has room; the
    # split gave m2 no share and the fleet ran 0 < F.min 1 for good
    p = run(
        fhpa("StaticWeighted", 1, 1, weights={"m1": 1, "m2": 0}),
        [obs("m1", 0, 0), obs("m2", 0, 1)],
    )
    assert bounds(p)["m2"] == (1, 1)
    assert writes(p).get("m2") == 1


def test_a_weight_of_zero_gets_nothing_while_the_weighted_clusters_hold_the_floor() -> None:
    p = run(
        fhpa("StaticWeighted", 2, 4, weights={"m1": 1, "m2": 0}),
        [obs("m1", 0, 3), obs("m2", 0, 10)],
    )
    assert bounds(p).get("m2", (0, 0))[1] == 0


def test_a_cluster_that_flapped_gives_way_to_the_stand_in_when_f_max_cannot_keep_both() -> None:
    # found by the fleet state machine: a failed over, b took over, a rejoined with its pods; F.max 1
    # keeps one of them. Draining b left the fleet at 0 when a went down again for its grown grace
    assert keep_what_runs({"a": 1, "b": 0}, {"a": 1, "b": 1}) == {"a": 1, "b": 0}
    assert keep_what_runs({"a": 1, "b": 0}, {"a": 1, "b": 1}, {"a": T0}) == {"a": 0, "b": 1}
    # a surplus is still taken first: the flapper keeps what runs when F.max allows it
    assert keep_what_runs({"a": 3, "b": 0}, {"a": 1, "b": 1}, {"a": T0}) == {"a": 2, "b": 1}
    # both failed over within the hour (found by the state machine): the later failover gives way
    earlier, later = T0, T0 + timedelta(minutes=9)
    assert keep_what_runs({"a": 1, "b": 0}, {"a": 1, "b": 1}, {"a": later, "b": earlier}) == {"a": 0, "b": 1}
    assert keep_what_runs({"a": 0, "b": 1}, {"a": 1, "b": 1}, {"a": earlier, "b": later}) == {"a": 1, "b": 0}


def test_a_weight_of_zero_with_unknown_capacity_takes_what_the_weighted_clusters_cannot_hold() -> None:
    # found by review: unknown capacity counted as room for the weighted clusters but not for weight 0
    p = run(fhpa("StaticWeighted", 10, 40, weights={"a": 1, "b": 0}), [obs("a", 2, 3), obs("b", 0, None)])
    assert sum(lo for lo, _ in bounds(p).values()) >= 10


def test_a_flapper_does_not_give_way_to_a_stand_in_still_starting() -> None:
    # found by review: a 30 s blip of a sole holder; the stand-in's 38 pods were still starting and
    # the flapper's Ready, serving pods were drained for them
    later = T0 + timedelta(minutes=1)
    result = keep_what_runs({"p": 60, "s": 0}, {"p": 38, "s": 38}, {"p": later}, {"p": 38, "s": 0})
    assert result["p"] >= 38


def test_a_cloud_cluster_at_zero_nodes_is_room_for_the_cap() -> None:
    # Prioritized, a fixed on-prem cluster first and a cloud whose node group scales up from zero nodes:
    # its available is firm 0 + elastic 40, so the cap gives it what on-prem cannot hold
    cloud = CapacityObservation(firm=0, elastic=40, source="cluster-autoscaler")
    onprem = CapacityObservation(firm=5)
    f = fhpa("Prioritized", 2, 30, priorities={"onprem": 2, "cloud": 1})
    fleet = [obs("onprem", 0, 5, capacity=onprem), obs("cloud", 0, 40, capacity=cloud)]
    assert as_pairs(initial_assignment(f, fleet)) == {"onprem": (2, 5), "cloud": (1, 25)}
    # the same fleet with the cloud counted at its firm room only would park everything on-prem
    firm_only = [fleet[0], obs("cloud", 0, 0, capacity=cloud)]
    assert as_pairs(initial_assignment(f, firm_only)) == {"onprem": (2, 30)}


def test_the_excess_goes_to_the_first_cluster_in_order_that_holds_a_replica() -> None:
    # F.max 16 over clusters that hold 4 in all: the heaviest cluster holds nothing (capacity 0), so the
    # 12 nobody has room for go to the next in order of preference that holds something; on the
    # roomless cluster they would make an HPA over pods that never run, and move at each failover
    f = fhpa("StaticWeighted", 4, 16, weights={"m1": 2, "m3": 3, "m5": 1})
    fleet = [obs("m1", 1, 1), obs("m3", 0, 0), obs("m5", 3, 3)]
    assert as_pairs(initial_assignment(f, fleet)) == {"m1": (1, 13), "m5": (3, 3)}
    # when no cluster holds anything, the excess stays on the first in order, as before
    empty = [obs("m1", 0, 0), obs("m3", 0, 0)]
    assert as_pairs(initial_assignment(f, empty))["m3"] == (1, 16)


def test_under_prioritized_a_rejoining_cluster_keeps_what_it_runs_from_the_bottom_of_the_order() -> None:
    """Three clusters of one priority (room 60 each), F.max 90: east holds max 60 and north 20 when west
    rejoins running 10. The split walks east, north, west (the holders first) and leaves west nothing;
    west's 10 then come from the last in that order with a surplus, north, as the optimization would
    place them: east keeps its 60 instead of giving 10 up at the rejoin and taking them back a period
    later (four reversals an hour on the queue-outage fleet under Prioritized)."""
    f = fhpa("Prioritized", 3, 90, priorities={"east": 1, "west": 1, "north": 1})
    fleet = [
        obs("east", 21, 60, hpa=owned_hpa(f, 3, 60, 21)),
        obs("north", 10, 60, hpa=owned_hpa(f, 1, 20, 10)),
        obs("west", 10, 60),
    ]
    assert {n: b for n, (_, b) in as_pairs(initial_assignment(f, fleet)).items()} == {
        "east": 60,
        "north": 20,
        "west": 10,
    }
    # other policies keep taking from the largest surplus
    assert keep_what_runs({"east": 60, "north": 30, "west": 0}, {"east": 21, "north": 10, "west": 10}) == {
        "east": 50,
        "north": 30,
        "west": 10,
    }
