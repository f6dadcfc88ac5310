"""The capacity rules through the planner (DESIGN §3 capacity): pods that pend while nodes come, pods no
node group fits, pods a quota refused, and elastic room counted by the capacity-aware split and the
floor."""

from __future__ import annotations

from datetime import timedelta

from controller.planning.observation import CapacityObservation
from controller.planning.pending import as_counted, coming_due, provision_seconds
from controller.planning.planner import PlannerConfig, plan
from controller.planning.room import Elastic, available, combine
from tests.support.planning_builders import T0, bounds, fhpa, obs, row, run, settle, update, writes

S = timedelta(seconds=1)


def burst_fleet(delay: int = 30):
    """member1 (priority 2) runs 16 of max 23; member2 (priority 1) holds 1."""
    f = fhpa("Prioritized", 8, 24, priorities={"member1": 2, "member2": 1}, autoscaleMultiClusterDelay=delay)
    f, fleet, _ = settle(f, [obs("member1", 15, 20), obs("member2", 0, 1)])
    return f, fleet


def coming(fleet, since):
    """member1: 6 of 16 pend, and the cluster autoscaler is adding nodes for them since ``since``."""
    return update(
        fleet,
        "member1",
        current_replicas=16,
        ready_replicas=10,
        pending_replicas=6,
        pending_coming_replicas=6,
        pending_coming_since=since,
        hpa_desired=16,
    )


def spilled(p) -> bool:
    return bool(writes(p).get("member2")) or bounds(p).get("member2", (0, 0))[1] > 1


def test_pods_with_nodes_coming_do_not_spill_within_the_provision_time() -> None:
    f, fleet = burst_fleet()
    fleet = coming(fleet, T0)
    first = run(f, fleet, T0 + 10 * S)
    f = f.model_copy(update={"status": first.status})
    # past autoscaleMultiClusterDelay (30 s), within the default provision time (10 minutes)
    p = run(f, fleet, T0 + 120 * S)
    assert not spilled(p)
    assert row(p, "member1").pending_since == T0 + 10 * S  # they pend, they do not count yet
    assert p.requeue_after_seconds is not None and p.requeue_after_seconds <= 480


def test_pods_with_nodes_coming_spill_once_they_pended_past_the_provision_time() -> None:
    f, fleet = burst_fleet()
    fleet = coming(fleet, T0)
    f = f.model_copy(update={"status": run(f, fleet, T0 + 10 * S).status})
    p = run(f, fleet, T0 + 601 * S)
    assert spilled(p)
    assert writes(p) == {"member2": 7}


def test_the_provision_time_is_the_clusters_else_the_flag_overrides() -> None:
    f, fleet = burst_fleet()
    shown = CapacityObservation(firm=20, elastic=0, source="cluster-autoscaler", provision_seconds=120)
    fleet = update(coming(fleet, T0), "member1", capacity=shown)
    f = f.model_copy(update={"status": run(f, fleet, T0 + 10 * S).status})
    assert spilled(run(f, fleet, T0 + 121 * S))
    config = PlannerConfig(node_provision_seconds=900)
    assert not spilled(plan(f, fleet, T0 + 601 * S, config))


def test_a_node_group_that_shows_nodes_in_no_time_still_gets_the_autoscalers_look() -> None:
    """Found by a user-level review (a node group of 1-pod nodes shown as provisioned in 0 s): the pods
    a burst had just started there counted as stuck the pass after, before the autoscaler had looked
    at them; the cluster was marked full, its max cut and handed to a quota-bound cluster, and the
    next pass moved it back."""
    f, fleet = burst_fleet(delay=0)
    instant = CapacityObservation(firm=20, elastic=100, source="cluster-autoscaler", provision_seconds=0)
    fleet = update(coming(fleet, None), "member1", pending_coming_replicas=0, capacity=instant)
    first = run(f, fleet, T0 + 10 * S)
    f = f.model_copy(update={"status": first.status})
    assert not spilled(run(f, fleet, T0 + 25 * S))  # 15 s after they began to pend: not yet
    assert spilled(run(f, fleet, T0 + 41 * S))  # past the shortest wait: they count
    # an operator's flag of 0 is taken as set: no wait for nodes at all
    assert provision_seconds(fleet[0], 0.0) == 0.0


