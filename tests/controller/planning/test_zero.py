"""Scaling clusters to and from zero (DESIGN §4, scalingToZero)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from controller.planning import zero
from controller.planning.fleet import Fleet, Slot
from controller.planning.observation import CapacityObservation, ClusterObservation
from fhpa_api.models import HorizontalPodAutoscalerBehavior, HPAScalingRules
from tests.support.planning_builders import (
    T0,
    bounds,
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
IDLE = timedelta(seconds=300)  # the native scale-down stabilization window: the HPAs want fewer this long
T1 = T0 + IDLE + S  # the first pass at which a cluster idle since T0 may go to 0


def idle_fleet(policy: str, **prefs):
    """Three clusters idling at their mins 2/1/1 (F.min 2, so the mins exceed it by 2)."""
    f = fhpa(policy, 2, 12, scalingToZero=True, **prefs)
    mins = {n: lo for n, (lo, _) in bounds(run(f, [obs("a", 2, 10), obs("b", 1, 6), obs("c", 1, 3)])).items()}
    # start them at their mins, so that the assignment writes no replicas (a write pauses zeroing)
    f, fleet, p = settle(f, [obs("a", mins["a"], 10), obs("b", mins["b"], 6), obs("c", mins["c"], 3)])
    assert writes(p) == {}
    for name, lo in mins.items():  # every HPA sits at its min and wants fewer
        fleet = update(fleet, name, current_replicas=lo, ready_replicas=lo, hpa_desired=lo, hpa_limited=True)
    f, fleet, p = settle(f, fleet)  # their idle clocks start
    assert writes(p) == {}
    return f, fleet, mins


def test_static_weighted_sends_the_smallest_weight_to_zero() -> None:
    f, fleet, mins = idle_fleet("StaticWeighted", weights={"a": 3, "b": 2, "c": 1})
    assert mins == {"a": 2, "b": 1, "c": 1}
    p = run(f, fleet, T1)
    assert writes(p) == {"c": 0}
    assert "ScaledToZero" in reasons(p)


def test_dynamic_weighted_sends_the_smallest_available_to_zero() -> None:
    f, fleet, _ = idle_fleet("DynamicWeighted")
    assert writes(run(f, fleet, T1)) == {"c": 0}


def test_prioritized_sends_the_lowest_priority_to_zero() -> None:
    f, fleet, _ = idle_fleet("Prioritized", priorities={"a": 1, "b": 3, "c": 2})
    p = run(f, fleet, T1)
    assert writes(p) == {"a": 0}


def test_aggregated_tie_on_replicas_sends_the_smallest_available_to_zero() -> None:
    # a and b both idle at their min 1; b can hold 9, a only 4: a goes, the preferred (bigger) b stays
    # (by name alone, b would go: the most preferred cluster zeroed first)
    f = fhpa("Aggregated", 1, 12, scalingToZero=True)
    f, fleet, p = settle(f, [obs("a", 1, 4), obs("b", 1, 9)])
    assert {n: lo for n, (lo, _) in bounds(p).items()} == {"a": 1, "b": 1}
    for name in ("a", "b"):
        fleet = update(fleet, name, current_replicas=1, ready_replicas=1, hpa_desired=1, hpa_limited=True)
    f, fleet, _ = settle(f, fleet)
    assert writes(run(f, fleet, T1)) == {"a": 0}


def test_aggregated_sends_the_smallest_replicas_to_zero() -> None:
    f = fhpa("Aggregated", 3, 12, scalingToZero=True)
    f, fleet, p = settle(f, [obs("a", 1, 3), obs("b", 1, 3), obs("c", 3, 6)])
    for name, (lo, _) in bounds(p).items():
        fleet = update(fleet, name, current_replicas=lo, ready_replicas=lo, hpa_desired=lo, hpa_limited=True)
    f, fleet, _ = settle(f, fleet)
    assert writes(run(f, fleet, T1)) == {"b": 0}  # a and b tie at 1: the name that sorts last


def test_one_cluster_at_a_time_and_never_below_federated_min() -> None:
    f, fleet, _ = idle_fleet("StaticWeighted", weights={"a": 3, "b": 2, "c": 1})
    f, fleet, _ = settle(f, fleet, T1)  # c -> 0
    f, fleet, p = settle(f, fleet, T1 + S)
    assert writes(p) == {}  # the HPAs get an optimization period to see the load move first
    f, fleet, p = settle(f, fleet, T1 + 60 * S)
    assert writes(p) == {"b": 0}  # running 2 + 1 > F.min 2: b goes next
    p = run(f, fleet, T1 + 199 * S)
    assert writes(p) == {}  # a alone carries F.min


def test_no_zero_while_a_hpa_wants_more() -> None:
    f, fleet, _ = idle_fleet("StaticWeighted", weights={"a": 3, "b": 2, "c": 1})
    fleet = update(fleet, "a", hpa_desired=3, hpa_limited=False)  # a's HPA wants more than its min
    assert writes(run(f, fleet, T1)) == {}


def test_no_zero_while_pods_are_not_ready() -> None:
    f, fleet, _ = idle_fleet("StaticWeighted", weights={"a": 3, "b": 2, "c": 1})
    fleet = update(fleet, "c", ready_replicas=0, hpa_desired=0)  # just raised from zero: not serving yet
    assert writes(run(f, fleet, T1)) == {}


def test_prioritized_lowest_priority_goes_to_zero_once_every_cluster_sits_at_its_min() -> None:
    f = fhpa("Prioritized", 2, 80, priorities={"idc": 2, "cloud": 1}, scalingToZero=True)
    f, fleet, p = settle(f, [obs("idc", 12, 30), obs("cloud", 0, 300)])
    assert bounds(p) == {"cloud": (1, 50), "idc": (2, 30)}
    fleet = update(fleet, "cloud", current_replicas=1, ready_replicas=1, hpa_desired=1, hpa_limited=False)
    fleet = update(fleet, "idc", current_replicas=11, ready_replicas=11, hpa_desired=11, hpa_limited=False)
    cloud = next(o for o in fleet if o.name == "cloud")
    assert cloud.hpa is not None
    fleet = update(fleet, "cloud", hpa=cloud.hpa.model_copy(update={"last_scale_time": T0}))
    # idc runs 11, above its 2: only the lowest tier's own rule may zero the cloud, and only once its
    # HPA has sat at its min for a scale-down stabilization window (DESIGN §4 Scaling to zero)
    assert writes(run(f, fleet, T0 + 60 * S)) == {}
    f1, fleet1, p = settle(f, fleet, T0 + S)  # the cloud's idle clock starts (status idleSince)
    assert writes(p) == {}
    assert writes(run(f1, fleet1, T0 + 300 * S)) == {}
    assert writes(run(f1, fleet1, T0 + 301 * S)) == {"cloud": 0}
    fleet = update(fleet, "idc", current_replicas=2, ready_replicas=2, hpa_desired=2, hpa_limited=False)
    f, fleet, p = settle(f, fleet, T0 + S)  # every cluster at its min from now on
    assert writes(p) == {}
    f, fleet, p = settle(f, fleet, T0 + IDLE)  # a period optimization, one second short of the window
    assert writes(p) == {}
    # idle since T0 + S by the status clock: a full window later the cloud goes to 0 (idc holds its one)
    assert writes(run(f, fleet, T0 + IDLE)) == {}
    assert writes(run(f, fleet, T0 + S + IDLE)) == {"cloud": 0}
    # not while idc is at its max and wants more
    busy = update(fleet, "idc", current_replicas=30, ready_replicas=30, hpa_desired=35, hpa_limited=True)
    assert writes(run(f, busy, T0 + 60 * S + IDLE)) == {}


def test_no_zero_without_scaling_to_zero() -> None:
    f = fhpa("StaticWeighted", 2, 12, weights={"a": 3, "b": 2, "c": 1})
    f, fleet, p = settle(f, [obs("a", 2, 10), obs("b", 1, 6), obs("c", 1, 3)])
    for name, (lo, _) in bounds(p).items():
        fleet = update(fleet, name, current_replicas=lo, hpa_desired=lo, hpa_limited=True)
    assert writes(run(f, fleet, T0 + S)) == {}


def at_zero_fleet(policy: str, **prefs):
    f = fhpa(policy, 1, 12, scalingToZero=True, **prefs)
    f, fleet, p = settle(f, [obs("a", 3, 10), obs("b", 0, 10), obs("c", 0, 10)])
    assert writes(p) == {}  # clusters at 0 stay there with scalingToZero
    return f, fleet, bounds(p)


def test_scaling_from_zero_raises_every_zero_cluster_when_a_running_hpa_is_at_max() -> None:
    f, fleet, table = at_zero_fleet("StaticWeighted", weights={"a": 1, "b": 1, "c": 1})
    hi = table["a"][1]
    fleet = update(fleet, "a", current_replicas=hi, ready_replicas=hi, hpa_desired=hi + 3, hpa_limited=True)
    p = run(f, fleet, T0 + S)
    assert writes(p) == {"b": table["b"][0], "c": table["c"][0]}
    assert "ScaledFromZero" in reasons(p)


def test_prioritized_scaling_from_zero_raises_only_the_highest_priority_zero_cluster() -> None:
    f, fleet, table = at_zero_fleet("Prioritized", priorities={"a": 3, "b": 1, "c": 2})
    hi = table["a"][1]
    fleet = update(fleet, "a", current_replicas=hi, ready_replicas=hi, hpa_desired=hi + 3, hpa_limited=True)
    p = run(f, fleet, T0 + S)
    assert writes(p) == {"c": table["c"][0]}


def test_scaling_from_zero_on_pending_pods_past_the_delay() -> None:
    f = fhpa("DynamicWeighted", 1, 12, scalingToZero=True, autoscaleMultiClusterDelay=20)
    f, fleet, p = settle(f, [obs("a", 3, 6), obs("b", 0, 6)])
    fleet = update(fleet, "a", current_replicas=5, ready_replicas=3, pending_replicas=2)
    f, fleet, p = settle(f, fleet, T0 + S)
    assert writes(p) == {}
    p = run(f, fleet, T0 + 21 * S)
    assert writes(p)["b"] >= 1


def test_prioritized_spill_to_a_cluster_at_zero_raises_no_other_cluster_from_zero() -> None:
    # a saturates: scale-up moves its spill to b (priority 2) and raises b by a's pending pods; c stays at 0
    f = fhpa("Prioritized", 1, 30, priorities={"a": 3, "b": 2, "c": 1}, scalingToZero=True)
    f, fleet, p = settle(f, [obs("a", 5, 10), obs("b", 0, 10), obs("c", 0, 10)])
    assert bounds(p) == {"a": (1, 10), "b": (1, 10), "c": (1, 10)} and writes(p) == {}
    fleet = update(
        fleet, "a", current_replicas=10, ready_replicas=8, pending_replicas=2, available_replicas=8
    )
    f, fleet, p = settle(f, fleet, T0 + S)
    assert bounds(p) == {"a": (1, 8), "b": (1, 12), "c": (1, 10)}
    assert writes(p) == {"b": 2}  # the 2 pods that pend in a
    # a's HPA, capped at 8, still wants more: the spill already went to b, which has room, so c stays at 0
    fleet = update(fleet, "a", current_replicas=8, pending_replicas=0, hpa_desired=12, hpa_limited=True)
    assert writes(run(f, fleet, T0 + 2 * S)) == {}
    # b's HPA wants more than its new max while its replicas still ramp up (4 of 12): c stays at 0,
    # one tier at a time (the lowest tier once woke 15 s after the middle one while it had 9 of 10 free)
    fleet = update(fleet, "b", current_replicas=4, ready_replicas=4, hpa_desired=12, hpa_limited=True)
    assert writes(run(f, fleet, T0 + 3 * S)) == {}
    # b grows to its max and wants more: now the highest-priority cluster at 0 (c) is raised
    fleet = update(fleet, "b", current_replicas=12, ready_replicas=12, hpa_desired=15, hpa_limited=True)
    assert writes(run(f, fleet, T0 + 3 * S)) == {"c": 1}


def test_prioritized_no_zero_while_the_mins_do_not_exceed_the_federated_min() -> None:
    # mins 5 + 5 are exactly F.min 10: sending b to 0 would only push its 5 onto a, which holds 5
    f = fhpa("Prioritized", 10, 20, priorities={"a": 2, "b": 1}, scalingToZero=True)
    f, fleet, p = settle(f, [obs("a", 5, 5), obs("b", 5, 5)])
    assert bounds(p) == {"a": (5, 15), "b": (5, 5)} and writes(p) == {}
    for name in ("a", "b"):
        fleet = update(fleet, name, hpa_desired=5, hpa_limited=True)
    p = run(f, fleet, T0 + 60 * S)
    assert writes(p) == {}
    assert bounds(p) == {"a": (5, 15), "b": (5, 5)}


# ----- the floor: clusters at 0 are started when the running ones cannot hold F.min (promise 1) -----


def test_a_new_app_with_every_cluster_at_zero_starts_the_preferred_clusters() -> None:
    for policy, prefs, first in [
        ("Aggregated", {}, "b"),
        ("DynamicWeighted", {}, "b"),
        ("StaticWeighted", {"weights": {"a": 1, "b": 3}}, "b"),
        ("Prioritized", {"priorities": {"a": 1, "b": 2}}, "b"),
    ]:
        f = fhpa(policy, 4, 20, scalingToZero=True, **prefs)
        p = run(f, [obs("a", 0, 8), obs("b", 0, 12)])
        started = writes(p)
        assert first in started, (policy, started)
        assert sum(started.values()) >= 4, (policy, started)  # the floor F.min runs at once
        for name, replicas in started.items():
            lo, hi = bounds(p)[name]
            assert replicas == lo <= hi, (policy, name, replicas, bounds(p))
        assert "ScaledFromZero" in reasons(p)


def test_a_new_app_starts_clusters_one_at_a_time_until_their_maxes_hold_f_min() -> None:
    # Prioritized over capacities 3 / 3 / 10: b (priority 3) holds 3 < F.min 5, so c (priority 2) starts too
    f = fhpa("Prioritized", 5, 16, scalingToZero=True, priorities={"a": 1, "b": 3, "c": 2})
    p = run(f, [obs("a", 0, 10), obs("b", 0, 3), obs("c", 0, 10)])
    assert set(writes(p)) == {"b", "c"}
    assert sum(writes(p).values()) >= 5
    assert "a" not in writes(p)  # a keeps its HPA at 0 replicas


def test_clusters_already_running_that_hold_f_min_wake_nobody() -> None:
    f = fhpa("Aggregated", 4, 20, scalingToZero=True)
    p = run(f, [obs("a", 5, 30), obs("b", 0, 10)])
    assert writes(p) == {}


def test_failover_onto_a_cluster_at_zero_starts_it() -> None:
    f = fhpa("Prioritized", 3, 20, scalingToZero=True, priorities={"a": 2, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 6, 20), obs("b", 0, 20)])
    f, fleet, p = settle(f, fleet, T0 + S)
    assert writes(p) == {}  # b idles at 0 while a holds the floor
    fleet = update(fleet, "a", healthy=False)
    f, fleet, p = settle(f, fleet, T0 + 2 * S)
    assert writes(p) == {}  # b has no share (a holds all of F.max): nothing to start during the grace
    f, fleet, p = settle(f, fleet, T0 + 70 * S)  # past the 60 s grace: a is failed over
    # b takes a's load at once: the 6 replicas a ran start there (no HPA there reports metrics yet),
    # not its min of 3 left to ramp up by doublings
    assert writes(p) == {"b": 6}
    assert bounds(p)["b"][0] == 3


def test_a_cluster_woken_because_pods_pend_elsewhere_starts_with_as_many_as_pend() -> None:
    f, fleet, _ = at_zero_fleet("StaticWeighted", weights={"a": 1, "b": 1, "c": 1})
    f = f.model_copy(update={"spec": f.spec.model_copy(update={"autoscale_multi_cluster_delay": 0})})
    fleet = update(fleet, "a", current_replicas=9, ready_replicas=3, pending_replicas=6, available_replicas=3)
    p = run(f, fleet, T0 + S)
    started = {n: r for n, r in writes(p).items() if n in ("b", "c")}
    assert started and all(r == min(6, bounds(p)[n][1]) for n, r in started.items()), (started, bounds(p))


def test_without_scaling_to_zero_no_cluster_idles_at_zero_under_an_hpa() -> None:
    # someone scaled b to 0 behind our back (or b just got a share): a native HPA over 0 replicas never
    # scales, so b is started at its min rather than left idle with a max nobody can use
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    f, fleet, p = settle(f, [obs("a", 5, 20), obs("b", 5, 20)])
    fleet = update(fleet, "b", current_replicas=0, ready_replicas=0)
    p = run(f, fleet, T0 + S)
    assert writes(p) == {"b": bounds(p)["b"][0]}


def test_the_floor_does_not_wait_for_a_cluster_held_past_the_flags_grace() -> None:
    # found by the fleet state machine: the big cluster, a flapper, was held for its grown grace and
    # still counted as holding F.min, so the idle cluster with room stayed at 0 below the floor
    f = fhpa("Aggregated", 17, 50, scalingToZero=True)
    slots = {
        "big": Slot(cluster=obs("big", 31, 32), min_replicas=17, max_replicas=41, held=True, held_long=True),
        "idle": Slot(cluster=obs("idle", 0, 2), min_replicas=2, max_replicas=2),
        "small": Slot(cluster=obs("small", 6, 7), min_replicas=7, max_replicas=7),
    }
    fleet = Fleet(fhpa=f, now=T0, slots=slots)
    started = zero.start_for_floor(fleet, "floor")
    assert [s.name for s in started] == ["idle"]
    # within the flag's grace a blip wakes nobody
    slots["big"].held_long = False
    slots["idle"].replicas = None
    assert zero.start_for_floor(Fleet(fhpa=f, now=T0, slots=slots), "floor") == []


# ----- hysteresis: at a steady load a cluster does not flip between 0 and running (promise 4) -----


def test_a_cluster_goes_to_zero_only_after_its_hpa_wanted_fewer_for_a_full_window() -> None:
    f, fleet, _ = idle_fleet("StaticWeighted", weights={"a": 3, "b": 2, "c": 1})
    assert row(run(f, fleet, T0 + S), "c").idle_since == T0
    assert writes(run(f, fleet, T0 + IDLE - S)) == {}
    assert writes(run(f, fleet, T0 + IDLE)) == {"c": 0}


def test_the_idle_clock_restarts_when_the_hpa_wants_more_and_honours_the_users_window() -> None:
    f, fleet, _ = idle_fleet("StaticWeighted", weights={"a": 3, "b": 2, "c": 1})
    busy = update(fleet, "c", hpa_desired=2, hpa_limited=False)
    f, _, p = settle(f, busy, T0 + 100 * S)
    assert row(p, "c").idle_since is None
    f, fleet, _ = settle(f, fleet, T0 + 101 * S)  # content again: its clock starts over
    assert writes(run(f, fleet, T0 + 101 * S + IDLE - S)) == {}
    assert writes(run(f, fleet, T0 + 101 * S + IDLE)) == {"c": 0}
    longer = f.model_copy(deep=True)
    window = HorizontalPodAutoscalerBehavior(scale_down=HPAScalingRules(stabilization_window_seconds=900))
    longer.spec = longer.spec.model_copy(update={"behavior": window})
    assert writes(run(longer, fleet, T0 + 101 * S + IDLE)) == {}
    assert writes(run(longer, fleet, T0 + 1001 * S)) == {"c": 0}


def test_a_woken_cluster_is_not_sent_back_to_zero_within_the_hour() -> None:
    f, fleet, table = at_zero_fleet("StaticWeighted", weights={"a": 1, "b": 1, "c": 1})
    hi = table["a"][1]
    pressed = update(fleet, "a", current_replicas=hi, ready_replicas=hi, hpa_desired=hi + 3, hpa_limited=True)
    f, fleet, p = settle(f, pressed, T0 + S)
    assert set(writes(p)) == {"b", "c"} and row(p, "b").woken_at == T0 + S
    # the load settles at once: every HPA content at its min, the mins above F.min 1
    for name in ("a", "b", "c"):
        lo = bounds(p)[name][0]
        fleet = update(fleet, name, current_replicas=lo, ready_replicas=lo, hpa_desired=lo, hpa_limited=True)
    f, fleet, _ = settle(f, fleet, T0 + 2 * S)
    assert writes(run(f, fleet, T0 + 2 * S + IDLE)) == {}  # idle for a window, but woken under an hour ago
    # a restarted controller reads the wake from status alone and decides the same
    assert row(run(f, fleet, T0 + 3599 * S), "b").woken_at == T0 + S
    assert writes(run(f, fleet, T0 + 3599 * S)) == {}
    assert writes(run(f, fleet, T0 + 3601 * S)) != {}


def test_the_floor_starts_no_cluster_known_to_hold_nothing() -> None:
    # its pod would only pend, and the next reassignment would send it back to 0: a flip for nothing
    f = fhpa("Aggregated", 6, 20, scalingToZero=True)
    slots = {
        "full": Slot(cluster=obs("full", 0, 0), min_replicas=2, max_replicas=8),
        "room": Slot(cluster=obs("room", 0, 10), min_replicas=2, max_replicas=12),
    }
    started = zero.start_for_floor(Fleet(fhpa=f, now=T0, slots=slots), "floor")
    assert [s.name for s in started] == ["room"]


def test_the_floor_does_not_start_a_cluster_that_holds_nothing() -> None:
    # found by the fleet state machine: a roomless cluster at 0 was started for the floor, with one pod
    # that could never run, and drained again when the failed cluster came back
    f = fhpa("StaticWeighted", 16, 16, scalingToZero=True, weights={"m1": 2, "m3": 3})
    slots = {
        "m1": Slot(cluster=obs("m1", 1, 1), min_replicas=1, max_replicas=4),
        "m3": Slot(cluster=obs("m3", 0, 0), min_replicas=1, max_replicas=12),
    }
    assert zero.start_for_floor(Fleet(fhpa=f, now=T0, slots=slots), "floor") == []


def _after_the_burst(
    quiet_s: int,
    onprem_firm: int = 40,
    scaling_to_zero: bool = True,
    woken_at: datetime | None = None,
    cloud_runs: int = 1,
    pods_per_node: int | None = None,
    policy: str = "Prioritized",
    cloud_firm: int = 10,
) -> Fleet:
    """On-prem (firm room 40, runs 19; the higher priority under Prioritized) over a cloud node group
    that still runs ``cloud_runs`` replicas over its min of 1, its HPA wanting what it runs; the
    cloud's HPA last scaled ``quiet_s`` seconds ago."""
    prefs: dict[str, Any] = {"priorities": {"onprem": 2, "cloud": 1}} if policy == "Prioritized" else {}
    if policy == "StaticWeighted":
        prefs = {"weights": {"onprem": 1, "cloud": 4}}
    f = fhpa(policy, 2, 200, scalingToZero=scaling_to_zero, **prefs)
    onprem_room = CapacityObservation(firm=onprem_firm)
    cloud_room = CapacityObservation(
        firm=cloud_firm, elastic=390, source="cluster-autoscaler", pods_per_node=pods_per_node
    )
    hpa = owned_hpa(f, 1, 10, cloud_runs, desired=cloud_runs)
    cloud_hpa = hpa.model_copy(update={"last_scale_time": T0 - quiet_s * S})
    at_min = cloud_runs <= 1
    slots = {
        "onprem": Slot(
            cluster=obs("onprem", 19, onprem_firm, capacity=onprem_room, hpa=owned_hpa(f, 2, 190, 19)),
            min_replicas=2,
            max_replicas=190,
        ),
        "cloud": Slot(
            cluster=obs("cloud", cloud_runs, 400, capacity=cloud_room, hpa=cloud_hpa),
            min_replicas=1,
            max_replicas=10,
            idle_since=T0 - quiet_s * S if at_min else None,
            woken_at=woken_at,
        ),
    }
    return Fleet(fhpa=f, now=T0, slots=slots)


