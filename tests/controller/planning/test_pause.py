"""Pause (controller.planning.pause): frozen bounds, no failover or spill, Paused condition and Events."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from controller.planning.observation import ClusterObservation
from controller.planning.pause import CONDITION
from fhpa_api.models import FederatedHPA
from fhpa_api.pause import PAUSED_ANNOTATION
from tests.controller.planning.test_planner_properties import fleets
from tests.support.planning_builders import (
    T0,
    bounds,
    condition,
    fhpa,
    obs,
    reasons,
    row,
    run,
    settle,
    update,
    writes,
)

S = timedelta(seconds=1)


def annotated(f: FederatedHPA, value: str | None) -> FederatedHPA:
    annotations = {} if value is None else {PAUSED_ANNOTATION: value}
    meta = f.metadata.model_copy(update={"annotations": annotations})
    return f.model_copy(update={"metadata": meta})


def paused_condition(f_or_plan_status):
    return next((c for c in f_or_plan_status.conditions or [] if c.type == CONDITION), None)


def two_clusters():
    f = fhpa("StaticWeighted", 2, 20, weights={"a": 1, "b": 1})
    f, fleet, p = settle(f, [obs("a", 4), obs("b", 6)])
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    return f, fleet


def test_a_paused_fleet_keeps_its_bounds_through_an_outage_and_fails_over_on_resume() -> None:
    f, fleet = two_clusters()
    f = annotated(f, "true")
    down = update(fleet, "b", healthy=False, current_replicas=0, ready_replicas=0, hpa=None)
    f, down, p = settle(f, down, T0 + 10 * S)
    assert "Paused" in reasons(p)
    assert "frozen while paused" in next(e.message for e in p.events if e.reason == "Unhealthy")
    p = run(f, down, T0 + 1000 * S)  # far past the grace
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    assert not p.has_member_writes
    assert row(p, "b").state is None  # held, not failed over
    assert "frozen" in condition(p, "b", "Assigned").message
    assert p.requeue_after_seconds is None
    resumed = annotated(f.model_copy(update={"status": p.status}), None)
    p = run(resumed, down, T0 + 1001 * S)
    assert bounds(p) == {"a": (2, 20)}  # the outage started at T0+10: past the grace at once
    assert row(p, "b").state == "FailedOver"
    assert "Resumed" in reasons(p)
    assert paused_condition(p.status).status == "False"


def test_a_paused_fleet_does_not_spill_pending_pods() -> None:
    f = fhpa("Prioritized", 2, 20, priorities={"a": 2, "b": 1})
    f, fleet, p = settle(f, [obs("a", 4, available=30), obs("b", 0, available=30)])
    before = bounds(p)
    f = annotated(f, "true")
    pending = update(fleet, "a", current_replicas=8, ready_replicas=4, pending_replicas=4)
    f, pending, p = settle(f, pending, T0 + 5 * S)
    p = run(f, pending, T0 + 600 * S)
    assert bounds(p) == before
    assert not p.has_member_writes
    unpaused = run(annotated(f, None), pending, T0 + 601 * S)
    assert bounds(unpaused) != before  # the same fleet, resumed, does spill


def test_a_spec_change_while_paused_is_assigned_on_resume() -> None:
    f, fleet = two_clusters()
    f = annotated(f, "true")
    grown = f.model_copy(
        update={
            "spec": f.spec.model_copy(update={"max_replicas": 40}),
            "metadata": f.metadata.model_copy(update={"generation": 2}),
        }
    )
    p = run(grown, fleet, T0 + S)
    assert bounds(p) == {"a": (1, 10), "b": (1, 10)}
    assert not writes(p)
    resumed = annotated(grown.model_copy(update={"status": p.status}), "false")
    assert bounds(run(resumed, fleet, T0 + 2 * S)) == {"a": (1, 20), "b": (1, 20)}


def test_a_hand_edited_member_hpa_is_put_back_to_its_frozen_bounds() -> None:
    f, fleet = two_clusters()
    f = annotated(f, "true")
    f, fleet, _ = settle(f, fleet, T0 + S)
    edited = update(fleet, "a", hpa=fleet[0].hpa.model_copy(update={"max_replicas": 3}))
    p = run(f, edited, T0 + 2 * S)
    assert [(a.cluster, a.op, a.max_replicas) for a in p.hpa_actions] == [("a", "update", 10)]


def test_paused_condition_and_events_are_reported_once() -> None:
    f, fleet = two_clusters()
    assert paused_condition(f.status) is None  # never paused: no condition
    f = annotated(f, "true")
    f, fleet, p = settle(f, fleet, T0 + S)
    c = paused_condition(p.status)
    assert (c.status, c.reason) == ("True", "PausedByAnnotation")
    assert "a 1..10, b 1..10" in c.message
    assert reasons(p).count("Paused") == 1
    again = run(f, fleet, T0 + 2 * S)
    assert "Paused" not in reasons(again)
    assert paused_condition(again.status).last_transition_time == T0 + S


def test_only_true_pauses() -> None:
    f, fleet = two_clusters()
    p = run(annotated(f, "yes"), fleet, T0 + S)
    assert paused_condition(p.status) is None
    assert "Paused" not in reasons(p)


@st.composite
def paused_fleets(draw: st.DrawFn) -> tuple[FederatedHPA, list[ClusterObservation], list[ClusterObservation]]:
    """An assigned fleet, then the same fleet paused with some clusters down, loads moved, pods pending."""
    f, observations = draw(fleets(healthy_only=True))
    f, observations, _ = settle(f, observations)
    later = []
    for o in observations:
        current = draw(st.integers(0, 40))
        later.append(
            o.model_copy(
                update={
                    "healthy": draw(st.sampled_from([True, True, False])),
                    "current_replicas": current,
                    "ready_replicas": current,
                    "pending_replicas": draw(st.integers(0, current)),
                }
            )
        )
    return annotated(f, "true"), observations, later


@given(paused_fleets(), st.integers(1, 7200))
def test_a_paused_pass_never_moves_a_bound_writes_replicas_or_deletes_an_hpa(
    case: tuple[FederatedHPA, list[ClusterObservation], list[ClusterObservation]], seconds: int
) -> None:
    f, _, later = case
    recorded = {r.name: (r.min_replicas, r.max_replicas) for r in f.status.clusters or []}
    p = run(f, later, T0 + seconds * S)
    assert not p.replica_writes
    assert all(a.op != "delete" for a in p.hpa_actions)
    for r in p.status.clusters or []:
        if r.name in recorded and recorded[r.name][1]:
            assert (r.min_replicas, r.max_replicas) == recorded[r.name]
        assert r.state != "FailedOver"
