"""A plan: what one planning pass decided. The executor is the only code that carries it out."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.planning.member_hpa import decision_key
from controller.planning.observation import ClusterObservation
from fhpa_api.models import FederatedHPA, FederatedHPAStatus


class Observed(BaseModel):
    """What a member write is conditional on: the object as the pass that planned it observed it.

    The write carries this resourceVersion, so a member object changed since (by anyone: another leader,
    a user, a stale plan of ours) answers 409 Conflict and the next pass replans from a fresh observation.
    """

    model_config = ConfigDict(frozen=True)

    resource_version: str | None = None  # None: absent when observed (create: 409 if it exists now)
    uid: str | None = None


class HPAAction(BaseModel):
    """Create, update or delete the member HPA in one cluster."""

    cluster: str
    op: Literal["create", "update", "delete"]
    min_replicas: int | None = None
    max_replicas: int | None = None
    # the full autoscaling/v2 HorizontalPodAutoscalerSpec body for create/update (member_hpa.render_spec)
    spec: dict[str, object] | None = None
    # set by bind(): the member HPA as observed (None: unconditional), the idempotence key to stamp
    observed: Observed | None = None
    decision: str | None = None


class ReplicaWrite(BaseModel):
    """Set a member workload's replicas through its scale subresource."""

    cluster: str
    replicas: int
    reason: str
    observed: Observed | None = None  # the Scale as observed, set by bind(); None: unconditional


class EventRecord(BaseModel):
    """A Kubernetes Event to record on the FederatedHPA."""

    type: Literal["Normal", "Warning"] = "Normal"
    reason: str
    message: str
    # the member write this Event announces ("create/m1", "scale/m2"): it is recorded only if the write
    # happened, so a refused write never reads as a success
    action: str | None = None


class Plan(BaseModel):
    hpa_actions: list[HPAAction] = Field(default_factory=list)
    replica_writes: list[ReplicaWrite] = Field(default_factory=list)
    status: FederatedHPAStatus
    events: list[EventRecord] = Field(default_factory=list)
    requeue_after_seconds: float | None = None
    requeue_routine: bool = False  # the periodic optimization is the only timer pending: nothing waits on it

    @property
    def has_member_writes(self) -> bool:
        return bool(self.hpa_actions or self.replica_writes)


def bind(plan: Plan, fhpa: FederatedHPA, observations: list[ClusterObservation]) -> Plan:
    """The plan with every member write made conditional on what it was planned from.

    Each HPA action carries the member HPA's resourceVersion and uid as observed (a create: that it was
    absent) and its decision key (member_hpa.decision_key), each replica write the Scale's observed
    resourceVersion. An observation without versions (the simulator) leaves the write unconditional.
    """
    seen = {o.name: o for o in observations}
    actions = []
    for action in plan.hpa_actions:
        cluster = seen.get(action.cluster)
        hpa = cluster.hpa if cluster is not None else None
        observed: Observed | None = None
        if action.op == "create":
            observed = Observed()
        elif hpa is not None and hpa.resource_version is not None:
            observed = Observed(resource_version=hpa.resource_version, uid=hpa.uid)
        decision = decision_key(fhpa, action.cluster, dict(action.spec)) if action.spec is not None else None
        actions.append(action.model_copy(update={"observed": observed, "decision": decision}))
    writes = []
    for write in plan.replica_writes:
        cluster = seen.get(write.cluster)
        version = cluster.scale_resource_version if cluster is not None else None
        observed = Observed(resource_version=version) if version is not None else None
        writes.append(write.model_copy(update={"observed": observed}))
    return plan.model_copy(update={"hpa_actions": actions, "replica_writes": writes})