def test_the_lowest_tier_goes_to_zero_once_the_tiers_above_have_firm_room_for_it() -> None:
    # the usual zeroing waits for on-prem to sit at its min too, which it never does while it carries
    # the base load: the cloud kept its one replica, and the node under it, all day
    fleet = _after_the_burst(quiet_s=301)
    assert zero.drain_lowest_tier(fleet, window_seconds=300)
    assert fleet.slots["cloud"].replicas == 0
    assert fleet.slots["onprem"].replicas is None  # its HPA takes the load up itself


def test_the_lowest_tier_goes_to_zero_from_the_pods_its_kept_node_holds() -> None:
    """Found by running the hybrid bench fleets over two days: the campaign's fall left the cloud's HPA at
    2 pods over its min of 1 (2 x 0.9 of target rounds up to 2), the rule waited for its min, and the
    cloud kept its node every night after the first campaign (the second day cost 24.74, the first
    16.36). Pods on the node its min keeps go with the node."""
    fleet = _after_the_burst(quiet_s=301, cloud_runs=2, pods_per_node=10)
    assert zero.drain_lowest_tier(fleet, window_seconds=300)
    assert fleet.slots["cloud"].replicas == 0
    # its HPA scaled within the window: not yet
    assert not zero.drain_lowest_tier(
        _after_the_burst(quiet_s=200, cloud_runs=2, pods_per_node=10), window_seconds=300
    )
    # nor within the hour after a wake, as at its min
    woken = _after_the_burst(quiet_s=301, cloud_runs=2, pods_per_node=10, woken_at=T0 - 1200 * S)
    assert not zero.drain_lowest_tier(woken, window_seconds=300)


