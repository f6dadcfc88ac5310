"""The control-plane API server in memory: the simulator's implementation of the ControlPlane port.

It keeps what a real API server would guarantee the controller: every write bumps ``resourceVersion``,
spec writes bump ``generation``, and a status write against a stale ``resourceVersion`` is refused with
ConflictError. Stored objects are never changed in place: a write stores a new object, so a read can
hand out a cheap snapshot (top level and metadata copied, spec and status shared with the stored
version) instead of a deep copy; a day of 10 clusters does some 6,000 reads and writes. Callers treat
what they read as read-only, as the controller's pure planner does.
A workload's scale subresource here stands for the template that user tooling propagates Duplicated:
setting it sets that replica count in every member cluster that has the workload.

Events: ``events`` is the trace of every emit (what happened, when: the reports count them);
``stored_events`` is what the API server would hold, one Event per series (controller.event_series)
with its count, first and last time and latest message, as the real adapter writes them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from controller.errors import ConflictError, NotFoundError
from controller.event_series import series_key
from controller.ports import Clock
from fhpa_api.models import (
    CronFederatedHPA,
    CronFederatedHPAStatus,
    CrossVersionObjectReference,
    FederatedHPA,
    FederatedHPASpec,
    FederatedHPAStatus,
)
from simulator.cluster import SimulatedCluster

_UID_NAMESPACE = uuid.UUID("6f1d2f0e-7a31-4d7b-9a55-0b5e3c1f9a10")
"""uids are derived from the object's name, so that runs are reproducible."""

Stored = TypeVar("Stored", FederatedHPA, CronFederatedHPA)


@dataclass(frozen=True)
class RecordedEvent:
    at: datetime
    kind: str
    name: str
    type: str
    reason: str
    message: str


@dataclass
class StoredEvent:
    """One Event object as the API server holds it: a series of repeats."""

    kind: str
    name: str
    type: str
    reason: str
    message: str  # the latest
    first_at: datetime
    last_at: datetime
    count: int = 1


