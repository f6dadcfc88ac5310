"""What `fhpa explain` says: the words come from status and Events the REAL planner wrote (the planning
builders run controller.planning.plan), read by fhpa.explanation."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from controller.planning.observation import CapacityObservation
from controller.planning.plan import Plan
from fhpa.explanation import ClusterExplanation, Explanation, explain, render
from fhpa_api.models import ClusterStatus, FederatedHPA
from tests.support.planning_builders import T0, fhpa, obs, run, settle, update

S = timedelta(seconds=1)


def as_events(p: Plan, f: FederatedHPA, when: datetime) -> list[dict[str, Any]]:
    """The plan's Events as core/v1 Event dicts, as the control plane records them."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return [
        {
            "involvedObject": {"kind": "FederatedHPA", "name": f.metadata.name, "uid": f.metadata.uid},
            "type": e.type,
            "reason": e.reason,
            "message": e.message,
            "count": 1,
            "lastTimestamp": stamp,
        }
        for e in p.events
    ]


def cluster(e: Explanation, name: str) -> ClusterExplanation:
    return next(c for c in e.clusters if c.name == name)


def test_static_weighted_prints_the_capped_split_and_where_the_excess_went() -> None:
    """Weights 1/1 of F.max 10 with room for 2 and 3: the split caps each share at its room and puts
    the 5 nobody can hold on the first cluster in order; explain prints those, not 5/5."""
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    p = run(f, [obs("a", 1, 2), obs("b", 1, 3)])
    e = explain(f.model_copy(update={"status": p.status}), [], T0)
    a, b = cluster(e, "a").why[0], cluster(e, "b").why[0]
    assert a.startswith("StaticWeighted: weight 1 of 2 (a 1, b 1): F.max 10 divides to max 7, "), a
    assert "capped at its room 2 at assignment; its max holds the excess 5 that no cluster had room" in a
    assert b.startswith("StaticWeighted: weight 1 of 2 (a 1, b 1): F.max 10 divides to max 3, "), b
    assert "capped at its room 3 at assignment" in b and "excess" not in b


def test_dynamic_weighted_prints_the_rooms_the_split_read_not_todays() -> None:
    """The split read rooms 6 and 2; a later pass sees other rooms, and explain still prints the split
    as it was made (the weights recorded at assignment)."""
    f = fhpa("DynamicWeighted", 2, 8)
    f, fleet, _ = settle(f, [obs("a", 1, 6), obs("b", 1, 2)])
    fleet = update(fleet, "a", available_replicas=1)
    f, fleet, _ = settle(f, fleet, T0 + 10 * S)
    line = cluster(explain(f, [], T0 + 10 * S), "a").why[0]
    assert line.startswith("DynamicWeighted: weight 6 of 8 (a 6, b 2; each its room at assignment): "), line


def test_static_weighted_split_and_keep_what_runs_in_numbers() -> None:
    """DESIGN §3 Seed 002 StaticWeighted: F 2..10, weights 1/2/3, current 1/4/0 gives max 1/4/5."""
    f = fhpa("StaticWeighted", 2, 10, weights={"member1": 1, "member2": 2, "member3": 3})
    p = run(f, [obs("member1", 1), obs("member2", 4), obs("member3", 0)])
    f2 = f.model_copy(update={"status": p.status})
    e = explain(f2, as_events(p, f, T0), T0 + 5 * S)
    assert [(c.name, c.min_replicas, c.max_replicas) for c in e.clusters] == [
        ("member1", 1, 1),
        ("member2", 1, 4),
        ("member3", 2, 5),
    ]
    m2, m3 = cluster(e, "member2"), cluster(e, "member3")
    assert m2.why[0].startswith("StaticWeighted: weight 2 of 6 (member1 1, member2 2, member3 3): F.max 10")
    assert "divides to max 3" in m2.why[0]
    assert any(
        line.startswith("keep what runs: the split's max 3 is raised to the 4 replicas") for line in m2.why
    )
    assert any("1 below the split's 6" in line for line in m3.why)
    # the member actions are that cluster's Events; the assignment names no single cluster
    assert {ev.reason for ev in m2.events} == {"MemberHPACreated"}
    assert [ev.reason for ev in e.events] == ["Assigned"]
    text = render(e)
    assert "member2: min 1 max 4, 4 replicas  [Assigned]" in text
    assert "Not in status" in text