def test_pods_beyond_the_kept_nodes_are_not_zeroed_at_once() -> None:
    # 12 pods need a second node: they leave by the drain and the pins first, a node at a time
    assert not zero.drain_lowest_tier(
        _after_the_burst(quiet_s=900, cloud_runs=12, pods_per_node=10), window_seconds=300
    )
    # the node shape unknown, the kept pods are the min itself: 2 over a min of 1 stay
    assert not zero.drain_lowest_tier(_after_the_burst(quiet_s=900, cloud_runs=2), window_seconds=300)


def test_a_node_group_goes_to_zero_after_a_burst_under_the_policies_that_shed_node_groups_first() -> None:
    """The divided policies began the day with the cloud at 0 and woke it for the campaign; after it, only
    the rule that waits for every cluster at its min could zero it, which on-prem carrying the base
    load never is: the cloud kept its node from the first campaign on (the hybrid fleets' second day
    cost 24.74 under each of them, the first 16.36)."""
    for policy in ("Aggregated", "DynamicWeighted", "StaticWeighted"):
        fleet = _after_the_burst(quiet_s=301, cloud_runs=2, pods_per_node=10, policy=policy)
        assert zero.drain_lowest_tier(fleet, window_seconds=300), policy
        assert fleet.slots["cloud"].replicas == 0
        # on-prem is no node group: it is never the tier that goes, even where the cloud has firm room
        # for its 19 and the policy's order ranks it last (StaticWeighted: weight 1 against 4)
        fleet = _after_the_burst(
            quiet_s=301, cloud_runs=2, pods_per_node=10, policy=policy, onprem_firm=19, cloud_firm=40
        )
        assert not zero.drain_lowest_tier(fleet, window_seconds=300), policy
        assert fleet.slots["onprem"].replicas is None, policy
    # Duplicated moves nothing between clusters
    fleet = _after_the_burst(quiet_s=301, cloud_runs=2, pods_per_node=10, policy="Duplicated")
    assert not zero.drain_lowest_tier(fleet, window_seconds=300)


