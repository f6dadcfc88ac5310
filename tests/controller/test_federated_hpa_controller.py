"""The FederatedHPA reconciler: what decides whether a pass may run, and what its outcome asks for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import controller.federated_hpa_controller as module
from controller.errors import ConflictError, PortError
from controller.executor import ExecutionResult
from controller.federated_hpa_controller import FederatedHPAReconciler
from controller.finalizer import FINALIZER
from controller.planning.namespaces import NamespacePolicy
from controller.planning.plan import Plan
from controller.ports import ClusterIdentity
from controller.result import Result
from fhpa_api.models import FederatedHPA, FederatedHPAStatus
from tests.controller.test_reconcile import FixedClock, make_fhpa
from tests.support.member_fakes import FakeMember, LoggingControlPlane


@dataclass
class Store(LoggingControlPlane):
    """The fake control plane with the finalizer list the reconciler writes."""

    finalizer_writes: list[list[str]] = field(default_factory=list)

    def set_finalizers(self, fhpa: FederatedHPA, finalizers: list[str]) -> FederatedHPA:
        self.calls.append("finalizers")
        self.finalizer_writes.append(list(finalizers))
        stored = self.fhpas[("shop", "web")]
        meta = stored.metadata.model_copy(update={"finalizers": finalizers})
        self.fhpas[("shop", "web")] = stored.model_copy(update={"metadata": meta})
        return self.fhpas[("shop", "web")]


def setup(**kw: Any) -> tuple[Store, dict[str, FakeMember], FederatedHPAReconciler]:
    store = Store()
    store.add(make_fhpa())
    members = {"a": FakeMember(ClusterIdentity(name="a"), store.calls)}
    return store, members, FederatedHPAReconciler(store, lambda: members, FixedClock(), **kw)


def pass_returning(monkeypatch: pytest.MonkeyPatch, requeue: float | None, result: ExecutionResult) -> None:
    def fake(fhpa: FederatedHPA, *args: Any, **kwargs: Any) -> tuple[Plan, ExecutionResult]:
        return Plan(status=FederatedHPAStatus(), requeue_after_seconds=requeue), result

    monkeypatch.setattr(module, "reconcile_federated_hpa", fake)


def test_an_object_that_is_gone_asks_for_nothing() -> None:
    store, _, reconciler = setup()
    assert reconciler.reconcile("shop", "absent") == Result()
    assert store.calls == []


def test_clusters_known_but_not_registered_make_it_wait_without_touching_anything() -> None:
    store, _, reconciler = setup(unknown=lambda: ["late"])
    with pytest.raises(PortError, match="not registered yet: late"):
        reconciler.reconcile("shop", "web")
    assert store.calls == []  # no observe, no finalizer, no status


def test_a_refused_namespace_gets_status_and_one_event_and_no_member_call() -> None:
    store, _, reconciler = setup(namespaces=NamespacePolicy(deny=("shop",)))
    assert reconciler.reconcile("shop", "web") == Result()
    assert reconciler.reconcile("shop", "web") == Result()
    assert store.calls == ["status", "event/NamespaceNotAllowed"]


def test_the_finalizer_comes_first_and_the_plans_requeue_is_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pass_returning(monkeypatch, 7.5, ExecutionResult())
    store, _, reconciler = setup()
    assert reconciler.reconcile("shop", "web") == Result(7.5)
    assert store.finalizer_writes == [[FINALIZER]]


def test_a_conflict_or_a_failed_write_is_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, reconciler = setup()
    pass_returning(monkeypatch, 7.5, ExecutionResult(conflict=True, stale={"a": "409"}))
    with pytest.raises(ConflictError, match="member objects changed since they were observed: a"):
        reconciler.reconcile("shop", "web")
    pass_returning(monkeypatch, 7.5, ExecutionResult(failed={"a": "refused"}))
    with pytest.raises(PortError, match="a: refused"):
        reconciler.reconcile("shop", "web")


def test_a_deleted_object_has_its_member_hpas_removed_then_the_finalizer_released() -> None:
    store, _, reconciler = setup()
    stored = store.fhpas[("shop", "web")]
    meta = stored.metadata.model_copy(
        update={"finalizers": [FINALIZER], "deletion_timestamp": "2026-11-22T07:59:00Z"}
    )
    store.fhpas[("shop", "web")] = stored.model_copy(update={"metadata": meta})
    cleaned: list[Any] = []
    reconciler.on_cleanup = cleaned.append
    assert reconciler.reconcile("shop", "web") == Result()
    assert store.calls[0] == "delete/a" and store.finalizer_writes == [[]]
    assert cleaned[0].released
