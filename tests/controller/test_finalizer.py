"""The FederatedHPA finalizer: member HPAs removed on delete, unreachable clusters retried then reported."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.errors import ClusterUnreachableError, ConflictError, NotFoundError, PortError
from controller.finalizer import FINALIZER, clean_up, ensure_finalizer
from controller.planning.plan import ReplicaWrite
from controller.ports import ClusterIdentity, MemberWrite
from fhpa_api.models import ClusterStatus, FederatedHPA, FederatedHPAStatus

NOW = datetime(2026, 11, 22, 0, 0, tzinfo=UTC)


def fhpa(
    finalizers: list[str] | None = None, deleting_for: float | None = None, clusters: tuple[str, ...] = ()
) -> FederatedHPA:
    meta: dict[str, Any] = {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7"}
    if finalizers is not None:
        meta["finalizers"] = finalizers
    if deleting_for is not None:
        meta["deletionTimestamp"] = (NOW - timedelta(seconds=deleting_for)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = FederatedHPAStatus(
        clusters=[ClusterStatus(name=c, min_replicas=1, max_replicas=3) for c in clusters]
    )
    return FederatedHPA.model_validate(
        {
            "metadata": meta,
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 5,
            },
            "status": status.to_json(),
        }
    )


class Member:
    def __init__(self, name: str, fail: Exception | None = None) -> None:
        self.identity = ClusterIdentity(name=name)
        self.fail = fail
        self.deleted: list[str] = []
        self.scaled: list[int] = []

    def write(self, f: FederatedHPA, action: MemberWrite) -> None:
        if isinstance(action, ReplicaWrite):
            self.scaled.append(1)
            return
        assert action.op == "delete"
        if self.fail:
            raise self.fail
        self.deleted.append(f.metadata.name or "")


class Plane:
    def __init__(self) -> None:
        self.finalizers: list[list[str]] = []
        self.events: list[tuple[str, str, str]] = []
        self.statuses: list[FederatedHPAStatus] = []

    def set_finalizers(self, f: FederatedHPA, finalizers: list[str]) -> FederatedHPA:
        self.finalizers.append(finalizers)
        return f.model_copy(update={"metadata": f.metadata.model_copy(update={"finalizers": finalizers})})

    def emit_event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))

    def update_federated_hpa_status(self, f: FederatedHPA, status: FederatedHPAStatus) -> FederatedHPA:
        self.statuses.append(status)
        return f


def test_the_finalizer_is_added_once_and_kept_with_others() -> None:
    plane: Any = Plane()
    out = ensure_finalizer(fhpa(["other/x"]), plane)
    assert out.metadata.finalizers == ["other/x", FINALIZER]
    ensure_finalizer(out, plane)
    assert len(plane.finalizers) == 1
    ensure_finalizer(fhpa([], deleting_for=1), plane)
    assert len(plane.finalizers) == 1  # never added to an object being deleted


def test_delete_removes_every_member_hpa_leaves_workloads_and_releases() -> None:
    plane: Any = Plane()
    members: dict[str, Any] = {
        "m1": Member("m1"),
        "m2": Member("m2"),
        "m3": Member("m3", NotFoundError("absent")),
    }
    result = clean_up(fhpa(["other/x", FINALIZER], deleting_for=1), members, plane, plane, NOW)
    assert result.released and result.removed == ["m1", "m2", "m3"]
    assert members["m1"].deleted == ["web"] and members["m2"].deleted == ["web"]
    assert all(not m.scaled for m in members.values())
    assert plane.finalizers == [["other/x"]]
    assert plane.events[-1][1] == "CleanedUp"


def test_an_unreachable_cluster_is_retried_and_reported_then_abandoned_with_a_warning() -> None:
    plane: Any = Plane()
    members: dict[str, Any] = {
        "m1": Member("m1"),
        "m2": Member("m2", ClusterUnreachableError("m2", "timeout")),
    }
    early = clean_up(
        fhpa([FINALIZER], deleting_for=30), members, plane, plane, NOW, give_up_after_seconds=300
    )
    assert not early.released and early.requeue_after_seconds and "m2" in early.failed
    assert plane.finalizers == []
    assert plane.events[-1][:2] == ("Warning", "CleanupRetrying")
    cond = plane.statuses[-1].conditions[-1]
    assert cond.type == "CleanupPending" and "m2" in (cond.message or "")
    late = clean_up(
        fhpa([FINALIZER], deleting_for=301), members, plane, plane, NOW, give_up_after_seconds=300
    )
    assert late.released
    assert plane.finalizers == [[]]
    kind, reason, message = plane.events[-1]
    assert (kind, reason) == ("Warning", "CleanupAbandoned") and "m2" in message and "u1" in message


def test_a_cluster_in_status_that_is_no_longer_registered_counts_as_not_cleaned() -> None:
    plane: Any = Plane()
    result = clean_up(fhpa([FINALIZER], deleting_for=5, clusters=("gone",)), {}, plane, plane, NOW)
    assert result.failed == {"gone": "cluster is no longer registered"} and not result.released


def test_without_our_finalizer_there_is_nothing_to_do() -> None:
    plane: Any = Plane()
    member: Any = Member("m1")
    result = clean_up(fhpa(["other/x"], deleting_for=5), {"m1": member}, plane, plane, NOW)
    assert result.released and member.deleted == [] and plane.finalizers == []


def test_cleaned_up_counts_the_clusters_that_held_an_hpa_not_every_cluster_asked() -> None:
    plane: Any = Plane()
    members: dict[str, Any] = {name: Member(name) for name in ("m1", "m2", "m3")}
    clean_up(fhpa([FINALIZER], deleting_for=1, clusters=("m1", "m3")), members, plane, plane, NOW)
    assert plane.events[-1][1:] == (
        "CleanedUp",
        "member HPAs removed from 2 clusters (m1, m3); 3 clusters checked",
    )
    clean_up(fhpa([FINALIZER], deleting_for=1), members, plane, plane, NOW)
    assert plane.events[-1][1:] == ("CleanedUp", "no member HPA was left to remove (3 clusters checked)")


class RefusingPlane(Plane):
    """An API server whose admission refuses the finalizer removal (a webhook that is down)."""

    def set_finalizers(self, f: FederatedHPA, finalizers: list[str]) -> FederatedHPA:
        raise PortError('Internal error: failed calling webhook "validate.example": connection refused')


def test_a_refused_finalizer_removal_is_a_warning_and_is_retried() -> None:
    plane: Any = RefusingPlane()
    members: dict[str, Any] = {"m1": Member("m1")}
    result = clean_up(fhpa([FINALIZER], deleting_for=1, clusters=("m1",)), members, plane, plane, NOW)
    assert not result.released and result.requeue_after_seconds
    kind, reason, message = plane.events[-1]
    assert (kind, reason) == ("Warning", "FinalizerNotRemoved") and "failed calling webhook" in message
    assert not [e for e in plane.events if e[1] == "CleanedUp"]
    late = clean_up(fhpa([FINALIZER], deleting_for=999, clusters=("gone",)), {}, plane, plane, NOW)
    assert not late.released and plane.events[-1][1] == "FinalizerNotRemoved"  # abandoning needs it too


def test_a_conflict_on_release_is_left_to_the_caller_without_an_event() -> None:
    class Conflicting(Plane):
        def set_finalizers(self, f: FederatedHPA, finalizers: list[str]) -> FederatedHPA:
            raise ConflictError("the object has been modified")

    plane: Any = Conflicting()
    with pytest.raises(ConflictError):
        clean_up(fhpa([FINALIZER], deleting_for=1), {}, plane, plane, NOW)
    assert plane.events == []
