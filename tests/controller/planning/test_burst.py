"""Burst assist: the replicas a cluster at its max cannot run start at once where there is room."""

from __future__ import annotations

from datetime import timedelta

from controller.planning.observation import ClusterObservation
from controller.planning.plan import Plan
from controller.planning.planner import PlannerConfig
from tests.support.planning_builders import T0, bounds, fhpa, obs, reasons, run, settle, update, writes

S = timedelta(seconds=1)


def overloaded(fleet: list[ClusterObservation], name: str, ratio: float) -> list[ClusterObservation]:
    """``name`` runs its max, every pod ready, and its HPA's metrics stand at ``ratio`` of target."""
    o = next(o for o in fleet if o.name == name)
    hi = o.hpa.max_replicas if o.hpa else 0
    fleet = update(fleet, name, current_replicas=hi, ready_replicas=hi, hpa_desired=hi + 1, hpa_limited=True)
    return [with_ratio(o, ratio) if o.name == name else o for o in fleet]


def with_ratio(o: ClusterObservation, ratio: float) -> ClusterObservation:
    assert o.hpa is not None
    return o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": ratio})})


def prioritized():
    f = fhpa("Prioritized", 2, 60, priorities={"onprem": 2, "cloud": 1})
    f, fleet, p = settle(f, [obs("onprem", 10, 10), obs("cloud", 0, 100)])
    assert bounds(p) == {"cloud": (1, 50), "onprem": (2, 10)}
    return f, fleet


def member_min(p: Plan, name: str) -> int | None:
    """The minReplicas this pass writes to ``name``'s member HPA (None: no write)."""
    return next((a.min_replicas for a in p.hpa_actions if a.cluster == name), None)


def test_no_burst_assist_leaves_the_ramp_to_the_member_hpas() -> None:
    f, fleet = prioritized()
    off = PlannerConfig(burst_assist=False)
    assert writes(run(f, overloaded(fleet, "onprem", 2.0), T0 + 61 * S, off)) == {}


def test_the_member_hpa_min_holds_the_assisted_replicas_for_its_scale_down_window() -> None:
    # left alone, the member HPA's window holds only its own recommendations: it would take the 10 away
    f, fleet = prioritized()
    f, fleet, p = settle(f, overloaded(fleet, "onprem", 2.0), T0 + 61 * S)
    assert writes(p) == {"cloud": 11}
    assert member_min(p, "cloud") == 11
    row = next(r for r in p.status.clusters or [] if r.name == "cloud")
    assert (row.pinned_min_replicas, row.assist_held_until) == (11, T0 + 361 * S)
    assert p.requeue_after_seconds is not None and p.requeue_after_seconds <= 300
    # the load settles at the target; the hold stays for the window (a Prioritized pin would go)
    fleet = [with_ratio(o, 1.0) for o in update(fleet, "onprem", hpa_limited=False)]
    f, fleet, p = settle(f, fleet, T0 + 300 * S)
    assert member_min(p, "cloud") is None  # nothing to write: the HPA still holds 11
    # then the member HPA scales them again, its window holding what the load asked for meanwhile
    p = run(f, fleet, T0 + 361 * S)
    assert member_min(p, "cloud") == 1
    assert "BurstReleased" in reasons(p)


def test_the_hold_lasts_the_users_scale_down_window() -> None:
    f = fhpa(
        "Prioritized",
        2,
        60,
        priorities={"onprem": 2, "cloud": 1},
        behavior={"scaleDown": {"stabilizationWindowSeconds": 60}},
    )
    f, fleet, _ = settle(f, [obs("onprem", 10, 10), obs("cloud", 0, 100)])
    p = run(f, overloaded(fleet, "onprem", 2.0), T0 + 61 * S)
    row = next(r for r in p.status.clusters or [] if r.name == "cloud")
    assert row.assist_held_until == T0 + 121 * S


def test_the_next_tier_starts_what_the_capped_cluster_cannot_run() -> None:
    f, fleet = prioritized()
    assert writes(run(f, fleet, T0 + S)) == {}  # nobody at its max: every HPA scales on its own
    # onprem runs its max 10 at twice its CPU target: the load asks for 20, so 10 more start in the cloud
    p = run(f, overloaded(fleet, "onprem", 2.0), T0 + 61 * S)
    assert writes(p) == {"cloud": 1 + 10}
    assert "BurstAssisted" in reasons(p)


def test_within_the_hpa_tolerance_nothing_is_started() -> None:
    f, fleet = prioritized()
    assert writes(run(f, overloaded(fleet, "onprem", 1.08), T0 + 61 * S)) == {}


def test_pods_already_starting_count_and_a_fresh_write_settles_first() -> None:
    f, fleet = prioritized()
    fleet = overloaded(fleet, "onprem", 2.0)
    f, fleet, p = settle(f, fleet, T0 + 61 * S)
    assert writes(p) == {"cloud": 11}
    # 15 s later the 10 are still starting (not ready): nothing more, and not the same write again
    fleet = update(fleet, "cloud", current_replicas=11, ready_replicas=1)
    assert writes(run(f, fleet, T0 + 76 * S)) == {}
    # a period later the load grew again: onprem at 3x, the cloud's 11 counted as what runs
    fleet = overloaded(fleet, "onprem", 3.0)
    assert writes(run(f, fleet, T0 + 130 * S)) == {"cloud": 11 + 10}