def test_an_unreachable_cluster_says_when_it_fails_over_and_then_that_it_did() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 2), obs("b", 2)])
    down = update(fleet, "b", healthy=False)
    p = run(f, down, T0 + 10 * S)
    held = explain(f.model_copy(update={"status": p.status}), [], T0 + 40 * S)
    b = cluster(held, "b")
    assert b.state == "Unreachable"
    assert b.next == [
        "fails over at 2026-01-01T12:01:10Z (in 30s) if it stays unreachable (its grace 60s); answering "
        "before then it just carries on"
    ]
    f2 = f.model_copy(update={"status": p.status})
    later = run(f2, down, T0 + 75 * S)
    e = explain(
        f2.model_copy(update={"status": later.status}), as_events(later, f2, T0 + 75 * S), T0 + 80 * S
    )
    b = cluster(e, "b")
    assert b.state == "FailedOver"
    assert b.why[-1].startswith("failed over") or any(w.startswith("failed over") for w in b.why)
    assert b.next == [
        "rejoins at once when its API server answers again, keeping what it runs (the others give way)"
    ]
    assert "FailedOver" in {ev.reason for ev in b.events}

    f3 = f2.model_copy(update={"status": later.status})
    back = run(f3, update(down, "b", healthy=True), T0 + 90 * S)
    events = as_events(later, f2, T0 + 75 * S) + as_events(back, f3, T0 + 90 * S)
    b = cluster(explain(f3.model_copy(update={"status": back.status}), events, T0 + 95 * S), "b")
    assert b.state == "Assigned"
    assert b.why[-1].startswith(
        "rejoined at 2026-01-01T12:01:30Z after a failover, keeping what it ran; 1 failover within"
    )


def row(name: str, **fields: Any) -> ClusterStatus:
    fields.setdefault("min_replicas", 1)
    fields.setdefault("max_replicas", 5)
    fields.setdefault("current_replicas", 3)
    conditions = [{"type": "Assigned", "status": "True", "reason": "Assigned", "message": "member HPA"}]
    return ClusterStatus.model_validate({"name": name, "conditions": conditions, **fields})


def with_rows(f: FederatedHPA, *rows: ClusterStatus) -> FederatedHPA:
    return f.model_copy(update={"status": f.status.model_copy(update={"clusters": list(rows)})})


@pytest.fixture
def prioritized() -> FederatedHPA:
    f = fhpa(
        "Prioritized", 2, 12, priorities={"hi": 2, "lo": 1}, scalingToZero=True, autoscaleMultiClusterDelay=30
    )
    p = run(f, [obs("hi", 3, available=10), obs("lo", 0, available=10)])
    return f.model_copy(update={"status": p.status})


def test_a_cluster_down_while_paused_says_its_bounds_are_frozen() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 2), obs("b", 2)])
    meta = f.metadata.model_copy(update={"annotations": {"autoscaling.karmada.io/paused": "true"}})
    f = f.model_copy(update={"metadata": meta})
    p = run(f, update(fleet, "b", healthy=False), T0 + 10 * S)
    e = explain(f.model_copy(update={"status": p.status}), as_events(p, f, T0 + 10 * S), T0 + 500 * S)
    b = cluster(e, "b")
    assert b.state == "Unreachable"
    assert any("frozen while the FederatedHPA is paused" in w for w in b.why)
    assert b.next == [
        "fails over on the first pass after the resume if it is still unreachable past its grace"
    ]
    assert e.next[0].startswith("nothing across clusters while paused")
    assert any(line.startswith("Paused=True (PausedByAnnotation)") for line in e.summary)


def test_a_pin_says_what_releases_it(prioritized: FederatedHPA) -> None:
    e = explain(with_rows(prioritized, row("hi", pinned_min_replicas=4, max_replicas=8)), [], T0)
    hi = cluster(e, "hi")
    assert (hi.state, hi.hpa_min_replicas) == ("Pinned", 4)
    assert "pinned: its member HPA's min is 4 (assigned min 1)" in " ".join(hi.why)
    assert hi.next == [
        "the pin is released, back to the assigned min, once every lower-priority cluster is at its min"
    ]
    assert hi.why[0].startswith("Prioritized: priority 2;")


