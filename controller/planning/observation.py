"""What the controller sees of one member cluster at one instant: the planner's input.

Counts and member-HPA status only: the controller never reads pod metrics (DESIGN §1).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from fhpa_api.models import Condition


class Taint(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    value: str | None = None
    effect: str  # NoSchedule, PreferNoSchedule, NoExecute


class MemberHPAObservation(BaseModel):
    """The member HPA that targets the workload, if any."""

    model_config = ConfigDict(frozen=True)

    name: str
    owned: bool  # labelled with this FederatedHPA's uid
    min_replicas: int
    max_replicas: int
    current_replicas: int = 0
    desired_replicas: int = 0
    template_digest: str | None = None  # digest of metrics/behavior/target we wrote (see member_hpa.py)
    metric_ratio: float | None = None  # largest current/target over its metrics (metric_ratio.py)
    conditions: list[Condition] = Field(default_factory=list)
    # what a write is conditional on (DESIGN: member writes): the HPA as this pass saw it
    resource_version: str | None = None  # None from adapters without versions (the simulator)
    uid: str | None = None
    decision: str | None = None  # its decision annotation (member_hpa.decision_key) when it has one
    last_scale_time: datetime | None = None  # when the HPA last changed the workload's replicas

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    @property
    def scaling_limited(self) -> bool:
        """True when the HPA wants more (or fewer) replicas than its bounds allow."""
        cond = self.condition("ScalingLimited")
        return cond is not None and cond.status == "True"

    @property
    def wants_more_than_max(self) -> bool:
        return self.desired_replicas >= self.max_replicas and self.scaling_limited


class CapacityObservation(BaseModel):
    """Where a cluster's room for this workload comes from, in two kinds.

    ``firm``: what the cluster holds now (running pods plus what fits in free allocatable), capped by
    the namespace's ResourceQuota. ``elastic``: what can still come (a node autoscaler's node groups or
    NodePools up to their max, or the bound an operator declared), capped by the same quota. The
    planner's ``available`` is firm + elastic: a cloud cluster at zero nodes is room, not full.
    """

    model_config = ConfigDict(frozen=True)

    firm: int | None = None  # None: unknown (unlimited)
    elastic: int = 0
    source: str = "allocatable"  # allocatable, quota, cluster-autoscaler, karpenter, declared
    detail: str | None = None  # why the cluster is full or growing, in words an operator reads
    provision_seconds: float | None = None  # how long a new node takes here, when the cluster shows it
    pods_per_node: int | None = None  # pods of the workload one node of its node group holds (None: unknown)
    # pods of the workload that the node groups' minimum nodes hold: nodes that stay whatever runs on
    # them, so pods there cost nothing more and sending them to 0 frees nothing (0: none, or unknown)
    standing_pods: int = 0


class ClusterFacts(BaseModel):
    """What a cluster is, whoever asks: its name, labels, topology and taints (what affinity reads)."""

    model_config = ConfigDict(frozen=True)

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    provider: str | None = None
    region: str | None = None
    zone: str | None = None
    taints: list[Taint] = Field(default_factory=list)


class ClusterObservation(ClusterFacts):
    """One member cluster, as observed for one FederatedHPA."""

    healthy: bool = True
    unobserved: str | None = None  # not healthy: why the controller could not observe it this pass
    # False: no longer in the registry (its Secret deleted), planned from its last status row
    registered: bool = True
    workload_found: bool = True
    current_replicas: int = 0  # the workload's spec.replicas
    ready_replicas: int = 0
    pending_replicas: int = 0  # pods unschedulable (PodScheduled False, reason Unschedulable)
    available_replicas: int | None = (
        None  # replicas of this workload the cluster can hold; None: unknown/unlimited
    )
    # capacity signals: the kinds of room, and why pods are not running
    capacity: CapacityObservation | None = None  # None: only available_replicas is known
    pending_coming_replicas: int = 0  # of pending_replicas: TriggeredScaleUp, nodes are on their way
    pending_coming_since: datetime | None = None  # the oldest TriggeredScaleUp among them
    pending_stuck_replicas: int = 0  # of pending_replicas: NotTriggerScaleUp, no node group can fit
    refused_replicas: int = 0  # pods the workload wants that its namespace quota refused (never created)
    hpa: MemberHPAObservation | None = None
    scale_resource_version: str | None = None  # the workload's Scale as observed (a replica write's guard)

    @property
    def no_execute(self) -> bool:
        return any(t.effect == "NoExecute" for t in self.taints)

    def available_or(self, default: int) -> int:
        return default if self.available_replicas is None else self.available_replicas