def _two_node_groups(policy: str, cheap_min_nodes: int = 1, cheap_runs: int = 5) -> Fleet:
    """cheap (a node group kept at ``cheap_min_nodes`` nodes of 10 pods) and dear (a node group from 0
    nodes), both running 5 pods on one node after a burst, their HPAs quiet for the window; the
    bench's weights, cheap 1 and dear 3, under StaticWeighted."""
    prefs: dict[str, Any] = {"weights": {"cheap": 1, "dear": 3}} if policy == "StaticWeighted" else {}
    f = fhpa(policy, 2, 200, scalingToZero=True, **prefs)
    slots = {}
    for name, min_nodes, runs in (("cheap", cheap_min_nodes, cheap_runs), ("dear", 0, 5)):
        room = CapacityObservation(
            firm=10, elastic=70, source="cluster-autoscaler", pods_per_node=10, standing_pods=10 * min_nodes
        )
        hpa = owned_hpa(f, 2, 100, runs).model_copy(update={"last_scale_time": T0 - 900 * S})
        slots[name] = Slot(
            cluster=obs(name, runs, 80, capacity=room, hpa=hpa), min_replicas=2, max_replicas=100
        )
    return Fleet(fhpa=f, now=T0, slots=slots)


def test_in_a_fleet_of_node_groups_the_group_whose_node_would_go_packs_onto_the_others() -> None:
    """Found on the cloud-at-max bench fleet over two days: after the campaign both groups kept 5 pods on
    a node each (the second day cost 51.88 to 52.93 under the divided policies, the first 34.32). The
    group kept at one node by its own minimum size frees nothing at 0, whatever the policy's order says
    (StaticWeighted's lowest weight is cheap's: zeroed, its node stayed and dear took everything,
    75.93); dear's 5 pods fit on cheap's node."""
    for policy in ("Aggregated", "DynamicWeighted", "StaticWeighted"):
        fleet = _two_node_groups(policy)
        assert zero.drain_lowest_tier(fleet, window_seconds=300), policy
        assert (fleet.slots["dear"].replicas, fleet.slots["cheap"].replicas) == (0, None), policy
    # Aggregated's order (the fewest replicas) ranks cheap last when it runs 4: still dear goes
    fleet = _two_node_groups("Aggregated", cheap_runs=4)
    assert zero.drain_lowest_tier(fleet, window_seconds=300)
    assert (fleet.slots["dear"].replicas, fleet.slots["cheap"].replicas) == (0, None)
    # neither kept by its group: the policy's own order picks, cheap (its 4 fit on dear's node)
    fleet = _two_node_groups("Aggregated", cheap_min_nodes=0, cheap_runs=4)
    assert zero.drain_lowest_tier(fleet, window_seconds=300)
    assert (fleet.slots["cheap"].replicas, fleet.slots["dear"].replicas) == (0, None)


