"""Small in-memory MemberCluster and ControlPlane doubles that log every call in one shared order.

The executor's and reconcile's tests assert on the order of side effects across clusters and the control
plane, so all doubles append to the same list; each can be told to fail the next calls of a method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from controller.errors import ClusterUnreachableError, PortError
from controller.planning.observation import ClusterObservation
from controller.planning.plan import ReplicaWrite
from controller.ports import ClusterIdentity, MemberWrite
from fhpa_api.models import CronFederatedHPA, FederatedHPA, FederatedHPAStatus
from tests.support.fakes import FakeControlPlane


@dataclass
class FakeMember:
    """A member cluster that records what was asked of it and answers ``observe`` with a fixed observation."""

    ident: ClusterIdentity
    calls: list[str]
    observation: ClusterObservation | None = None
    reachable: bool = True
    hpa_specs: dict[str, dict[str, object]] = field(default_factory=dict)
    replicas: dict[str, int] = field(default_factory=dict)
    failures: dict[str, list[PortError]] = field(default_factory=dict)

    @property
    def identity(self) -> ClusterIdentity:
        return self.ident

    def fail_next(self, method: str, *errors: PortError) -> None:
        self.failures.setdefault(method, []).extend(errors)

    def _maybe_fail(self, method: str) -> None:
        pending = self.failures.get(method)
        if pending:
            raise pending.pop(0)

    def probe(self) -> bool:
        return self.reachable

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        self.calls.append(f"observe/{self.ident.name}")
        self._maybe_fail("observe")
        if not self.reachable:
            raise ClusterUnreachableError(self.ident.name, "connection refused")
        return self.observation or ClusterObservation(name=self.ident.name, labels=self.ident.labels)

    def write(self, fhpa: FederatedHPA, action: MemberWrite) -> None:
        name = fhpa.metadata.name or ""
        if isinstance(action, ReplicaWrite):
            self.calls.append(f"scale/{self.ident.name}={action.replicas}")
            self._maybe_fail("scale_workload")
            target = fhpa.spec.scale_target_ref
            self.replicas[f"{fhpa.metadata.namespace or 'default'}/{target.kind}/{target.name}"] = (
                action.replicas
            )
        elif action.op == "delete":
            self.calls.append(f"delete/{self.ident.name}")
            self._maybe_fail("delete_hpa")
            self.hpa_specs.pop(name, None)
        else:
            self.calls.append(f"apply/{self.ident.name}")
            self._maybe_fail("apply_hpa")
            self.hpa_specs[name] = action.spec or {}


@dataclass
class LoggingControlPlane(FakeControlPlane):
    """FakeControlPlane that also logs status writes and Events into the shared call list."""

    calls: list[str] = field(default_factory=list)

    def update_federated_hpa_status(self, fhpa: FederatedHPA, status: FederatedHPAStatus) -> FederatedHPA:
        self.calls.append("status")
        self._maybe_fail("update_federated_hpa_status")
        return super().update_federated_hpa_status(fhpa, status)

    def emit_event(
        self,
        obj: FederatedHPA | CronFederatedHPA,
        type_: Literal["Normal", "Warning"],
        reason: str,
        message: str,
    ) -> None:
        self.calls.append(f"event/{reason}")
        self._maybe_fail("emit_event")
        super().emit_event(obj, type_, reason, message)
