"""The planner's pass as a whole: member HPA actions, status, conditions, Events, requeue.

That the planning package stays pure is tests/test_import_contract.py's job."""

from __future__ import annotations

from datetime import timedelta

import pytest

from controller.planning.observation import MemberHPAObservation
from controller.planning.planner import PlannerConfig, plan
from tests.support.planning_builders import (
    CONFIG,
    T0,
    bounds,
    condition,
    fhpa,
    obs,
    owned_hpa,
    reasons,
    run,
    settle,
    update,
    writes,
)

S = timedelta(seconds=1)


def foreign(name: str) -> MemberHPAObservation:
    return MemberHPAObservation(name="theirs", owned=False, min_replicas=1, max_replicas=5)


def test_every_member_action_is_an_event() -> None:
    p = run(fhpa("Duplicated", 3, 10), [obs("a", 1), obs("b", 5)])
    assert reasons(p).count("MemberHPACreated") == 2
    assert reasons(p).count("ReplicasSet") == 1
    assert "Assigned" in reasons(p)
    created = [a for a in p.hpa_actions if a.op == "create"]
    assert created[0].spec is not None and created[0].spec["minReplicas"] == 3


def test_a_conflicting_hpa_gets_no_hpa_from_us_and_its_share_goes_elsewhere() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    p = run(f, [obs("a", 2), obs("b", 2, hpa=foreign("b"))])
    assert bounds(p) == {"a": (2, 10)}
    assert [a.cluster for a in p.hpa_actions] == ["a"]
    assert "b" not in writes(p)
    assert condition(p, "b", "Assigned").reason == "ConflictingHPA"
    warning = next(e for e in p.events if e.reason == "ConflictingHPA")
    assert warning.type == "Warning"
    # reported once: the next pass does not repeat the Event
    f2 = f.model_copy(update={"status": p.status})
    assert "ConflictingHPA" not in reasons(
        run(f2, [obs("a", 2, hpa=owned_hpa(f, 2, 10, 2)), obs("b", 2, hpa=foreign("b"))])
    )


def test_a_missing_target_still_gets_its_hpa_but_no_replica_write() -> None:
    p = run(fhpa("Duplicated", 3, 10), [obs("a", 0, workload_found=False)])
    assert [(a.cluster, a.op) for a in p.hpa_actions] == [("a", "create")]
    assert writes(p) == {}
    assert condition(p, "a", "TargetFound").reason == "TargetMissing"
    assert "TargetMissing" in reasons(p)


def test_matching_hpas_get_no_action_and_a_changed_template_is_updated() -> None:
    f = fhpa("Duplicated", 3, 10)
    f, fleet, _ = settle(f, [obs("a", 4), obs("b", 5)])
    assert not run(f, fleet, T0 + S).has_member_writes
    hpa = fleet[0].hpa
    assert hpa is not None
    # someone changed a's HPA template (or we changed metrics/behavior): its digest no longer matches
    stale = update(fleet, "a", hpa=hpa.model_copy(update={"template_digest": "old"}))
    p = run(f, stale, T0 + S)
    assert [(a.cluster, a.op) for a in p.hpa_actions] == [("a", "update")]


def test_a_spec_change_reassigns() -> None:
    f = fhpa("Duplicated", 3, 10)
    f, fleet, _ = settle(f, [obs("a", 4)])
    bigger = f.model_copy(
        update={
            "spec": f.spec.model_copy(update={"max_replicas": 20}),
            "metadata": f.metadata.model_copy(update={"generation": 2}),
        }
    )
    p = run(bigger, fleet, T0 + S)
    assert bounds(p) == {"a": (3, 20)}
    assert p.status.observed_generation == 2


def test_status_sums_and_conditions() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    fleet = [obs("a", 3, hpa=None), obs("b", 2)]
    p = run(f, fleet)
    assert p.status.current_replicas == 5
    ready = next(c for c in p.status.conditions or [] if c.type == "Ready")
    assert ready.status == "True" and ready.last_transition_time == T0
    f2 = f.model_copy(update={"status": p.status})
    later = run(f2, fleet, T0 + 5 * S)
    ready2 = next(c for c in later.status.conditions or [] if c.type == "Ready")
    assert ready2.last_transition_time == T0  # unchanged status keeps its transition time


def test_no_candidates() -> None:
    p = run(fhpa("Duplicated", 1, 5, clusters=["x"]), [obs("a", 2)])
    ready = next(c for c in p.status.conditions or [] if c.type == "Ready")
    assert ready.status == "False" and ready.reason == "NoCandidates"
    assert not p.has_member_writes


def test_duplicate_cluster_names_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate cluster names"):
        run(fhpa(), [obs("a"), obs("a")])


def test_planner_config_defaults_and_bounds() -> None:
    config = PlannerConfig()
    assert (config.failover_grace_seconds, config.optimization_period_seconds) == (60, 60)
    assert config.rejoin_hysteresis_seconds == 120
    with pytest.raises(ValueError):
        PlannerConfig(optimization_period_seconds=0)


def test_plan_is_deterministic_and_does_not_mutate_its_input() -> None:
    f = fhpa("Aggregated", 2, 12)
    fleet = [obs("a", 3, 5), obs("b", 1, 9)]
    before = f.model_dump()
    assert plan(f, fleet, T0, CONFIG) == plan(f, list(reversed(fleet)), T0, CONFIG)
    assert f.model_dump() == before


def test_floor_above_what_the_clusters_hold_is_a_condition_and_one_warning() -> None:
    # F.min 30 against clusters that can hold 10 + 8: the ceiling holds, the floor gives way (README)
    f = fhpa("Aggregated", 30, 40)
    f, fleet, p = settle(f, [obs("a", 5, 10), obs("b", 5, 8)])
    floor = next(c for c in p.status.conditions if c.type == "FloorHeld")
    assert (floor.status, floor.reason) == ("False", "CapacityBelowMinReplicas")
    assert "hold 18 of minReplicas 30" in floor.message
    # the pods beyond wait where they are, pending or, under a quota, never created (not "pending")
    assert "(pending, or refused by a quota)" in floor.message
    assert reasons(p).count("CapacityBelowMinReplicas") == 1
    p = run(f, fleet, T0 + timedelta(seconds=15))
    assert "CapacityBelowMinReplicas" not in reasons(p)  # on the transition only
    roomy = update(update(fleet, "a", available_replicas=40), "b", available_replicas=40)
    p = run(f, roomy, T0 + timedelta(seconds=30))
    assert next(c for c in p.status.conditions if c.type == "FloorHeld").status == "True"


def test_a_blip_raises_no_floor_warning() -> None:
    # a and b can hold 50 + 40 against F.min 60; a stops answering within its grace: it still counts
    f = fhpa("StaticWeighted", 60, 80, weights={"a": 1, "b": 1})
    f, fleet, p = settle(f, [obs("a", 30, 50), obs("b", 30, 40)])
    assert next(c for c in p.status.conditions if c.type == "FloorHeld").status == "True"
    p = run(f, update(fleet, "a", healthy=False), T0 + timedelta(seconds=15))
    assert "CapacityBelowMinReplicas" not in reasons(p)