def test_pods_the_autoscaler_has_not_spoken_of_yet_wait_as_coming_ones_in_a_cluster_that_can_grow() -> None:
    """The cluster autoscaler looks every few seconds: a pod that just began to pend has no Event yet,
    and moving load away would race the node it is about to ask for."""
    f, fleet = burst_fleet(delay=0)
    grows = CapacityObservation(firm=20, elastic=100, source="cluster-autoscaler", provision_seconds=60)
    fleet = update(coming(fleet, None), "member1", pending_coming_replicas=0, capacity=grows)
    first = run(f, fleet, T0 + 10 * S)
    assert not spilled(first)
    f = f.model_copy(update={"status": first.status})
    assert not spilled(run(f, fleet, T0 + 60 * S))
    assert spilled(run(f, fleet, T0 + 71 * S))  # still unheard past the provision time: they count
    # in a cluster that cannot grow, pending pods are the spill's business at once
    fixed = update(fleet, "member1", capacity=grows.model_copy(update={"elastic": 0}))
    assert spilled(run(f.model_copy(update={"status": None}), fixed, T0 + 10 * S))


def test_the_unheard_clock_starts_again_when_nodes_arrive() -> None:
    """Found on the two-elastic-regions bench fleet: in a climb the cluster's pods pend without a break
    (each batch until its node comes), so pods that began to pend a moment ago were counted from the
    climb's first pod and spilled before the autoscaler's next look."""
    f, fleet = burst_fleet(delay=0)
    grows = CapacityObservation(firm=20, elastic=100, source="cluster-autoscaler", provision_seconds=60)
    fleet = update(coming(fleet, None), "member1", pending_coming_replicas=0, capacity=grows)
    f = f.model_copy(update={"status": run(f, fleet, T0 + 10 * S).status})
    # 61 s on, a node has come (firm room 30) and new pods of the climb pend, unheard yet
    arrived = update(fleet, "member1", capacity=grows.model_copy(update={"firm": 30, "elastic": 90}))
    p = run(f, arrived, T0 + 71 * S)
    assert not spilled(p)
    assert row(p, "member1").pending_since == T0 + 71 * S
    # the same pods with no node come since: counted from when the cluster's pods began to pend
    assert spilled(run(f, fleet, T0 + 71 * S))


def test_pods_no_node_group_fits_spill_at_once_without_the_delay() -> None:
    f, fleet = burst_fleet(delay=300)
    stuck = update(
        fleet,
        "member1",
        current_replicas=16,
        ready_replicas=10,
        pending_replicas=6,
        pending_stuck_replicas=6,
        hpa_desired=16,
    )
    assert spilled(run(f, stuck, T0 + 10 * S))
    plain = update(stuck, "member1", pending_stuck_replicas=0)
    assert not spilled(run(f, plain, T0 + 10 * S))  # without the word of the autoscaler: the delay holds


def test_a_quota_refused_cluster_spills_though_nothing_pends() -> None:
    f, fleet = burst_fleet(delay=300)
    refused = update(
        fleet, "member1", current_replicas=16, ready_replicas=10, refused_replicas=6, hpa_desired=16
    )
    p = run(f, refused, T0 + 10 * S)
    assert writes(p) == {"member2": 7}
    assert row(p, "member1").pending_replicas == 6


def test_as_counted_keeps_an_observation_without_signals() -> None:
    plain = obs("a", 3, 5, pending_replicas=2)
    assert as_counted(plain, T0, None, 0) is plain
    assert provision_seconds(plain, None) == 600


def test_a_pass_is_due_when_the_coming_pods_start_to_count() -> None:
    waiting = obs("a", 6, 6, pending_replicas=2, pending_coming_replicas=2, pending_coming_since=T0)
    assert coming_due(waiting, None, 30) == T0 + 600 * S
    assert coming_due(waiting, 60, 300) == T0 + 300 * S  # the delay, when longer than the provision time
    assert coming_due(obs("b", 6, 6), None, 30) is None


def test_an_elastic_cluster_at_zero_nodes_is_room_for_the_capacity_aware_split() -> None:
    """DynamicWeighted over a full on-prem cluster and a cloud cluster at zero nodes whose node group can
    add 40 pods: the cloud cluster weighs by firm + elastic, not by its empty allocatable."""
    cloud = combine(running=0, fit=0, elastic=Elastic(pods=40, source="cluster-autoscaler"))
    f = fhpa("DynamicWeighted", 4, 50)
    p = run(f, [obs("onprem", 10, 10), obs("cloud", 0, available(cloud), capacity=cloud)])
    assert bounds(p)["cloud"][1] >= 30
    blind = run(f, [obs("onprem", 10, 10), obs("cloud", 0, 0)])
    assert bounds(blind).get("cloud", (0, 0))[1] <= 1


