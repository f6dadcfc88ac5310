"""Failover (DESIGN §4): grace period, NoExecute, reassignment, rejoin at once, a growing grace for flaps."""

from __future__ import annotations

from datetime import timedelta

from controller.planning.failover import HealthPolicy, assess, grace_now
from controller.planning.observation import Taint
from fhpa_api.models import ClusterStatus
from tests.support.planning_builders import (
    T0,
    bounds,
    condition,
    fhpa,
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


def two_clusters():
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    f, fleet, p = settle(f, [obs("a", 4), obs("b", 6)])
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    return f, fleet


def unreachable(fleet, name):
    return update(fleet, name, healthy=False, current_replicas=0, ready_replicas=0, hpa=None)


def test_a_blip_inside_the_grace_period_changes_nothing() -> None:
    f, fleet = two_clusters()
    down = unreachable(fleet, "b")
    p = run(f, down, T0 + 10 * S)
    assert not p.has_member_writes
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    assert row(p, "b").current_replicas == 6  # last known, kept for planning
    assert row(p, "b").unhealthy_since == T0 + 10 * S
    assert condition(p, "b", "Healthy").reason == "Unhealthy"
    assert "Unhealthy" in reasons(p)
    assert p.requeue_after_seconds == 50  # the next optimization (T0+60) comes before the grace ends (T0+70)
    # it answers again: nothing to correct
    f2 = f.model_copy(update={"status": p.status})
    assert not run(f2, fleet, T0 + 20 * S).has_member_writes


def test_past_the_grace_period_its_share_is_reassigned_without_lowering_anyone() -> None:
    f, fleet = two_clusters()
    down = unreachable(fleet, "b")
    f, down, _ = settle(f, down, T0 + 10 * S)
    p = run(f, down, T0 + 71 * S)
    assert bounds(p) == {"a": (2, 20)}
    assert row(p, "b").state == "FailedOver"
    assert condition(p, "b", "Assigned").reason == "FailedOver"
    assert "FailedOver" in reasons(p)
    assert [(a.cluster, a.op) for a in p.hpa_actions] == [("a", "update")]  # nothing sent to b
    assert "b" not in writes(p)


def test_no_execute_taint_fails_over_at_once() -> None:
    f, fleet = two_clusters()
    tainted = update(fleet, "b", taints=[Taint(key="maintenance", effect="NoExecute")])
    p = run(f, tainted, T0 + S)
    assert bounds(p) == {"a": (2, 20)}
    assert condition(p, "b", "Healthy").reason == "NoExecuteTaint"


def test_no_schedule_taint_does_not_fail_over() -> None:
    f, fleet = two_clusters()
    tainted = update(fleet, "b", taints=[Taint(key="x", effect="NoSchedule")])
    assert not run(f, tainted, T0 + S).has_member_writes


def failed_over_and_back(f, fleet, at: int = 100):
    """b goes down, is failed over past the grace, and answers again at T0+at running 6 with a stale HPA."""
    down = unreachable(fleet, "b")
    f, down, _ = settle(f, down, T0 + 10 * S)
    f, down, p = settle(f, down, T0 + 71 * S)
    assert row(p, "b").state == "FailedOver" and bounds(p) == {"a": (2, 20)}
    stale = owned_hpa(f, 1, 7, 6)  # what it served before: not what the fleet gives it now
    return f, update(down, "b", healthy=True, current_replicas=6, ready_replicas=6, hpa=stale)


def test_a_returning_cluster_rejoins_at_once_keeping_what_it_runs() -> None:
    f, fleet = two_clusters()
    f, back = failed_over_and_back(f, fleet)
    p = run(f, back, T0 + 100 * S)
    assert "Rejoined" in reasons(p)
    assert condition(p, "b", "Assigned").status == "True"
    b_max = bounds(p)["b"][1]
    assert b_max >= 6  # keep what runs: its max stays at least its current
    assert sum(hi for _, hi in bounds(p).values()) == 20  # the others gave way: no stale max on top of F.max
    assert ("b", "update") in [(a.cluster, a.op) for a in p.hpa_actions]  # the stale HPA corrected at once
    assert writes(p) == {}


def test_a_flapping_cluster_gets_a_longer_grace_each_time_back_to_the_flag_after_an_hour() -> None:
    f, fleet = two_clusters()
    f, back = failed_over_and_back(f, fleet)
    f, back, p = settle(f, back, T0 + 100 * S)
    assert "Rejoined" in reasons(p) and row(p, "b").failovers == 1
    # second outage at T0+200: grace 60 + 120 * (4**1 - 1) = 420 s
    down = unreachable(back, "b")
    f, down, p = settle(f, down, T0 + 200 * S)
    f, down, p = settle(f, down, T0 + 300 * S)
    assert row(p, "b").state != "FailedOver" and "FailedOver" not in reasons(p)  # 100 s: still held
    # held past the flag's 60 s grace: a's min alone covers F.min 2 (the floor does not wait for b)
    assert bounds(p)["a"][0] == 2
    f, down, p = settle(f, down, T0 + 600 * S)
    assert row(p, "b").state != "FailedOver"  # 400 s: still held
    assert p.requeue_after_seconds is not None and p.requeue_after_seconds <= 20
    f, down, p = settle(f, down, T0 + 620 * S)
    assert row(p, "b").state == "FailedOver" and row(p, "b").failovers == 2
    # an hour after its last failover, a new outage gets the flag's grace again
    later = T0 + 620 * S + timedelta(hours=1)
    f, up, p = settle(f, update(down, "b", healthy=True, current_replicas=6, ready_replicas=6), later)
    f, down, p = settle(f, unreachable(up, "b"), later + 10 * S)
    f, down, p = settle(f, down, later + 71 * S)
    assert row(p, "b").state == "FailedOver" and row(p, "b").failovers == 1


def test_scale_assist_false_never_fails_over() -> None:
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1}, scaleAssist=False)
    f, fleet, _ = settle(f, [obs("a", 4), obs("b", 6)])
    f, down, _ = settle(f, unreachable(fleet, "b"), T0 + 10 * S)
    p = run(f, down, T0 + 1000 * S)
    assert not p.has_member_writes
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}