def test_a_take_back_pin_says_when_it_ends(prioritized: FederatedHPA) -> None:
    taking = row("hi", pinned_min_replicas=4, max_replicas=8, take_back_held_until=T0 + 360 * S)
    hi = cluster(explain(with_rows(prioritized, taking), [], T0), "hi")
    assert hi.state == "Pinned"
    assert hi.next == [
        "the take-back's pin holds until its end in 6m, at 2026-01-01T12:06:00Z (the lower-priority "
        "clusters' scale-down window, for them to shed what it took), then is released, back to the "
        "assigned min, once no lower-priority cluster sheds any more"
    ]


def test_a_burst_hold_says_why_and_when_it_ends(prioritized: FederatedHPA) -> None:
    held = row("lo", pinned_min_replicas=4, max_replicas=8, assist_held_until=T0 + 300 * S)
    lo = cluster(explain(with_rows(prioritized, held), [], T0), "lo")
    assert (lo.state, lo.hpa_min_replicas) == ("Held", 4)
    assert "burst assist started these replicas" in " ".join(lo.why)
    assert lo.next == ["the hold ends at 2026-01-01T12:05:00Z, back to the assigned min"]


def test_a_pin_made_by_the_planner_is_explained_with_its_event() -> None:
    """Seed 002's scale-down (priorities 3/2/1 running 4/9/4, load falling): the planner pins c1 and c2."""
    f = fhpa("Prioritized", 1, 17, priorities={"c1": 3, "c2": 2, "c3": 1})
    f, fleet, _ = settle(f, [obs("c1", 4, 4), obs("c2", 9, 9), obs("c3", 4, 4)])
    for name in ("c1", "c2", "c3"):
        fleet = update(fleet, name, hpa_desired=2)
    p = run(f, fleet, T0 + S)
    e = explain(f.model_copy(update={"status": p.status}), as_events(p, f, T0 + S), T0 + 2 * S)
    c1 = cluster(e, "c1")
    assert (c1.state, c1.min_replicas, c1.hpa_min_replicas) == ("Pinned", 1, 4)
    assert "pinned: its member HPA's min is 4 (assigned min 1)" in " ".join(c1.why)
    assert "Pinned" in {ev.reason for ev in c1.events}
    assert cluster(e, "c3").state == "Assigned"
    assert "c1: min 1 (HPA min 4) max 4, 4 replicas  [Pinned]" in render(e)


def test_saturation_and_pending_pods_say_when_capacity_moves(prioritized: FederatedHPA) -> None:
    since = T0 - 10 * S
    e = explain(
        with_rows(prioritized, row("hi", pending_replicas=2, pending_since=since, ready_replicas=3)),
        [],
        T0,
    )
    assert (
        cluster(e, "hi")
        .next[0]
        .startswith("2 pods pend or are refused since 2026-01-01T11:59:50Z; if they still do in 20s")
    )
    saturated = row("hi", state="Saturated", pending_since=since, ready_replicas=3, max_replicas=3)
    hi = cluster(explain(with_rows(prioritized, saturated), [], T0), "hi")
    assert hi.state == "Saturated"
    assert any(w.startswith("saturated: pods could not be placed here since") for w in hi.why)
    # a Saturated cluster whose pods still pend (a quota's refusals, say) is promised no move past its
    # delay: its max was held already (a review read "the rest moves to other clusters (due since 7m)"
    # for a cluster whose max no other cluster had room for)
    pending = row(
        "hi", state="Saturated", pending_replicas=13, pending_since=since, ready_replicas=20, max_replicas=50
    )
    hi = cluster(explain(with_rows(prioritized, pending), [], T0 + 600 * S), "hi")
    assert not any("due since" in n or "moves to other clusters" in n for n in hi.next), hi.next
    assert hi.next and "stays here until room appears" in hi.next[0]


def test_scaled_to_zero_says_what_wakes_it(prioritized: FederatedHPA) -> None:
    lo = cluster(
        explain(with_rows(prioritized, row("lo", current_replicas=0, last_scale_time=T0)), [], T0), "lo"
    )
    assert lo.state == "ScaledToZero"
    assert lo.why[-1].startswith("scaled to zero at 2026-01-01T12:00:00Z")
    assert lo.next[0].startswith(
        "wakes (the highest-priority cluster at 0 first) when a running cluster's HPA"
    )
    assert "for 30s" in lo.next[0]