def test_a_zeroing_waits_until_the_last_write_has_settled() -> None:
    """Found by review: the pass after a zeroing read the room above from counts the zeroed cluster's load
    had not reached yet, and a second cluster went to 0 onto the same room (4 pods into room for 3)."""
    fleet = _after_the_burst(quiet_s=301, cloud_runs=2, pods_per_node=10)
    fleet.slots["onprem"].last_write = T0 - 30 * S
    assert not zero.drain_lowest_tier(fleet, window_seconds=300, settle_seconds=60)
    assert zero.drain_lowest_tier(fleet, window_seconds=300, settle_seconds=20)
    # nor in a pass that wrote replicas already
    fleet = _after_the_burst(quiet_s=301, cloud_runs=2, pods_per_node=10)
    fleet.slots["onprem"].replicas = 20
    assert not zero.drain_lowest_tier(fleet, window_seconds=300)


def test_a_pin_above_spends_the_room_a_zeroing_would_use() -> None:
    """Found by review: a take-back of the same pass pinned on-prem at 6 more, and the cloud's 2 were
    zeroed onto the same room (8 pods into room for 7)."""
    fleet = _after_the_burst(quiet_s=301, cloud_runs=2, pods_per_node=10, onprem_firm=22)
    fleet.slots["onprem"].pin = 21
    assert not zero.drain_lowest_tier(fleet, window_seconds=300)
    fleet = _after_the_burst(quiet_s=301, cloud_runs=2, pods_per_node=10, onprem_firm=22)
    assert zero.drain_lowest_tier(fleet, window_seconds=300)