def test_the_floor_counts_elastic_room() -> None:
    """F.min 20 over on-prem (room 10) and a cloud cluster at zero nodes that can grow 40 pods: the floor
    holds, and the cloud cluster's min covers what on-prem cannot."""
    cloud = combine(running=0, fit=0, elastic=Elastic(pods=40, source="cluster-autoscaler"))
    f = fhpa("Prioritized", 20, 60, priorities={"onprem": 2, "cloud": 1})
    p = run(f, [obs("onprem", 10, 10), obs("cloud", 0, available(cloud), capacity=cloud)])
    floor = next(c for c in p.status.conditions or [] if c.type == "FloorHeld")
    assert floor.status == "True"
    assert bounds(p)["cloud"][0] >= 10


def test_prioritized_mins_take_firm_room_before_a_preferred_clusters_nodes_to_come() -> None:
    """F.min 10 under Prioritized: the preferred cloud runs 4 pods on its nodes and could grow 6 more,
    on-prem (lower) has room for 10 now. The mins hold the floor on what runs now: on-prem's min covers
    what the cloud's nodes hold not, and the cloud keeps the max to grow into as the load asks."""
    cloud = combine(running=4, fit=0, elastic=Elastic(pods=6, source="cluster-autoscaler"))
    f = fhpa("Prioritized", 10, 30, priorities={"cloud": 2, "onprem": 1})
    p = run(f, [obs("cloud", 4, available(cloud), capacity=cloud), obs("onprem", 0, 10)])
    assert bounds(p)["cloud"][0] == 4 and bounds(p)["cloud"][1] >= 10
    assert bounds(p)["onprem"][0] == 6


def test_the_unheard_clock_does_not_restart_for_less_than_a_node_of_room() -> None:
    """In a shared cluster other pods come and go: firm room up by one pod where a node holds ten is no
    node arriving, and the pods that pend keep their clock; a node's worth restarts it."""
    f, fleet = burst_fleet(delay=0)
    grows = CapacityObservation(
        firm=20, elastic=100, source="cluster-autoscaler", provision_seconds=60, pods_per_node=10
    )
    fleet = update(coming(fleet, None), "member1", pending_coming_replicas=0, capacity=grows)
    f = f.model_copy(update={"status": run(f, fleet, T0 + 10 * S).status})
    ticked = update(fleet, "member1", capacity=grows.model_copy(update={"firm": 21}))
    assert spilled(run(f, ticked, T0 + 71 * S))
    arrived = update(fleet, "member1", capacity=grows.model_copy(update={"firm": 30, "elastic": 90}))
    assert not spilled(run(f, arrived, T0 + 71 * S))


def test_arriving_nodes_restart_the_unheard_clock_at_most_one_wait_after_the_pods_began_to_pend() -> None:
    """A node arrives every pass and pods still pend: each arrival restarts the clock, but never past
    the first pending plus the wait (60 s), so the pods count two waits after they began to pend."""
    f, fleet = burst_fleet(delay=0)
    grows = CapacityObservation(firm=20, elastic=100, source="cluster-autoscaler", provision_seconds=60)
    fleet = update(coming(fleet, None), "member1", pending_coming_replicas=0, capacity=grows)
    t, firm = 10, 20
    p = run(f, fleet, T0 + t * S)
    spills = []
    while t < 200:
        f, t, firm = f.model_copy(update={"status": p.status}), t + 15, firm + 1
        p = run(f, update(fleet, "member1", capacity=grows.model_copy(update={"firm": firm})), T0 + t * S)
        spills.append((t, spilled(p)))
    assert row(p, "member1").pending_first_since == T0 + 10 * S
    assert next(at for at, s in spills if s) <= 10 + 2 * 60 + 15


def test_a_climb_on_a_node_group_keeps_its_clock_past_two_waits_while_nodes_come() -> None:
    """Where a node holds ten pods, each rise of ten is a node that came: a long climb whose batches
    each pend until their node comes is still the autoscaler's work after two waits, so nothing spills
    while a node arrives at every pass."""
    f, fleet = burst_fleet(delay=0)
    grows = CapacityObservation(
        firm=20, elastic=100, source="cluster-autoscaler", provision_seconds=60, pods_per_node=10
    )
    fleet = update(coming(fleet, None), "member1", pending_coming_replicas=0, capacity=grows)
    t, firm = 10, 20
    p = run(f, fleet, T0 + t * S)
    while t < 400:
        f, t, firm = f.model_copy(update={"status": p.status}), t + 15, firm + 10
        p = run(f, update(fleet, "member1", capacity=grows.model_copy(update={"firm": firm})), T0 + t * S)
        assert not spilled(p), f"spilled at t={t}s while a node came at every pass"
