"""A plan: what one planning pass decided. The executor is the only code that carries it out."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from fhpa_api.models import FederatedHPAStatus


class HPAAction(BaseModel):
    """Create, update or delete the member HPA in one cluster."""

    cluster: str
    op: Literal["create", "update", "delete"]
    min_replicas: int | None = None
    max_replicas: int | None = None
    # the full autoscaling/v2 HorizontalPodAutoscalerSpec body for create/update (member_hpa.render_spec)
    spec: dict[str, object] | None = None


class ReplicaWrite(BaseModel):
    """Set a member workload's replicas through its scale subresource."""

    cluster: str
    replicas: int
    reason: str


class EventRecord(BaseModel):
    """A Kubernetes Event to record on the FederatedHPA."""

    type: Literal["Normal", "Warning"] = "Normal"
    reason: str
    message: str


class Plan(BaseModel):
    hpa_actions: list[HPAAction] = Field(default_factory=list)
    replica_writes: list[ReplicaWrite] = Field(default_factory=list)
    status: FederatedHPAStatus
    events: list[EventRecord] = Field(default_factory=list)
    requeue_after_seconds: float | None = None

    @property
    def has_member_writes(self) -> bool:
        return bool(self.hpa_actions or self.replica_writes)
