"""simulator.promises over hand-built fleets: each promise breached just past its tolerance is one
violation, just under is none; drains, outages, Duplicated and changing demand as DESIGN §4 says."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.promises import (
    CALM_WINDOW_S,
    CEILING,
    CHURN,
    FLOOR,
    MAX_SUM_BELOW,
    UNMANAGED,
    PromiseTerms,
    is_flat,
    measure,
)
from simulator.samples import ClusterSample, StepSample

DT = 15.0
TERMS = PromiseTerms(step_s=DT, failover_grace_s=60, optimization_period_s=60, policy="StaticWeighted")
DUPLICATED = replace(TERMS, policy="Duplicated")


def cluster(
    replicas: int = 2,
    *,
    ready: int | None = None,
    pending: int = 0,
    capacity: int = 50,
    down: bool = False,
    hpa: tuple[int, int] | None = (1, 10),
    selected: bool = True,
    workload: bool = True,
    foreign_hpa: bool = False,
    drained: bool = False,
) -> ClusterSample:
    return ClusterSample(
        replicas=replicas,
        ready=replicas - pending if ready is None else ready,
        starting=0,
        pending=pending,
        capacity=capacity,
        down=down,
        hpa_min=hpa[0] if hpa else None,
        hpa_max=hpa[1] if hpa else None,
        hpa_desired=replicas if hpa else None,
        utilization=50.0,
        served_rps=0.0,
        selected=selected,
        workload=workload,
        foreign_hpa=foreign_hpa,
        drained=drained,
    )


def healthy() -> dict[str, ClusterSample]:
    """Two clusters that keep every promise: 2 + 2 replicas (F.min 4), maxes 10 + 10 (F.max 20)."""
    return {"a": cluster(), "b": cluster()}


def steps(*fleets: dict[str, ClusterSample], demand: float | list[float] = 1000.0) -> list[StepSample]:
    return [
        StepSample(
            t=i * DT,
            demand_rps=demand[i] if isinstance(demand, list) else demand,
            served_rps=0.0,
            oracle_rps=0.0,
            controller_up=True,
            fhpa_min=4,
            fhpa_max=20,
            clusters=fleet,
        )
        for i, fleet in enumerate(fleets)
    ]


def run(before: int, bad: dict[str, ClusterSample], count: int, after: int = 4) -> list[StepSample]:
    """``before`` healthy steps, ``count`` steps of ``bad``, ``after`` healthy steps."""
    return steps(*([healthy()] * before + [bad] * count + [healthy()] * after))


def kinds(report_steps: list[StepSample], terms: PromiseTerms = TERMS) -> list[str]:
    return [v.kind for v in measure(report_steps, terms).violations]


def test_a_fleet_that_keeps_every_promise_reports_nothing():
    report = measure(steps(*[healthy()] * 300), TERMS)
    assert report.violations == []
    assert report.figures() == {
        "floor_breach_seconds": 0.0,
        "unmanaged_replica_seconds": 0.0,
        "over_max_seconds": 0.0,
        "max_reversals": 0,
        "zero_flips": 0,
        "replica_writes": 0,
        "allowed_moves": 0,
    }


# --- 1. floor: min(F.min, capacity) scheduled replicas, failover grace + one pass (75 s) ---------------

BELOW_FLOOR = {"a": cluster(2), "b": cluster(0)}  # 2 scheduled, F.min 4, room for 100


def test_floor_broken_just_past_the_grace_plus_one_pass_is_one_violation():
    report = measure(run(3, BELOW_FLOOR, 6), TERMS)  # 90 s > 60 s + 15 s
    assert [(v.t, v.kind) for v in report.violations] == [(3 * DT, FLOOR)]
    assert "2 scheduled replicas below the floor 4" in report.violations[0].detail
    assert report.floor_breach_seconds == 90


def test_floor_broken_for_exactly_the_grace_plus_one_pass_is_no_violation():
    report = measure(run(3, BELOW_FLOOR, 5), TERMS)  # 75 s
    assert report.violations == [] and report.floor_breach_seconds == 0


def test_a_long_breach_is_reported_once_and_two_breaches_twice():
    assert kinds(run(0, BELOW_FLOOR, 200)) == [FLOOR]
    twice = steps(*([BELOW_FLOOR] * 8 + [healthy()] + [BELOW_FLOOR] * 8))
    assert kinds(twice) == [FLOOR, FLOOR]


def test_the_floor_is_capped_by_what_the_eligible_clusters_can_hold():
    full = {"a": cluster(2, capacity=2), "b": cluster(1, capacity=1)}  # F.min 4, room for 3: all used
    assert kinds(steps(*[full] * 20)) == []
    short = {"a": cluster(2, capacity=2), "b": cluster(0, capacity=1)}
    assert kinds(steps(*[short] * 20)) == [FLOOR]


def test_pending_pods_do_not_hold_the_floor():
    # a runs 4 replicas but has room for 2; b, with room, sits at 0
    stuck = {"a": cluster(4, pending=2, capacity=2), "b": cluster(0)}
    assert kinds(steps(*[stuck] * 20)) == [FLOOR]


@pytest.mark.parametrize(
    "elsewhere",
    [
        cluster(4, down=True),  # unreachable replicas do not serve
        cluster(4, selected=False),  # not the FederatedHPA's cluster
    ],
    ids=["down", "not-selected"],
)
def test_only_reachable_selected_clusters_count_for_the_floor(elsewhere):
    fleet = {"a": elsewhere, "b": cluster(0)}
    assert kinds(steps(*[fleet] * 20)) == [FLOOR]


def test_a_cluster_without_the_workload_adds_no_room():
    fleet = {"a": cluster(2, capacity=2), "b": cluster(0, workload=False, hpa=(1, 10))}
    assert kinds(steps(*[fleet] * 20)) == []  # the floor is min(4, 2) = 2


def with_outage(fleets: list[dict[str, ClusterSample]], down: range) -> list[StepSample]:
    out = steps(*fleets)
    for i in down:
        out[i].controller_up = False
    return out


@pytest.mark.parametrize(("after", "expected"), [(5, []), (6, [(FLOOR, 14 * DT)])])
def test_a_controller_outage_restarts_the_clock(after, expected):
    # 60 s below the floor, 150 s with the controller down, then 75 s (none) or 90 s (one, from its return)
    fleet = with_outage([BELOW_FLOOR] * (14 + after) + [healthy()] * 3, down=range(4, 14))
    assert [(v.kind, v.t) for v in measure(fleet, TERMS).violations] == expected


WAITING = {"a": cluster(4, pending=1), "b": cluster(0)}  # 3 scheduled, F.min 4: a node is on its way
EVICTED = {"a": cluster(4, pending=3, capacity=1), "b": cluster(0)}  # a's room falls under what it ran
IDLE_NODES_GONE = {"a": cluster(4, pending=1, capacity=3), "b": cluster(0)}  # a still runs its 3


@pytest.mark.parametrize(("after", "expected"), [(5, []), (6, [(FLOOR, 4 * DT)])])
def test_a_loss_of_room_that_evicts_replicas_restarts_the_clock(after, expected):
    # 60 s below the floor, then an eviction: 75 s more (none) or 90 s (one, from the eviction)
    fleet = steps(*([WAITING] * 4 + [EVICTED] * after + [healthy()] * 3))
    assert [(v.kind, v.t) for v in measure(fleet, TERMS).violations] == expected


def test_a_loss_of_room_that_evicts_nothing_does_not_restart_the_clock():
    fleet = steps(*([WAITING] * 4 + [IDLE_NODES_GONE] * 5 + [healthy()] * 3))
    assert [(v.kind, v.t) for v in measure(fleet, TERMS).violations] == [(FLOOR, 0.0)]


SHORT = {"a": cluster(2), "b": cluster(1)}  # 3 scheduled, F.min 4
B_DESELECTED = {"a": cluster(2), "b": cluster(1, selected=False)}


@pytest.mark.parametrize(("after", "expected"), [(5, []), (6, [(FLOOR, 4 * DT)])])
def test_a_cluster_taken_out_of_the_selection_while_it_runs_restarts_the_clock(after, expected):
    fleet = steps(*([SHORT] * 4 + [B_DESELECTED] * after + [healthy()] * 3))
    assert [(v.kind, v.t) for v in measure(fleet, TERMS).violations] == expected


def test_an_outage_does_not_restart_the_clock():
    b_down = {"a": cluster(2), "b": cluster(1, down=True)}
    fleet = steps(*([SHORT] * 4 + [b_down] * 5 + [healthy()] * 3))
    assert [(v.kind, v.t) for v in measure(fleet, TERMS).violations] == [(FLOOR, 0.0)]


def flapper_held(graces: list[float | None], controller_down: range = range(0)) -> list[StepSample]:
    """a runs 2 of F.min 4 while f, unreachable from step 0, holds the rest of the max: one step per
    grace recorded for f (its failover grace at that step), then the floor is back."""
    short = [{"a": cluster(2), "f": replace(cluster(4, down=True), failover_grace_s=g)} for g in graces]
    return with_outage([*short, healthy(), healthy()], down=controller_down)


def floor_clock(found: list[StepSample]) -> list[tuple[str, float]]:
    return [(v.kind, v.t) for v in measure(found, TERMS).violations]


@pytest.mark.parametrize(("short", "expected"), [(29, []), (30, [(FLOOR, 0.0)])])
def test_a_flappers_grown_grace_past_the_flags_grace_does_not_count(short, expected):
    # f's grace grew to 420 s: 60 s counted, 60-405 s not, then its failover's pass and one more (75 s)
    assert floor_clock(flapper_held([420.0] * short)) == expected


def test_without_a_grown_grace_the_flags_grace_is_all_the_floor_waits():
    assert floor_clock(flapper_held([None] * 6)) == [(FLOOR, 0.0)]
    assert floor_clock(flapper_held([60.0] * 6)) == [(FLOOR, 0.0)]
    assert floor_clock(flapper_held([60.0] * 5)) == []


def test_the_grace_recorded_after_the_failover_is_not_this_spells():
    # failed over at 420 s, its next grace (1860 s) shows from then on: the floor is owed at 435 s
    assert floor_clock(flapper_held([420.0] * 28 + [1860.0] * 2)) == [(FLOOR, 0.0)]


def test_a_grace_that_shrinks_during_the_spell_counts_shrunk():
    # an hour after its last failover f's grace falls back to 60 s at 150 s: it is failed over then
    assert floor_clock(flapper_held([420.0] * 10 + [60.0])) == []
    assert floor_clock(flapper_held([420.0] * 10 + [60.0] * 2)) == [(FLOOR, 0.0)]


def test_a_spell_the_controller_did_not_see_counts_from_its_return():
    # f went down while the controller was down (steps 0-5): the controller's grace starts at its return
    back = 6 * DT
    assert floor_clock(flapper_held([420.0] * (6 + 29), controller_down=range(6))) == []
    assert floor_clock(flapper_held([420.0] * (6 + 30), controller_down=range(6))) == [(FLOOR, back)]


# --- 2. every replica under an HPA: one optimization period (60 s) ----------------------------------------

UNMANAGED_B = {"a": cluster(2, hpa=(1, 20)), "b": cluster(3, hpa=None)}  # a holds all of F.max


def test_replicas_without_an_hpa_just_past_one_optimization_period_are_one_violation():
    report = measure(run(2, UNMANAGED_B, 5), TERMS)  # 75 s > 60 s
    assert [(v.t, v.kind) for v in report.violations] == [(2 * DT, UNMANAGED)]
    assert report.violations[0].detail.startswith("b: 3 replicas running with no member HPA")
    assert report.unmanaged_replica_seconds == 3 * 75


def test_replicas_without_an_hpa_for_one_optimization_period_are_no_violation():
    report = measure(run(2, UNMANAGED_B, 4), TERMS)  # 60 s
    assert report.violations == [] and report.unmanaged_replica_seconds == 0


@pytest.mark.parametrize(
    "b",
    [
        cluster(3, hpa=None, foreign_hpa=True),  # ConflictingHPA: the user's HPA scales them
        cluster(3, hpa=None, selected=False),  # not the FederatedHPA's cluster
        cluster(3, hpa=None, down=True),  # unreachable: nothing can act on it
        cluster(0, hpa=None),  # nothing runs
    ],
    ids=["foreign-hpa", "not-selected", "down", "no-replicas"],
)
def test_these_are_not_unmanaged_replicas(b):
    assert kinds(steps(*[{"a": cluster(4, hpa=(1, 20)), "b": b}] * 20)) == []


def test_a_cluster_that_left_the_selection_still_owes_every_replica_an_hpa():
    was = {"a": cluster(4, hpa=(1, 10)), "b": cluster(3, hpa=(1, 10))}
    left = {"a": cluster(4, hpa=(1, 20)), "b": cluster(3, hpa=None, selected=False)}
    report = measure(steps(*[was] * 2, *[left] * 6), TERMS)  # 90 s of b's replicas with no HPA
    assert [v.kind for v in report.violations] == [UNMANAGED]
    assert report.violations[0].detail.startswith("b: 3 replicas running with no member HPA")


def test_a_cluster_de_selected_while_it_was_down_was_never_the_controllers_to_drain():
    # selected but unreachable from the start, then de-selected, then back with replicas of its own:
    # the controller never reached it while it was selected, so nothing of it is the controller's
    was = {"a": cluster(4, hpa=(1, 20)), "b": cluster(3, hpa=None, down=True)}
    left = {"a": cluster(4, hpa=(1, 20)), "b": cluster(3, hpa=None, selected=False)}
    assert kinds(steps(*[was] * 3, *[left] * 8)) == []


def drain(replicas: list[int], written: int) -> list[StepSample]:
    """b has no HPA while the controller writes its replicas down at the first ``written`` steps."""
    fleets = [
        {"a": cluster(4, hpa=(1, 20)), "b": cluster(r, hpa=None, drained=i < written)}
        for i, r in enumerate(replicas)
    ]
    return steps(*fleets, *[healthy()] * 3)


def test_a_drain_the_controller_writes_is_not_a_breach_while_it_lasts():
    # 8 steps (120 s) without an HPA: the first 60 s are the drain, then 60 s more
    report = measure(drain([8, 6, 4, 3, 2, 2, 1, 1], written=5), TERMS)
    assert report.violations == [] and report.unmanaged_replica_seconds == 0


def test_the_same_steps_without_the_controllers_writes_are_a_breach():
    assert kinds(drain([8, 6, 4, 3, 2, 2, 1, 1], written=0)) == [UNMANAGED]


def test_a_drain_that_outlasts_its_optimization_period_is_a_breach():
    report = measure(drain([8, 6, 4, 3] + [2] * 5, written=4), TERMS)  # 60 s drain, then 75 s
    assert kinds(drain([8, 6, 4, 3] + [2] * 5, written=4)) == [UNMANAGED]
    assert "60s of it a drain the controller wrote" in report.violations[0].detail
    assert report.unmanaged_replica_seconds == 2 * 75  # the drain itself is not counted


# --- 3. ceiling: reachable member maxes sum to at most F.max, one pass (15 s) -----------------------------

OVER_MAX = {"a": cluster(hpa=(1, 15)), "b": cluster(hpa=(1, 10))}  # 25 > 20


def test_maxes_above_federated_max_for_two_passes_are_one_violation():
    report = measure(run(2, OVER_MAX, 2), TERMS)
    assert [(v.t, v.kind) for v in report.violations] == [(2 * DT, CEILING)]
    assert "reachable member maxes sum to 25 > F.max 20" in report.violations[0].detail
    assert report.over_max_seconds == 30


def test_maxes_above_federated_max_for_one_pass_are_no_violation():
    report = measure(run(2, OVER_MAX, 1), TERMS)
    assert report.violations == [] and report.over_max_seconds == 0


def test_an_unreachable_clusters_stale_max_does_not_count_until_it_answers():
    stale = {"a": cluster(4, hpa=(1, 20)), "b": cluster(hpa=(1, 10), down=True)}
    assert kinds(steps(*[stale] * 20)) == []
    back = {"a": cluster(4, hpa=(1, 20)), "b": cluster(hpa=(1, 10))}
    assert kinds(steps(*[stale] * 10, *[back] * 3)) == [CEILING]


@pytest.mark.parametrize(("after", "expected"), [(1, []), (2, [CEILING])])
def test_a_controller_outage_stops_the_ceiling_clock_too(after, expected):
    fleet = with_outage([OVER_MAX] * (11 + after) + [healthy()] * 3, down=range(1, 11))
    assert kinds(fleet) == expected  # one pass over before the outage, then ``after`` passes


def test_maxes_summing_below_federated_max_for_two_passes_are_reported():
    under = {"a": cluster(hpa=(1, 5)), "b": cluster(hpa=(1, 10))}
    assert kinds(run(2, under, 1)) == []
    assert kinds(run(2, under, 2)) == [MAX_SUM_BELOW]
    lost = {"a": cluster(4, hpa=(1, 10)), "b": cluster(hpa=(1, 10), down=True)}  # down: still its share
    assert kinds(run(2, lost, 10)) == []


# --- 4. calm: at most 4 reversals of one member max within an hour of flat demand ------------------------


def bouncing(reversals: int, every: int = 4, demand: float | list[float] = 1000.0) -> list[StepSample]:
    """a's max goes 10 -> 12 -> 10 -> 12 ...: ``reversals`` reversals, a move every ``every`` steps."""
    fleets: list[dict[str, ClusterSample]] = []
    for move in range(reversals + 2):
        high = move % 2 == 1
        a = cluster(hpa=(1, 12 if high else 10))
        b = cluster(hpa=(1, 8 if high else 10))  # b gives way: the sum stays 20
        fleets += [{"a": a, "b": b}] * every
    return steps(*fleets, demand=demand)