def test_an_unhealthy_cluster_is_not_a_candidate_at_the_first_assignment() -> None:
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    p = run(f, [obs("a", 4), obs("b", 0, healthy=False)])
    assert bounds(p) == {"a": (2, 20)}
    assert condition(p, "b", "Assigned").reason == "Unhealthy"


def test_a_held_cluster_receives_nothing_when_the_spec_changes_within_its_grace() -> None:
    # fleet state machine: b unreachable (room unknown) was split a share of F.max as if unlimited,
    # 20..20 that was never written there, and a, with room for 36, kept 18: the floor stayed short
    f = fhpa("DynamicWeighted", 1, 2)
    f, fleet, p = settle(f, [obs("a", 1, 36), obs("b", 0, 1), obs("c", 0, 5)])
    assert bounds(p) == {"a": (1, 2)}
    down = update(unreachable(fleet, "b"), "b", available_replicas=None)  # its room unknown, as observed
    f, down, _ = settle(f, down, T0 + 10 * S)
    raised = fhpa("DynamicWeighted", 40, 40, generation=2).model_copy(update={"status": f.status})
    p = run(raised, down, T0 + 20 * S)
    assert "Assigned" in reasons(p) and row(p, "b").state != "FailedOver"  # still held, in its grace
    assert bounds(p) == {"a": (36, 36), "c": (4, 4)}  # b keeps what it ran (0); a takes its room
    assert writes(p) == {"a": 36, "c": 4}


def test_a_blip_of_a_cluster_without_a_share_reshuffles_nothing() -> None:
    # member3 is a candidate with no share (no room); member1 has spilled 13 of its max to member2
    f = fhpa("Prioritized", 8, 24, priorities={"member1": 2, "member2": 1}, autoscaleMultiClusterDelay=30)
    f, fleet, _ = settle(f, [obs("member1", 15, 20), obs("member2", 0, 1), obs("member3", 0, 0)])
    fleet = update(
        fleet,
        "member1",
        current_replicas=16,
        ready_replicas=10,
        pending_replicas=6,
        available_replicas=10,
        hpa_desired=16,
    )
    f, fleet, _ = settle(f, fleet, T0 + 10 * S)
    f, fleet, p = settle(f, fleet, T0 + 40 * S)
    assert bounds(p) == {"member1": (8, 10), "member2": (1, 14)}
    # member3 stops answering for a moment: inside the grace period nothing is reassigned
    p = run(f, update(fleet, "member3", healthy=False), T0 + 45 * S)
    assert "Assigned" not in reasons(p)
    assert bounds(p) == {"member1": (8, 10), "member2": (1, 14)}
    assert not p.has_member_writes


