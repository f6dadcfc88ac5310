"""The interfaces the controller's logic talks to. The simulator and the real clusters both implement them.

Every method may raise the errors in controller.errors; none of them returns HTTP-library types. A port
method that changes anything is marked ``@writes``: the write fence (controller.runtime.fence) learns the
verbs it must refuse from these marks, so a new write is fenced the moment it is declared.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar

from controller.planning.observation import ClusterFacts, ClusterObservation
from controller.planning.plan import HPAAction, ReplicaWrite
from fhpa_api.models import (
    CronFederatedHPA,
    CronFederatedHPAStatus,
    CrossVersionObjectReference,
    FederatedHPA,
    FederatedHPAStatus,
)

MemberWrite = HPAAction | ReplicaWrite
"""One of a plan's member writes: the member port takes the plan's own actions, nothing retyped."""

_Method = TypeVar("_Method", bound=Callable[..., Any])
_WRITE_MARK = "__fhpa_writes__"


def writes(method: _Method) -> _Method:
    """Marks a port method as a write, so that every wrapper that guards writes knows it is one."""
    setattr(method, _WRITE_MARK, True)
    return method


def write_verbs(*ports: type) -> frozenset[str]:
    """The names of the methods the given port protocols mark as writes."""
    return frozenset(
        name for port in ports for name in dir(port) if getattr(getattr(port, name, None), _WRITE_MARK, False)
    )


def operation_of(action: MemberWrite) -> str:
    """The member API operation an action becomes: the name metrics and fault injection know it by."""
    if isinstance(action, ReplicaWrite):
        return "scale"
    return "delete_hpa" if action.op == "delete" else "apply_hpa"


class ClusterIdentity(ClusterFacts):
    """What the registry knows of a cluster without asking it: used for affinity even when it is down."""

    # declared on the Secret where nothing readable tells: the pods a node autoscaler can still add, and
    # how long a node takes to come (controller.kube.capacity_signals); not part of an observation
    elastic_pods: int | None = None
    provision_seconds: float | None = None

    def observed(self, **state: Any) -> ClusterObservation:
        """An observation of this cluster: what the registry knows of it plus what was seen (``state``)."""
        facts = {k: v for k, v in dict(self).items() if k in ClusterFacts.model_fields}
        return ClusterObservation(**facts, **state)


class Clock(Protocol):
    def now(self) -> datetime:
        """Timezone-aware UTC now. Virtual in the simulator."""
        ...


class MemberCluster(Protocol):
    """One member cluster's API, as far as this controller uses it."""

    @property
    def identity(self) -> ClusterIdentity: ...

    def probe(self) -> bool:
        """A cheap health check (e.g. GET /readyz) with a short timeout."""
        ...

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        """Workload counts, capacity and the member HPA for this FederatedHPA.

        Raises ClusterUnreachableError when the cluster does not answer.
        """
        ...

    @writes
    def write(self, fhpa: FederatedHPA, action: MemberWrite) -> None:
        """Carry out one member write of a plan made for ``fhpa``; the one way anything changes a member.

        An ``HPAAction`` creates or updates (``op``) the member HPA with ``spec`` (an autoscaling/v2 spec
        body), labelled as owned by ``fhpa``, or deletes it (only if it is ours; absent is fine). Its
        ``observed`` is the HPA as the planning pass saw it: with no resourceVersion the HPA was absent
        and is created (one that exists now is a ConflictError); with one, it is replaced or deleted only
        at that version (a change since is a ConflictError, never retried with a fresh read); None:
        unconditional, for callers without an observation (the finalizer). ``decision``
        (member_hpa.decision_key) is stamped as the annotation ``autoscaling.karmada.io/decision``; an
        HPA that already holds that decision with that spec is not written again.

        A ``ReplicaWrite`` sets the replicas of ``fhpa``'s scale target through its scale subresource;
        with ``observed``, only if the Scale is still at that resourceVersion (ConflictError otherwise).

        Raises NotOwnedError when an HPA of that name exists and is not ours, ConflictError on a 409.
        """
        ...


class ControlPlane(Protocol):
    """The API server that stores FederatedHPA and CronFederatedHPA objects."""

    def get_federated_hpa(self, namespace: str, name: str) -> FederatedHPA | None: ...

    def list_federated_hpas(self) -> list[FederatedHPA]: ...

    @writes
    def update_federated_hpa_status(self, fhpa: FederatedHPA, status: FederatedHPAStatus) -> FederatedHPA:
        """Write status through the status subresource, guarded by fhpa's resourceVersion (ConflictError)."""
        ...

    @writes
    def patch_federated_hpa_bounds(
        self, namespace: str, name: str, min_replicas: int | None, max_replicas: int | None
    ) -> FederatedHPA:
        """Set spec.minReplicas and/or spec.maxReplicas (a None leaves the field as it is)."""
        ...

    def get_cron_federated_hpa(self, namespace: str, name: str) -> CronFederatedHPA | None: ...

    def list_cron_federated_hpas(self) -> list[CronFederatedHPA]: ...

    @writes
    def update_cron_federated_hpa_status(
        self, cron: CronFederatedHPA, status: CronFederatedHPAStatus
    ) -> CronFederatedHPA: ...

    def get_config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """A ConfigMap's data, or None when it does not exist (a cron rule's calendar of excluded days)."""
        ...

    @writes
    def scale_workload(self, namespace: str, target: CrossVersionObjectReference, replicas: int) -> None:
        """Set a workload's replicas through its scale subresource on the control plane."""
        ...

    @writes
    def emit_event(
        self,
        obj: FederatedHPA | CronFederatedHPA,
        type_: Literal["Normal", "Warning"],
        reason: str,
        message: str,
    ) -> None: ...


class ConditionalControlPlane(Protocol):
    """Optional writes with a resourceVersion precondition, for actions that must be applied once even
    across a leader hand-over (cron fires). A control plane without them gets unconditional writes."""

    def get_scale(self, namespace: str, target: CrossVersionObjectReference) -> tuple[int, str]:
        """(spec.replicas, metadata.resourceVersion) of the target's scale subresource."""
        ...

    @writes
    def scale_workload_if_unchanged(
        self, namespace: str, target: CrossVersionObjectReference, replicas: int, resource_version: str
    ) -> None: ...

    @writes
    def patch_federated_hpa_bounds_if_unchanged(
        self,
        namespace: str,
        name: str,
        min_replicas: int | None,
        max_replicas: int | None,
        resource_version: str,
    ) -> FederatedHPA: ...


class NotLeaderError(Exception):
    """A write refused because this process no longer holds the leader Lease (or is shutting down after
    losing it). Deliberately not a PortError: no caller records it as an action's outcome or retries it;
    it abandons the reconcile at the first write it would have made."""