class SimulatedControlPlane:
    """FederatedHPA and CronFederatedHPA storage plus workload templates, events and write counters."""

    def __init__(self, clock: Clock, members: Mapping[str, SimulatedCluster]) -> None:
        self._clock = clock
        self._members = members
        self._fhpas: dict[tuple[str, str], FederatedHPA] = {}
        self._crons: dict[tuple[str, str], CronFederatedHPA] = {}
        self._revision = 0
        self.events: list[RecordedEvent] = []
        self._series: dict[tuple[str, str, str, str], StoredEvent] = {}
        self.template_replicas: dict[tuple[str, str, str], int] = {}
        self.writes = 0
        self.config_maps: dict[tuple[str, str], dict[str, str]] = {}  # (namespace, name): a rule's calendar

    # --- set-up (what `kubectl apply` does in a real fleet) ----------------------------------------

    def create(self, obj: Stored) -> Stored:
        """Store a new object with a uid, generation 1 and a resourceVersion."""
        store = self._store_for(obj)
        key = (obj.metadata.namespace or "default", obj.metadata.name or "")
        if key in store:
            raise ConflictError(f"{obj.kind} {key[0]}/{key[1]} already exists")
        stored = obj.model_copy(deep=True)
        stored.metadata.namespace = key[0]
        stored.metadata.uid = str(uuid.uuid5(_UID_NAMESPACE, f"{obj.kind}/{key[0]}/{key[1]}"))
        stored.metadata.generation = 1
        stored.metadata.resource_version = self._next_revision()
        stored.metadata.creation_timestamp = self._clock.now().isoformat()
        store[key] = stored
        return _snapshot(stored)

    # --- ControlPlane port ------------------------------------------------------------------------

    def get_federated_hpa(self, namespace: str, name: str) -> FederatedHPA | None:
        found = self._fhpas.get((namespace, name))
        return None if found is None else _snapshot(found)

    def peek_federated_hpa(self, namespace: str, name: str) -> FederatedHPA | None:
        """The stored object itself, for the simulator's own measurements (never modified in place)."""
        return self._fhpas.get((namespace, name))

    def list_federated_hpas(self) -> list[FederatedHPA]:
        return [_snapshot(self._fhpas[k]) for k in sorted(self._fhpas)]

    def update_federated_hpa_status(self, fhpa: FederatedHPA, status: FederatedHPAStatus) -> FederatedHPA:
        stored = self._current(self._fhpas, fhpa)
        new = self._replace(stored, status=status.model_copy())
        self._fhpas[_key(new)] = new
        self.writes += 1
        return _snapshot(new)

    def patch_federated_hpa_bounds(
        self, namespace: str, name: str, min_replicas: int | None, max_replicas: int | None
    ) -> FederatedHPA:
        stored = self._fhpas.get((namespace, name))
        if stored is None:
            raise NotFoundError(f"FederatedHPA {namespace}/{name} not found")
        bounds: dict[str, int] = {}
        if min_replicas is not None:
            bounds["min_replicas"] = min_replicas
        if max_replicas is not None:
            bounds["max_replicas"] = max_replicas
        new = self._replace(stored, spec=stored.spec.model_copy(update=bounds), bump_generation=True)
        self._fhpas[(namespace, name)] = new
        self.writes += 1
        return _snapshot(new)

    def set_finalizers(self, fhpa: FederatedHPA, finalizers: list[str]) -> FederatedHPA:
        """Replace metadata.finalizers (ConflictError on a stale read); the last one off an object being
        deleted lets the API server remove it, as a real one does (the answer is its last state)."""
        stored = self._current(self._fhpas, fhpa)
        meta = stored.metadata.model_copy(update={"finalizers": list(finalizers) or None})
        new = self._replace(stored.model_copy(update={"metadata": meta}))
        self.writes += 1
        if new.metadata.deletion_timestamp and not new.metadata.finalizers:
            del self._fhpas[_key(new)]
        else:
            self._fhpas[_key(new)] = new
        return _snapshot(new)

    def delete_federated_hpa(self, namespace: str, name: str) -> None:
        """``kubectl delete``: gone at once without finalizers, else marked (deletionTimestamp) until the
        last finalizer is removed."""
        stored = self._fhpas.get((namespace, name))
        if stored is None:
            raise NotFoundError(f"FederatedHPA {namespace}/{name} not found")
        if not stored.metadata.finalizers:
            del self._fhpas[(namespace, name)]
            return
        if stored.metadata.deletion_timestamp:
            return
        meta = stored.metadata.model_copy(update={"deletion_timestamp": self._clock.now().isoformat()})
        self._fhpas[(namespace, name)] = self._replace(stored.model_copy(update={"metadata": meta}))

    def annotate_federated_hpa(self, namespace: str, name: str, annotations: dict[str, str]) -> FederatedHPA:
        """A user's ``kubectl annotate``: metadata only, so no new generation (as the API server does)."""
        stored = self._fhpas.get((namespace, name))
        if stored is None:
            raise NotFoundError(f"FederatedHPA {namespace}/{name} not found")
        meta = stored.metadata.model_copy(update={"annotations": annotations or None})
        new = self._replace(stored.model_copy(update={"metadata": meta}))
        self._fhpas[(namespace, name)] = new
        self.writes += 1
        return _snapshot(new)

    def get_config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        found = self.config_maps.get((namespace, name))
        return dict(found) if found is not None else None

    def replace_federated_hpa_spec(self, namespace: str, name: str, spec: FederatedHPASpec) -> FederatedHPA:
        """A user's edit of the spec (``kubectl apply`` or ``patch``, already admitted): a new generation."""
        stored = self._fhpas.get((namespace, name))
        if stored is None:
            raise NotFoundError(f"FederatedHPA {namespace}/{name} not found")
        new = self._replace(stored, spec=spec, bump_generation=True)
        self._fhpas[(namespace, name)] = new
        self.writes += 1
        return _snapshot(new)

    def get_cron_federated_hpa(self, namespace: str, name: str) -> CronFederatedHPA | None:
        found = self._crons.get((namespace, name))
        return None if found is None else _snapshot(found)

    def list_cron_federated_hpas(self) -> list[CronFederatedHPA]:
        return [_snapshot(self._crons[k]) for k in sorted(self._crons)]

    def update_cron_federated_hpa_status(
        self, cron: CronFederatedHPA, status: CronFederatedHPAStatus
    ) -> CronFederatedHPA:
        stored = self._current(self._crons, cron)
        new = self._replace(stored, status=status.model_copy())
        self._crons[_key(new)] = new
        self.writes += 1
        return _snapshot(new)

    def scale_workload(self, namespace: str, target: CrossVersionObjectReference, replicas: int) -> None:
        """The template's replicas: propagated Duplicated, every member that has the workload gets them."""
        if replicas < 0:
            raise ValueError(f"replicas must be >= 0, got {replicas}")
        matching = [
            m for m in self._members.values() if m.namespace == namespace and _same(m.workload, target)
        ]
        if not matching:
            raise NotFoundError(f"{target.kind} {namespace}/{target.name} not found in any member cluster")
        self.template_replicas[(namespace, target.kind, target.name)] = replicas
        for member in matching:
            member.propagate_replicas(replicas)
        self.writes += 1

    def emit_event(
        self,
        obj: FederatedHPA | CronFederatedHPA,
        type_: Literal["Normal", "Warning"],
        reason: str,
        message: str,
    ) -> None:
        now, name = self._clock.now(), obj.metadata.name or ""
        self.events.append(RecordedEvent(now, obj.kind, name, type_, reason, message))
        key = (obj.kind, obj.metadata.namespace or "default", name, series_key(type_, reason, message))
        stored = self._series.get(key)
        if stored is None:
            self._series[key] = StoredEvent(obj.kind, name, type_, reason, message, now, now)
        else:
            stored.count, stored.last_at, stored.message = stored.count + 1, now, message

    @property
    def stored_events(self) -> list[StoredEvent]:
        """The Event objects a real API server would hold (no TTL here), in creation order."""
        return list(self._series.values())

    # --- helpers ----------------------------------------------------------------------------------

    def _next_revision(self) -> str:
        self._revision += 1
        return str(self._revision)

    def _replace(self, stored: Stored, bump_generation: bool = False, **fields: Any) -> Stored:
        """A new version of ``stored`` with ``fields`` replaced and a new resourceVersion."""
        meta = stored.metadata.model_copy(update={"resource_version": self._next_revision()})
        if bump_generation:
            meta.generation = (meta.generation or 0) + 1
        return stored.model_copy(update={**fields, "metadata": meta})

    def _store_for(self, obj: FederatedHPA | CronFederatedHPA) -> dict[tuple[str, str], _AnyStored]:
        return self._fhpas if isinstance(obj, FederatedHPA) else self._crons  # type: ignore[return-value]

    @staticmethod
    def _current(store: dict[tuple[str, str], Stored], obj: Stored) -> Stored:
        """The stored object, if ``obj`` was read at its current resourceVersion."""
        key = (obj.metadata.namespace or "default", obj.metadata.name or "")
        stored = store.get(key)
        if stored is None:
            raise NotFoundError(f"{obj.kind} {key[0]}/{key[1]} not found")
        if obj.metadata.resource_version != stored.metadata.resource_version:
            raise ConflictError(
                f"{obj.kind} {key[0]}/{key[1]}: resourceVersion {obj.metadata.resource_version} is stale "
                f"(stored {stored.metadata.resource_version})"
            )
        return stored


_AnyStored = FederatedHPA | CronFederatedHPA


def _key(obj: FederatedHPA | CronFederatedHPA) -> tuple[str, str]:
    return (obj.metadata.namespace or "default", obj.metadata.name or "")


def _snapshot(obj: Stored) -> Stored:
    """What a read returns: its own top level and metadata; spec and status shared, read-only."""
    return obj.model_copy(update={"metadata": obj.metadata.model_copy()})


def _same(workload: CrossVersionObjectReference | None, target: CrossVersionObjectReference) -> bool:
    return workload is not None and (workload.kind, workload.name) == (target.kind, target.name)
