"""A small in-memory ControlPlane for the cron controller's tests (the simulator has the full one).

It keeps resourceVersions so that status writes can conflict, records every write and Event, and can be
told to fail the next few calls of a method with a given error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from controller.errors import ConflictError, NotFoundError, PortError
from fhpa_api.models import (
    CronFederatedHPA,
    CronFederatedHPAStatus,
    CrossVersionObjectReference,
    FederatedHPA,
    FederatedHPAStatus,
)


@dataclass
class RecordedEvent:
    kind: str
    name: str
    type: str
    reason: str
    message: str


@dataclass
class FakeControlPlane:
    fhpas: dict[tuple[str, str], FederatedHPA] = field(default_factory=dict)
    crons: dict[tuple[str, str], CronFederatedHPA] = field(default_factory=dict)
    workloads: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (namespace, kind, name)
    events: list[RecordedEvent] = field(default_factory=list)
    scale_calls: list[tuple[str, str, str, int]] = field(default_factory=list)
    patch_calls: list[tuple[str, str, int | None, int | None]] = field(default_factory=list)
    status_writes: int = 0
    failures: dict[str, list[PortError]] = field(default_factory=dict)
    config_maps: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # (namespace, name)
    _version: int = 0

    # ----- test helpers -----

    def add(self, obj: FederatedHPA | CronFederatedHPA) -> None:
        key = (obj.metadata.namespace or "default", obj.metadata.name or "")
        stored = self._bump(obj)
        if isinstance(stored, FederatedHPA):
            self.fhpas[key] = stored
        else:
            self.crons[key] = stored

    def fail_next(self, method: str, *errors: PortError) -> None:
        self.failures.setdefault(method, []).extend(errors)

    def reasons(self) -> list[str]:
        return [e.reason for e in self.events]

    def _maybe_fail(self, method: str) -> None:
        pending = self.failures.get(method)
        if pending:
            raise pending.pop(0)

    def _bump(self, obj: FederatedHPA | CronFederatedHPA) -> FederatedHPA | CronFederatedHPA:
        self._version += 1
        meta = obj.metadata.model_copy(update={"resource_version": str(self._version)})
        return obj.model_copy(update={"metadata": meta}, deep=True)

    # ----- ControlPlane -----

    def get_federated_hpa(self, namespace: str, name: str) -> FederatedHPA | None:
        self._maybe_fail("get_federated_hpa")
        obj = self.fhpas.get((namespace, name))
        return obj.model_copy(deep=True) if obj else None

    def list_federated_hpas(self) -> list[FederatedHPA]:
        return [o.model_copy(deep=True) for o in self.fhpas.values()]

    def update_federated_hpa_status(self, fhpa: FederatedHPA, status: FederatedHPAStatus) -> FederatedHPA:
        key = (fhpa.metadata.namespace or "default", fhpa.metadata.name or "")
        stored = self.fhpas[key]
        if stored.metadata.resource_version != fhpa.metadata.resource_version:
            raise ConflictError(f"FederatedHPA {key} changed")
        new = self._bump(stored.model_copy(update={"status": status}))
        assert isinstance(new, FederatedHPA)
        self.fhpas[key] = new
        return new

    def patch_federated_hpa_bounds(
        self, namespace: str, name: str, min_replicas: int | None, max_replicas: int | None
    ) -> FederatedHPA:
        self._maybe_fail("patch_federated_hpa_bounds")
        stored = self.fhpas.get((namespace, name))
        if stored is None:
            raise NotFoundError(f"FederatedHPA {namespace}/{name}")
        self.patch_calls.append((namespace, name, min_replicas, max_replicas))
        spec = stored.spec.model_copy(
            update={
                **({"min_replicas": min_replicas} if min_replicas is not None else {}),
                **({"max_replicas": max_replicas} if max_replicas is not None else {}),
            }
        )
        new = self._bump(stored.model_copy(update={"spec": spec}))
        assert isinstance(new, FederatedHPA)
        self.fhpas[(namespace, name)] = new
        return new

    def get_cron_federated_hpa(self, namespace: str, name: str) -> CronFederatedHPA | None:
        obj = self.crons.get((namespace, name))
        return obj.model_copy(deep=True) if obj else None

    def list_cron_federated_hpas(self) -> list[CronFederatedHPA]:
        return [o.model_copy(deep=True) for o in self.crons.values()]

    def update_cron_federated_hpa_status(
        self, cron: CronFederatedHPA, status: CronFederatedHPAStatus
    ) -> CronFederatedHPA:
        self._maybe_fail("update_cron_federated_hpa_status")
        key = (cron.metadata.namespace or "default", cron.metadata.name or "")
        stored = self.crons[key]
        if stored.metadata.resource_version != cron.metadata.resource_version:
            raise ConflictError(f"CronFederatedHPA {key} changed")
        new = self._bump(stored.model_copy(update={"status": status}))
        assert isinstance(new, CronFederatedHPA)
        self.crons[key] = new
        self.status_writes += 1
        return new

    def get_config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        self._maybe_fail("get_config_map_data")
        found = self.config_maps.get((namespace, name))
        return dict(found) if found is not None else None

    def scale_workload(self, namespace: str, target: CrossVersionObjectReference, replicas: int) -> None:
        self._maybe_fail("scale_workload")
        key = (namespace, target.kind, target.name)
        if key not in self.workloads:
            raise NotFoundError(f"{target.kind} {namespace}/{target.name}")
        self.scale_calls.append((namespace, target.kind, target.name, replicas))
        self.workloads[key] = replicas

    def emit_event(
        self,
        obj: FederatedHPA | CronFederatedHPA,
        type_: Literal["Normal", "Warning"],
        reason: str,
        message: str,
    ) -> None:
        self.events.append(RecordedEvent(obj.kind, obj.metadata.name or "", type_, reason, message))