def test_five_reversals_within_an_hour_of_flat_demand_are_one_violation_per_member():
    report = measure(bouncing(5), TERMS)
    assert [v.kind for v in report.violations] == [CHURN, CHURN]
    assert report.violations[0].detail.startswith("a: member max reversed direction 5 times")
    assert report.max_reversals == 5


def test_four_reversals_within_an_hour_are_calm_enough():
    report = measure(bouncing(4), TERMS)
    assert report.violations == [] and report.max_reversals == 4


def test_a_long_bounce_is_one_violation_per_member_and_counts_every_reversal():
    report = measure(bouncing(40), TERMS)
    assert [v.kind for v in report.violations] == [CHURN, CHURN]
    assert "reversed direction 40 times" in report.violations[0].detail
    assert report.max_reversals == 40


def test_five_reversals_spread_over_more_than_an_hour_are_calm():
    every = int(CALM_WINDOW_S / 4 / DT)  # a reversal every 15 minutes: the 5th is an hour after the 1st
    report = measure(bouncing(5, every=every), TERMS)
    assert report.violations == [] and report.max_reversals == 4
    nearly = measure(bouncing(5, every=every - 1), TERMS)  # 56 minutes
    assert [v.kind for v in nearly.violations] == [CHURN, CHURN]


def test_reversals_while_the_demand_changes_do_not_count():
    n = len(bouncing(8))
    rising = [1000.0 * 1.05**i for i in range(n)]  # +5% a step: never flat from a move to its reversal
    report = measure(bouncing(8, demand=rising), TERMS)
    assert report.violations == [] and report.max_reversals == 0