def test_a_lower_tier_gets_replicas_only_once_the_one_above_is_at_its_max() -> None:
    f = fhpa("Prioritized", 3, 30, priorities={"a": 3, "b": 2, "c": 1})
    f, fleet, p = settle(f, [obs("a", 10, 10), obs("b", 1, 5), obs("c", 1, 100)])
    assert bounds(p) == {"a": (3, 10), "b": (1, 5), "c": (1, 15)}
    p = run(f, overloaded(fleet, "a", 1.3), T0 + 61 * S)  # asks for 3 more: b has room for 4
    assert writes(p) == {"b": 4}
    p = run(f, overloaded(fleet, "a", 2.0), T0 + 61 * S)  # asks for 10 more: b fills to 5, c takes 6
    assert writes(p) == {"b": 5, "c": 7}


def test_a_cluster_whose_own_load_is_at_target_is_not_raised() -> None:
    # traffic routed by geography: onprem is overloaded, the cloud serves its own users at target.
    # Pods started there would idle until its HPA removed them again (a fight), so none are started.
    f, fleet = prioritized()
    fleet = overloaded(fleet, "onprem", 2.0)
    fleet = [with_ratio(o, 1.0) if o.name == "cloud" else o for o in fleet]
    assert writes(run(f, fleet, T0 + 61 * S)) == {}


def test_one_wake_up_a_pass_burst_first_then_not_also_from_zero() -> None:
    f = fhpa("StaticWeighted", 2, 30, scalingToZero=True, weights={"a": 3, "b": 2, "c": 1})
    f, fleet, p = settle(f, [obs("a", 15, 15), obs("b", 0, 30), obs("c", 0, 30)])
    assert writes(p) == {}
    fleet = overloaded(fleet, "a", 1.5)
    p = run(f, fleet, T0 + 61 * S)
    assert set(writes(p)) == {"b"}  # b, preferred, takes what a cannot run; c stays at 0 this pass


def test_a_burst_starts_no_more_than_the_receiving_cluster_can_hold() -> None:
    # found by the fleet state machine: a cluster that could hold nothing got 22 replicas started, all
    # pending, while its max was handed round the fleet
    f = fhpa("Prioritized", 2, 60, priorities={"onprem": 2, "cloud": 1})
    f, fleet, p = settle(f, [obs("onprem", 10, 10), obs("cloud", 0, 100)])
    fleet = update(fleet, "cloud", available_replicas=4, current_replicas=1, ready_replicas=1)
    p = run(f, overloaded(fleet, "onprem", 2.0), T0 + 61 * S)
    assert writes(p) == {"cloud": 4}


def paced(scale_up: dict[str, object]):
    """The Prioritized fleet with the user's ``behavior.scaleUp``; the cloud already runs 47 at the
    same load as onprem, so a 1.26x load asks for 15 more than the 57 that run."""
    f = fhpa("Prioritized", 2, 100, priorities={"onprem": 2, "cloud": 1}, behavior={"scaleUp": scale_up})
    f, fleet, _ = settle(f, [obs("onprem", 10, 10), obs("cloud", 0, 100)])
    fleet = update(fleet, "cloud", current_replicas=47, ready_replicas=47)
    fleet = overloaded(fleet, "onprem", 1.26)
    return f, [with_ratio(o, 1.26) if o.name == "cloud" else o for o in fleet]


def test_a_user_scale_up_rate_is_left_to_the_member_hpas() -> None:
    # 2 pods per 60 s: the member HPA adds 2 a minute; a write of 47 -> 62 would skip seven minutes of it
    f, fleet = paced({"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]})
    assert writes(run(f, fleet, T0 + 61 * S)) == {}


def test_a_user_scale_up_window_is_left_to_the_member_hpas() -> None:
    f, fleet = paced({"stabilizationWindowSeconds": 120})
    assert writes(run(f, fleet, T0 + 61 * S)) == {}


def test_a_scale_up_tolerance_alone_keeps_the_assist() -> None:
    f, fleet = paced({"tolerance": "0.05"})
    assert writes(run(f, fleet, T0 + 61 * S)) == {"cloud": 47 + 15}


def test_a_cluster_full_under_its_quota_below_its_max_is_assisted_too() -> None:
    # found by a user-level review: Aggregated gave a quota-bound onprem the excess no cluster had room
    # for (max 50 on a quota of 20), so it never ran its max; its HPA asked for 30 and the quota let 20
    # exist, and the 10 it refused were started nowhere while the cloud had room (served 97.4% on the
    # review's fleet against 98.7% for an unassisted static split; 99.3% with this rule)
    f = fhpa("Aggregated", 2, 150)
    f, fleet, p = settle(f, [obs("onprem", 10, 50), obs("cloud", 0, 100)])
    assert bounds(p) == {"cloud": (2, 100), "onprem": (1, 50)}
    # then its namespace quota binds at 20 pods: the excess stays on it, above its room (DESIGN §4)
    fleet = update(fleet, "cloud", current_replicas=2, ready_replicas=2)
    fleet = update(
        fleet,
        "onprem",
        current_replicas=30,
        ready_replicas=20,
        refused_replicas=10,
        hpa_desired=30,
        available_replicas=20,
    )
    fleet = [with_ratio(o, 1.5) for o in fleet]  # 20 + 2 ready at 1.5x: the load asks for 33
    p = run(f, fleet, T0 + 61 * S)
    assert bounds(p)["onprem"] == (1, 50)  # never at its max: only its quota holds it
    assert writes(p) == {"cloud": 2 + 11}  # 33 asked for, 22 run (the refused 10 never will)
    assert "BurstAssisted" in reasons(p)
