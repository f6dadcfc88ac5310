"""FederatedHPA and CronFederatedHPA status read by kstatus' rules (the library behind Flux's health
checks) give the state an operator expects.

kstatus' rules for a custom resource, as its documentation and the CRD status convention state them, in
the order it applies them:

1. `metadata.deletionTimestamp` set: Terminating.
2. `status.observedGeneration` present and different from `metadata.generation`: InProgress.
3. a condition `Reconciling` with status "True": InProgress.
4. a condition `Stalled` with status "True": Failed.
5. otherwise: Current.

`kstatus_of` below is those five rules and nothing else; the tests feed it what the status writers
produce.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controller.planning.kstatus import with_kstatus
from controller.planning.namespaces import refused_conditions, without_refusal
from fhpa_api.models import Condition
from tests.support.planning_builders import fhpa, obs, run

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def kstatus_of(obj: dict[str, Any]) -> str:
    meta, status = obj.get("metadata", {}), obj.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "Terminating"
    observed = status.get("observedGeneration")
    if observed is not None and observed != meta.get("generation"):
        return "InProgress"
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    if conditions.get("Reconciling") == "True":
        return "InProgress"
    if conditions.get("Stalled") == "True":
        return "Failed"
    return "Current"


def obj(conditions: list[Condition], generation: int = 4, observed: int = 4) -> dict[str, Any]:
    return {
        "metadata": {"generation": generation},
        "status": {
            "observedGeneration": observed,
            "conditions": [c.model_dump(by_alias=True, mode="json") for c in conditions],
        },
    }


def cond(type_: str, status: str, reason: str = "R", message: str = "m") -> Condition:
    return Condition(type=type_, status=status, reason=reason, message=message, last_transition_time=T0)


def test_ready_true_is_current_and_behind_the_spec_is_in_progress() -> None:
    written = with_kstatus([cond("Ready", "True", "Assigned"), cond("FloorHeld", "True")])
    assert [c.type for c in written] == ["Ready", "FloorHeld"]
    assert kstatus_of(obj(written)) == "Current"
    assert kstatus_of(obj(written, generation=5)) == "InProgress"


def test_ready_false_is_stalled_with_its_reason_so_kstatus_reports_failed() -> None:
    written = with_kstatus([cond("Ready", "False", "NoCandidates", "no healthy cluster matches")])
    stalled = next(c for c in written if c.type == "Stalled")
    assert (stalled.status, stalled.reason, stalled.message) == (
        "True",
        "NoCandidates",
        "no healthy cluster matches",
    )
    assert stalled.last_transition_time == T0  # since Ready went False
    assert kstatus_of(obj(written)) == "Failed"


def test_a_cron_fire_being_applied_is_reconciling() -> None:
    written = with_kstatus([cond("Executing", "True", "Firing", '{"rule":"night"}')])
    assert kstatus_of(obj(written)) == "InProgress"
    done = with_kstatus([c for c in written if c.type != "Executing"])
    assert done == [] and kstatus_of(obj(done)) == "Current"


def test_rewriting_is_stable_and_recovery_drops_stalled() -> None:
    stalled = with_kstatus([cond("Ready", "False", "NoCandidates")])
    assert with_kstatus(stalled) == stalled
    recovered = with_kstatus([c for c in stalled if c.type != "Ready"] + [cond("Ready", "True", "Assigned")])
    assert [c.type for c in recovered] == ["Ready"]
    assert kstatus_of(obj(recovered)) == "Current"


def test_a_refused_namespace_fails_and_allowing_it_again_clears_both_conditions() -> None:
    refused = refused_conditions(None, "namespace shop is not allowed", T0)
    assert kstatus_of(obj(refused)) == "Failed"
    assert without_refusal(refused) is None


def test_deletion_is_terminating_whatever_the_conditions() -> None:
    deleting = obj(with_kstatus([cond("Ready", "False")]))
    deleting["metadata"]["deletionTimestamp"] = "2026-11-25T10:00:00Z"
    assert kstatus_of(deleting) == "Terminating"


def test_the_planner_writes_a_status_kstatus_reads_as_current_or_failed() -> None:
    held = run(fhpa("Duplicated", 1, 5), [obs("a", 2)]).status
    nowhere = run(fhpa("Duplicated", 1, 5, clusters=["x"]), [obs("a", 2)]).status
    for status, expected in ((held, "Current"), (nowhere, "Failed")):
        body = status.model_dump(by_alias=True, mode="json", exclude_none=True)
        assert (
            kstatus_of({"metadata": {"generation": status.observed_generation}, "status": body}) == expected
        )