def test_reversals_within_the_flat_band_count():
    n = len(bouncing(8))
    wobble = [1000.0 + (50 if i % 3 else 0) for i in range(n)]  # 1000-1050 rps: within 10%
    assert [v.kind for v in measure(bouncing(8, demand=wobble), TERMS).violations] == [CHURN, CHURN]


def test_flat_demand():
    assert is_flat([1000, 1050, 1100])
    assert not is_flat([1000, 1200])
    assert is_flat([0, 0, 0])
    assert not is_flat([0, 10])


def test_removing_and_recreating_a_member_hpa_are_moves_of_its_max():
    fleets = [{"a": cluster(hpa=(1, 10) if (i // 4) % 2 == 0 else None), "b": cluster()} for i in range(40)]
    report = measure(steps(*fleets), replace(TERMS, optimization_period_s=3600))
    assert report.max_reversals == 8 and [v.kind for v in report.violations if v.kind == CHURN] == [CHURN]


# --- which promises each FederatedHPA makes --------------------------------------------------------------


def every_breach() -> list[StepSample]:
    return (
        run(0, BELOW_FLOOR, 10)
        + run(0, UNMANAGED_B, 10)
        + run(0, OVER_MAX, 10)
        + [replace(s) for s in bouncing(5)]
    )


def retimed(fleet: list[StepSample]) -> list[StepSample]:
    for i, s in enumerate(fleet):
        s.t = i * DT
    return fleet


def test_assisted_policies_keep_all_four_promises():
    assert sorted(set(kinds(retimed(every_breach())))) == sorted([FLOOR, UNMANAGED, CEILING, CHURN])


def test_duplicated_keeps_only_the_floor_and_every_replica_under_an_hpa():
    fleet = retimed(every_breach())
    report = measure(fleet, DUPLICATED)
    assert sorted({v.kind for v in report.violations}) == sorted([FLOOR, UNMANAGED])
    assert report.over_max_seconds > 0 and report.max_reversals >= 5  # measured all the same


def test_without_scale_assist_no_promise_of_section_4_is_made():
    report = measure(retimed(every_breach()), replace(TERMS, scale_assist=False))
    assert {v.kind for v in report.violations} == set()
    assert report.floor_breach_seconds > 0 and report.unmanaged_replica_seconds > 0


def test_the_floor_counts_elastic_room_once_nodes_had_time_to_come():
    """a holds 2 pods now, b none but its node group can add 10 (nodes take 60 s): F.min 4 needs b's
    nodes, so the floor allows the grace + one pass + the autoscaler's look (one step) + 60 s (150 s,
    10 steps) before 2 < 4 is a breach."""
    a = cluster(2, capacity=2)
    b = replace(cluster(0, capacity=0, hpa=(2, 10)), elastic_room=10, provision_s=60.0)
    assert measure(steps(*[{"a": a, "b": b}] * 10), TERMS).violations == []
    found = measure(steps(*[{"a": a, "b": b}] * 11), TERMS).violations
    assert [v.kind for v in found] == [FLOOR] and "elastic room 10" in found[0].detail
    assert "node provisioning" in found[0].detail
    instant = replace(b, provision_s=0.0)  # nodes of 0 s still wait for the autoscaler's look
    assert measure(steps(*[{"a": a, "b": instant}] * 6), TERMS).violations == []
    fixed = {"a": a, "b": cluster(0, capacity=0, hpa=(2, 10))}  # no elastic room: the floor is 2, kept
    assert measure(steps(*[fixed] * 20), TERMS).violations == []


def rising_floor(first: int, second: int, have: list[int]) -> list[StepSample]:
    """F.min 4 for ``first`` steps, then 6 for ``second``; a holds ``have[i]`` at step i, b nothing."""
    fmins = [4] * first + [6] * second
    return [
        replace(s, fhpa_min=fmins[i])
        for i, s in enumerate(
            steps(*[{"a": cluster(have[i], capacity=50), "b": cluster(0)} for i in range(len(fmins))])
        )
    ]


def test_a_rise_of_the_floor_is_owed_its_own_allowance():
    """F.min rises 4 -> 6 at step 3 of an episode at 2: the first 4 are met at step 5 (75 s), the last
    2 at step 8 (75 s after they were asked for): no breach, though the episode lasted 120 s."""
    assert kinds(rising_floor(3, 8, [2, 2, 2, 2, 2, 4, 4, 4, 6, 6, 6])) == []


def test_a_rise_does_not_extend_the_allowance_of_what_was_owed_before_it():
    """The same rise, but a stays at 2: the 4 owed from step 0 are past their 75 s at step 5."""
    found = measure(rising_floor(3, 8, [2] * 11), TERMS).violations
    assert [(v.t, v.kind) for v in found] == [(0.0, FLOOR)]
    # and the rise's 2 are owed too: the first 4 met in time, the last 2 never
    assert kinds(rising_floor(3, 8, [2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4])) == [FLOOR]


def outage_in_a_breach(c_runs: list[int]) -> list[StepSample]:
    """F.min 10: a runs 4, b 4 and c ``c_runs[i]``; the fleet is 2 short from step 0, and b goes down
    at step 2 (its 4 Ready pods go out of reach)."""
    fleets = [
        {"a": cluster(4), "b": cluster(4, down=i >= 2), "c": cluster(c_runs[i])} for i in range(len(c_runs))
    ]
    return [replace(s, fhpa_min=10, fhpa_max=30) for s in steps(*fleets)]


def test_an_outage_during_a_breach_owes_what_it_took_from_the_outage():
    """The 2 missing from step 0 are met at step 5 (75 s), b's 4 at step 7 (75 s after b went down):
    each fault within its own allowance, though the fleet was below the floor for 105 s."""
    assert kinds(outage_in_a_breach([0, 0, 0, 0, 0, 2, 2, 6, 6, 6])) == []


def blips_in_a_breach(down_steps: set[int], count: int = 40) -> list[StepSample]:
    """F.min 10: a runs 4, b 4 (down at ``down_steps``) and c nothing: 2 short from step 0, for good."""
    fleets = [{"a": cluster(4), "b": cluster(4, down=i in down_steps), "c": cluster(0)} for i in range(count)]
    return [replace(s, fhpa_min=10, fhpa_max=30) for s in steps(*fleets)]


def test_a_blip_does_not_pay_for_what_was_owed_before_it():
    # review: a credit for every outage that began, kept after the cluster answered, let one 15 s blip
    # at t=60 s, or a flapper down one step in three, hide a fleet 2 short for 600 s
    assert kinds(blips_in_a_breach(set())) == [FLOOR]
    assert kinds(blips_in_a_breach({4})) == [FLOOR]
    assert kinds(blips_in_a_breach({i for i in range(40) if i % 3 == 1})) == [FLOOR]


def test_an_outage_does_not_extend_what_was_owed_before_it():
    assert kinds(outage_in_a_breach([0, 0, 0, 0, 0, 0, 2, 6, 6, 6])) == [FLOOR]  # the 2 late
    assert kinds(outage_in_a_breach([0, 0, 0, 0, 0, 2, 2, 2, 6, 6])) == [FLOOR]  # b's 4 late


def test_the_floor_is_capped_by_a_quota():
    """a's nodes hold 50 but its quota 3 pods: 3 scheduled keep a floor of 4 that only b could add to."""
    a = replace(cluster(3, capacity=50), quota_pods=3)
    b = cluster(0, capacity=0, hpa=(1, 10))
    assert measure(steps(*[{"a": a, "b": b}] * 20), TERMS).violations == []
    assert measure(steps(*[{"a": replace(a, quota_pods=None), "b": b}] * 20), TERMS).violations != []


# --- 4. calm: a change of the candidate set allows each max one move each way ---------------------------


def failovers(
    cycles: int,
    a_moves: dict[int, int],
    *,
    down_at: int = 2,
    back_at: int = 20,
    every: int = 40,
    c_grace: float | None = None,
) -> list[StepSample]:
    """c is down from step ``down_at`` to ``back_at`` of every ``every`` steps; a's max moves to the value
    ``a_moves`` gives at those steps of each cycle (it starts at 10), b gives way so the sum stays 20."""
    fleets: list[dict[str, ClusterSample]] = []
    a_max = 10
    for i in range(cycles * every):
        a_max = a_moves.get(i % every, a_max)
        c = replace(cluster(hpa=(1, 5), down=down_at <= i % every < back_at), failover_grace_s=c_grace)
        fleets.append({"a": cluster(hpa=(1, a_max)), "b": cluster(hpa=(1, 15 - a_max)), "c": c})
    return steps(*fleets)


def test_a_max_that_moves_out_at_each_failover_and_back_at_each_rejoin_is_calm():
    """Three failovers and rejoins in 30 minutes: a's max goes 10 -> 15 one pass after each failover (the
    grace) and back at each rejoin, 5 reversals that the changes of the candidate set allow."""
    report = measure(failovers(3, {7: 15, 20: 10}), TERMS)
    assert report.violations == [] and report.max_reversals == 0
    assert report.allowed_moves == 12  # a's 6 and b's 6


def test_the_same_moves_with_no_change_of_the_candidate_set_still_count():
    fleet = failovers(3, {7: 15, 20: 10})
    for s in fleet:
        s.clusters["c"] = cluster(hpa=(1, 5))  # c never goes down
    report = measure(fleet, TERMS)
    assert [v.kind for v in report.violations] == [CHURN, CHURN] and report.max_reversals == 5
    assert report.allowed_moves == 0


def test_moves_beyond_one_each_way_after_a_change_count():
    """After one failover a's max goes up, down, up ... 8 times within the settle time: the first up and
    the first down are the change's, the 6 reversals after them count."""
    bounce = {7 + k: 15 if k % 2 == 0 else 10 for k in range(8)}
    report = measure(failovers(1, bounce, back_at=40), TERMS)
    assert report.max_reversals == 6 and [v.kind for v in report.violations] == [CHURN, CHURN]
    assert "a: member max reversed direction 6 times" in report.violations[0].detail


def test_a_move_back_after_the_settle_time_counts():
    """The rejoin allows a move back for one optimization period (60 s here); a's max comes back 4
    minutes after it, a reversal like any other (the move out at the failover is still allowed)."""
    report = measure(failovers(3, {7: 15, 36: 10}), TERMS)
    assert report.max_reversals == 3 and report.violations == []
    on_time = measure(failovers(3, {7: 15, 24: 10}), TERMS)
    assert on_time.max_reversals == 0


def test_a_flappers_failover_is_allowed_after_its_grown_grace():
    """c's status gives it a grace of 300 s: it is failed over then, and a's max moves 330 s after c went
    down; with the flag's 60 s grace the same move comes too late to be the failover's."""
    moves = {24: 15, 30: 10}
    grown = measure(failovers(3, moves, back_at=30, c_grace=300), TERMS)
    assert grown.max_reversals == 0 and grown.violations == []
    flag = measure(failovers(3, moves, back_at=30), TERMS)
    assert flag.max_reversals == 2  # the failovers after the first, moves up after a down


def test_the_settle_time_waits_for_a_controller_that_is_down():
    """The controller is down for the 3 minutes after each rejoin: it moves a's max back on its first
    pass after that, still within the rejoin's settle time (it could not answer before)."""
    fleet = failovers(3, {7: 15, 33: 10})
    late = measure(fleet, TERMS)
    assert late.max_reversals == 3  # 13 passes after the rejoin: too late for a controller that ran
    for i, s in enumerate(fleet):
        if 20 <= i % 40 < 32:
            fleet[i] = replace(s, controller_up=False)
    report = measure(fleet, TERMS)
    assert report.max_reversals == 0 and report.violations == []


def test_a_blip_within_the_grace_is_no_failover_and_allows_no_move():
    """c is unreachable for 45 s (within its 60 s grace) in each cycle: it is held, not failed over, so
    the candidate set does not change and a's max bouncing with each blip counts."""
    report = measure(failovers(3, {3: 15, 5: 10}, back_at=5), TERMS)
    assert report.max_reversals == 5 and [v.kind for v in report.violations] == [CHURN, CHURN]
    assert report.allowed_moves == 0


def test_what_is_lent_while_a_cluster_is_held_belongs_to_its_failover():
    """a's max is raised 15 s into c's outage (a held cluster's slack lent) and c is failed over when its
    grace ends: the failover's change starts with the outage, so the move is its one move up."""
    report = measure(failovers(3, {3: 15, 20: 10}), TERMS)
    assert report.max_reversals == 0 and report.violations == []


def stand_in(cycles: int, *, c_fails: bool = True, every: int = 40) -> list[StepSample]:
    """c runs 2 replicas (max 5) and fails over in each cycle (down at step 2, back at 20) when
    ``c_fails``; b, at 0 with no HPA, is started one pass after c's grace (max 5, a's max 15 -> 10)
    and drained at the rejoin."""
    fleets: list[dict[str, ClusterSample]] = []
    for i in range(cycles * every):
        standing = 7 <= i % every < 20
        b = cluster(1, hpa=(1, 5)) if standing else cluster(0, hpa=None)
        c = cluster(hpa=(1, 5), down=c_fails and 2 <= i % every < 20)
        fleets.append({"a": cluster(4, hpa=(1, 10 if standing else 15)), "b": b, "c": c})
    return steps(*fleets)


def test_a_stand_in_started_at_each_failover_and_drained_at_each_rejoin_is_calm():
    """Two failovers and rejoins in 20 minutes switch b between 0 and running 4 times, each with the
    max a change of the candidate set moves; the same switches with c never down are a breach."""
    report = measure(stand_in(2), TERMS)
    assert report.violations == [] and report.zero_flips == 0
    unexplained = measure(stand_in(2, c_fails=False), TERMS)
    assert unexplained.zero_flips == 4
    details = [v.detail for v in unexplained.violations]
    assert any("b: workload switched between 0 and running 4 times" in d for d in details)


def test_a_cluster_unreachable_from_the_start_joins_when_first_reached():
    """c does not answer the controller's first three passes: never planned, it was not held, so the
    pass that first reaches it changes the candidate set, and a's max giving it way is that change's."""
    fleets = [
        {"a": cluster(4, hpa=(1, 20)), "c": cluster(hpa=None, down=i < 3)}
        if i < 3
        else {"a": cluster(4, hpa=(1, 15)), "c": cluster(hpa=(1, 5))}
        for i in range(10)
    ]
    report = measure(steps(*fleets), TERMS)
    assert report.allowed_moves == 2  # a's down, c's up
    reached = [{**f, "c": replace(f["c"], down=False)} if i == 0 else f for i, f in enumerate(fleets)]
    assert measure(steps(*reached), TERMS).allowed_moves == 0  # reached at once, then a blip: held


def test_replica_writes_at_each_failover_and_rejoin_are_the_changes():
    """b's replicas are written at each of three failovers (started) and rejoins (drained) in 30
    minutes: 6 writes, each the change's one write that way; with c never down they are a breach."""

    def written(fleet: list[StepSample]) -> list[StepSample]:
        return [replace(s, actions=["scale/b"]) if i % 40 in (7, 20) else s for i, s in enumerate(fleet)]

    report = measure(written(stand_in(3)), TERMS)
    assert report.violations == [] and report.replica_writes == 0
    unexplained = measure(written(stand_in(3, c_fails=False)), TERMS)
    assert unexplained.replica_writes == 6
    assert any("b: controller wrote the replicas 6 times" in v.detail for v in unexplained.violations)


def bystander(*, c_fails: bool, cycles: int = 3, every: int = 40) -> list[StepSample]:
    """c fails over in each cycle (down at step 2, back at 20); d, whose max (5) never moves, is started
    at each failover and at each rejoin and drained the next pass, its replicas written each time."""
    fleets: list[dict[str, ClusterSample]] = []
    for i in range(cycles * every):
        d = cluster(2 if i % every in (7, 20) else 0, hpa=(1, 5))
        c = cluster(hpa=(1, 5), down=c_fails and 2 <= i % every < 20)
        fleets.append({"a": cluster(4, hpa=(1, 10)), "c": c, "d": d})
    return [
        replace(s, actions=["scale/d"]) if i % every in (7, 8, 20, 21) else s
        for i, s in enumerate(steps(*fleets))
    ]


def test_a_change_allows_no_switch_or_write_to_a_cluster_it_leaves_alone():
    """Another cluster's failover does not explain d's round trips: its max never moved and it neither
    joined nor left the candidate set, so its switches and writes count as if c had never failed."""
    report = measure(bystander(c_fails=True), TERMS)
    quiet = measure(bystander(c_fails=False), TERMS)
    assert (report.zero_flips, report.replica_writes) == (quiet.zero_flips, quiet.replica_writes) == (12, 12)
    assert any("d: workload switched between 0 and running" in v.detail for v in report.violations)