def sole_holder_fleet():
    f = fhpa("Prioritized", 2, 20, priorities={"a": 2, "b": 1})
    f, fleet, p = settle(f, [obs("a", 8), obs("b", 0)])
    assert bounds(p) == {"a": (2, 20)}  # b idles at 0 with no share
    return f, fleet


def test_a_sole_holder_is_failed_over_past_the_blip_tolerance_not_the_whole_grace() -> None:
    # failover-idle bench: a ran every replica, b idled at 0; waiting the 60 s grace was an outage
    f, fleet = sole_holder_fleet()
    down = unreachable(fleet, "a")
    f, down, p = settle(f, down, T0 + 10 * S)
    assert row(p, "a").state != "FailedOver" and p.requeue_after_seconds == 30  # a blip so far: held
    f, down, p = settle(f, down, T0 + 25 * S)
    assert row(p, "a").state != "FailedOver"
    p = run(f, down, T0 + 40 * S)
    assert row(p, "a").state == "FailedOver"
    assert bounds(p)["b"][1] == 20 and writes(p)["b"] == 8  # takes over with what a ran


def test_a_cluster_is_no_sole_holder_while_a_reachable_cluster_runs_replicas() -> None:
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 8), obs("b", 1)])
    down = unreachable(fleet, "a")
    f, down, _ = settle(f, down, T0 + 10 * S)
    assert row(run(f, down, T0 + 25 * S), "a").state != "FailedOver"


def test_a_sole_holder_that_flapped_within_the_hour_gets_its_grown_grace() -> None:
    a = obs("a", 8)
    policy = HealthPolicy(grace_seconds=60, hysteresis_seconds=120, enabled=True, blip_tolerance_seconds=30)
    steady = ClusterStatus(name="a", min_replicas=2, max_replicas=20, current_replicas=8)
    flapped = steady.model_copy(update={"failovers": 1, "last_failover_time": T0 - 600 * S})
    sick = a.model_copy(update={"healthy": False})
    for row_, grace in ((steady, 30), (flapped, 420)):
        held = row_.model_copy(update={"unhealthy_since": T0})
        assert assess(sick, held, T0 + S, policy, sole_holder=True).grace_seconds == grace
    assert assess(sick, steady.model_copy(update={"unhealthy_since": T0}), T0 + S, policy).grace_seconds == 60


def test_the_grace_a_status_row_gives_grows_with_the_failovers_of_the_hour() -> None:
    policy = HealthPolicy(grace_seconds=60, hysteresis_seconds=120, enabled=True)
    steady = ClusterStatus(name="a", min_replicas=2, max_replicas=20)
    assert grace_now(None, T0, policy) == grace_now(steady, T0, policy) == 60
    flapped = steady.model_copy(update={"failovers": 2, "last_failover_time": T0 - 600 * S})
    assert grace_now(flapped, T0, policy) == 60 + 120 * 15
    assert grace_now(flapped, T0 + 3000 * S, policy) == 60  # an hour since its last failover
    still_out = flapped.model_copy(update={"state": "FailedOver"})
    assert grace_now(still_out, T0 + 3000 * S, policy) == 60 + 120 * 15  # its failover keeps counting


def test_no_sole_holder_when_no_cluster_answers() -> None:
    # found by review: the controller lost every cluster (its own network); failing all over after
    # 15 s moved nothing and counted a flap against each (a real outage then waited 420 s)
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 4), obs("b", 6)])
    down = unreachable(unreachable(fleet, "a"), "b")
    f, down, _ = settle(f, down, T0 + 10 * S)
    assert "FailedOver" not in reasons(run(f, down, T0 + 41 * S))


def test_a_requeue_is_routine_only_while_the_optimization_is_the_one_timer_pending() -> None:
    f, fleet = two_clusters()
    p = run(f, fleet, T0)
    assert p.requeue_after_seconds == 60 and p.requeue_routine  # at rest: only the next optimization
    down = unreachable(fleet, "b")
    p = run(f, down, T0 + 10 * S)
    # the optimization (T0+60) comes before b's grace (T0+70), which has no timer of its own: a pass
    # left in the low lane at T0+60 would hold the failover behind every routine pass queued there
    assert p.requeue_after_seconds == 50 and not p.requeue_routine
    f2 = f.model_copy(update={"status": p.status})
    p = run(f2, down, T0 + 65 * S)
    assert p.requeue_after_seconds is not None and p.requeue_after_seconds <= 15
    assert not p.requeue_routine  # the grace runs out first: a decision falls due