def test_a_cluster_the_planner_leaves_at_zero_says_what_wakes_it() -> None:
    """DESIGN §3 Seed 002 Prioritized, scalingToZero: F 8..24, priority 2/1, available 20/1, current 15/0."""
    f = fhpa("Prioritized", 8, 24, priorities={"member1": 2, "member2": 1}, scalingToZero=True)
    p = run(f, [obs("member1", 15, 20), obs("member2", 0, 1)])
    e = explain(f.model_copy(update={"status": p.status}), as_events(p, f, T0), T0)
    member2 = cluster(e, "member2")
    # never started (the planner wrote it no replicas), not scaled to zero
    assert (member2.state, member2.min_replicas, member2.max_replicas) == ("NotStarted", 1, 1)
    assert any(w.startswith("not started: the running clusters hold minReplicas") for w in member2.why)
    assert member2.next[0].startswith("wakes (the highest-priority cluster at 0 first)")
    assert cluster(e, "member1").state == "Assigned"


def test_events_of_another_incarnation_are_left_out_and_json_is_camel_case() -> None:
    f = fhpa("Duplicated", 1, 4)
    p = run(f, [obs("a", 1)])
    f2 = f.model_copy(update={"status": p.status})
    events = as_events(p, f, T0)
    stale = dict(
        events[0], involvedObject={"kind": "FederatedHPA", "name": "web", "uid": "old"}, message="a: old"
    )
    data = explain(f2, [*events, stale], T0).to_dict()
    assert data["clusters"][0]["maxReplicas"] == 4
    assert all(ev["message"] != "a: old" for c in data["clusters"] for ev in c["events"])
    assert "notInStatus" in data


def test_explain_says_why_a_cluster_is_full_or_growing() -> None:
    """The room the planner recorded in status: firm + elastic, where from, and why, in words."""
    f = fhpa("Prioritized", 1, 60, priorities={"onprem": 2, "cloud": 1})
    quota = CapacityObservation(firm=40, elastic=0, source="quota", detail="quota 40 pods, 40 used")
    growing = CapacityObservation(
        firm=2, elastic=40, source="cluster-autoscaler", detail="2 nodes coming, TriggeredScaleUp"
    )
    at_max = CapacityObservation(
        firm=30, elastic=0, source="cluster-autoscaler", detail="node group at max 30 (NotTriggerScaleUp)"
    )
    fleet = [
        obs("onprem", 40, 40, capacity=quota, refused_replicas=3),
        obs(
            "cloud",
            2,
            42,
            capacity=growing,
            pending_replicas=4,
            pending_coming_replicas=4,
            pending_coming_since=T0 - 70 * S,
        ),
        obs("spot", 30, 30, capacity=at_max, pending_replicas=1, pending_stuck_replicas=1),
    ]
    p = run(f, fleet, T0)
    rows = {r.name: r for r in p.status.clusters or []}
    assert rows["cloud"].capacity is not None
    assert (rows["cloud"].capacity.firm, rows["cloud"].capacity.elastic, rows["cloud"].capacity.source) == (
        2,
        40,
        "cluster-autoscaler",
    )
    assert rows["cloud"].capacity.coming_since == T0 - 70 * S
    e = explain(f.model_copy(update={"status": p.status}), [], T0)
    assert "room: 40 firm + 0 elastic (quota): quota 40 pods, 40 used" in cluster(e, "onprem").why
    assert (
        "room: 2 firm + 40 elastic (cluster-autoscaler): 2 nodes coming, TriggeredScaleUp 70 s ago"
        in cluster(e, "cloud").why
    )
    assert (
        "room: 30 firm + 0 elastic (cluster-autoscaler): node group at max 30 (NotTriggerScaleUp)"
        in cluster(e, "spot").why
    )
    assert not any("available capacity" in gap for gap in e.not_in_status)  # status holds each room


def test_replicas_a_quota_refused_are_not_called_running(prioritized: FederatedHPA) -> None:
    # found by a user-level review: "33 running, 13 pending" for a workload of 33 replicas of which 20
    # existed (its quota refused 13): the count is the workload's, the pods are fewer
    e = explain(
        with_rows(prioritized, row("hi", current_replicas=33, ready_replicas=20, pending_replicas=13)), [], T0
    )
    text = render(e)
    assert "33 replicas (20 ready), 13 pending or refused" in text
    assert "running" not in text.split("hi: ", 1)[1].split("\n", 1)[0]