def test_a_held_cluster_of_fixed_room_stands_for_no_node_group() -> None:
    """On-prem blips: the cloud is not zeroed onto another node group meanwhile, as if the fleet had
    node groups alone (found by review)."""
    fleet = _two_node_groups("Aggregated", cheap_min_nodes=0)
    onprem = Slot(cluster=obs("onprem", 19, 40), min_replicas=2, max_replicas=100, held=True)
    fleet.slots["onprem"] = onprem
    assert not zero.drain_lowest_tier(fleet, window_seconds=300)


def test_the_lowest_tier_is_not_zeroed_within_the_hour_after_a_wake() -> None:
    # the zeroing hysteresis holds here too: a cloud woken 20 minutes ago stays up for the hour
    assert not zero.drain_lowest_tier(
        _after_the_burst(quiet_s=301, woken_at=T0 - 1200 * S), window_seconds=300
    )
    assert zero.drain_lowest_tier(_after_the_burst(quiet_s=301, woken_at=T0 - 3600 * S), window_seconds=300)


def test_the_lowest_tier_waits_a_stabilization_window_and_for_firm_room() -> None:
    assert not zero.drain_lowest_tier(_after_the_burst(quiet_s=200), window_seconds=300)
    # on-prem runs 19 and holds 19 now: the cloud's replica would need a node somewhere
    assert not zero.drain_lowest_tier(_after_the_burst(quiet_s=900, onprem_firm=19), window_seconds=300)
    # without scalingToZero the lowest tier keeps its min
    assert not zero.drain_lowest_tier(
        _after_the_burst(quiet_s=900, scaling_to_zero=False), window_seconds=300
    )


def _ratio(fleet: list[ClusterObservation], ratio: float) -> list[ClusterObservation]:
    """Every member HPA reports its metrics at ``ratio`` of target (one load per pod across the fleet)."""
    return [
        o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": ratio})}) if o.hpa else o
        for o in fleet
    ]


def test_pods_an_assist_started_for_a_quotas_refusals_are_not_started_again_from_zero() -> None:
    """Found by a review of the assist that counts refused pods: the assist started onprem's 10 refused
    pods' worth in b (2 -> 13); at the next pass, before onprem's HPA had come down to its new max,
    its 10 refused pods still called, and c was woken with those 10 as well: 43 for the 33 asked."""
    f = fhpa("StaticWeighted", 2, 100, scalingToZero=True, weights={"onprem": 2, "b": 5, "c": 1})
    f, fleet, p = settle(f, [obs("onprem", 10, 50), obs("b", 2, 13), obs("c", 0, 100)])
    fleet = update(
        fleet,
        "onprem",
        current_replicas=30,
        ready_replicas=20,
        refused_replicas=10,
        hpa_desired=30,
        available_replicas=20,
    )
    fleet = update(fleet, "b", current_replicas=2, ready_replicas=2)
    f, fleet, p = settle(f, _ratio(fleet, 1.5), T0 + 61 * S)
    assert writes(p) == {"b": 13}  # 1.5 x 22 ready = 33 asked for; 20 + 2 run
    fleet = update(fleet, "b", ready_replicas=2)  # its 11 new pods are still starting
    p = run(f, _ratio(fleet, 1.5), T0 + 76 * S)
    assert writes(p) == {"c": 1}  # woken (onprem still calls) at its min, not with the 10 again
    woke = [e.message for e in p.events if e.reason == "ScaledFromZero"]
    # the Event says what was written, not "raised to their min"
    assert woke == ["the running clusters cannot take the load: c started with 1 replica"]
