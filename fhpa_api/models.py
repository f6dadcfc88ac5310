"""Pydantic models of FederatedHPA and CronFederatedHPA, and the autoscaling/v2 types they embed.

Field names are the API's camelCase names (aliases); Python code uses snake_case. Dump with
:func:`to_json` so that an object round-trips the JSON an API server stores: unset fields stay unset,
quantities stay the strings (or numbers) they were written as.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from fhpa_api import API_VERSION, CRON_FEDERATED_HPA, FEDERATED_HPA

Quantity = str | int | float
"""A Kubernetes quantity as written ("500m", 2, "1Gi"); see fhpa_api.quantity for its value."""


class ApiModel(BaseModel):
    """Base of every API type: camelCase aliases, unknown fields refused (as strict field validation)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def to_json(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- metav1 -------------------------------------------------------------------------------------------


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(ApiModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class ObjectMeta(BaseModel):
    """Only what this project reads; everything else the server stores is kept as extra fields."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None


class Condition(ApiModel):
    """A status condition (metav1.Condition shape; observedGeneration optional as in HPA conditions)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    last_transition_time: datetime | None = None
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None


# --- autoscaling/v2 -----------------------------------------------------------------------------------


class CrossVersionObjectReference(ApiModel):
    kind: str
    name: str
    api_version: str | None = None


class MetricIdentifier(ApiModel):
    name: str
    selector: LabelSelector | None = None


class MetricTarget(ApiModel):
    type: str
    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None


class ObjectMetricSource(ApiModel):
    described_object: CrossVersionObjectReference
    target: MetricTarget
    metric: MetricIdentifier


class PodsMetricSource(ApiModel):
    metric: MetricIdentifier
    target: MetricTarget


class ResourceMetricSource(ApiModel):
    name: str
    target: MetricTarget


class ContainerResourceMetricSource(ApiModel):
    name: str
    target: MetricTarget
    container: str


class ExternalMetricSource(ApiModel):
    metric: MetricIdentifier
    target: MetricTarget


MetricType = Literal["Object", "Pods", "Resource", "ContainerResource", "External"]


class MetricSpec(ApiModel):
    type: str
    object: ObjectMetricSource | None = None
    pods: PodsMetricSource | None = None
    resource: ResourceMetricSource | None = None
    container_resource: ContainerResourceMetricSource | None = None
    external: ExternalMetricSource | None = None


class HPAScalingPolicy(ApiModel):
    type: str
    value: int
    period_seconds: int


class HPAScalingRules(ApiModel):
    stabilization_window_seconds: int | None = None
    select_policy: str | None = None
    policies: list[HPAScalingPolicy] | None = None
    tolerance: Quantity | None = None


class HorizontalPodAutoscalerBehavior(ApiModel):
    scale_up: HPAScalingRules | None = None
    scale_down: HPAScalingRules | None = None


class MetricValueStatus(ApiModel):
    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None


class ObjectMetricStatus(ApiModel):
    metric: MetricIdentifier
    current: MetricValueStatus
    described_object: CrossVersionObjectReference


class PodsMetricStatus(ApiModel):
    metric: MetricIdentifier
    current: MetricValueStatus


class ResourceMetricStatus(ApiModel):
    name: str
    current: MetricValueStatus


class ContainerResourceMetricStatus(ApiModel):
    name: str
    current: MetricValueStatus
    container: str


class ExternalMetricStatus(ApiModel):
    metric: MetricIdentifier
    current: MetricValueStatus


class MetricStatus(ApiModel):
    type: str
    object: ObjectMetricStatus | None = None
    pods: PodsMetricStatus | None = None
    resource: ResourceMetricStatus | None = None
    container_resource: ContainerResourceMetricStatus | None = None
    external: ExternalMetricStatus | None = None


# --- Karmada ClusterAffinity --------------------------------------------------------------------------


class FieldSelectorRequirement(ApiModel):
    """A requirement on a cluster's provider, region or zone."""

    key: str
    operator: str
    values: list[str] | None = None


class FieldSelector(ApiModel):
    match_expressions: list[FieldSelectorRequirement] | None = None


class ClusterAffinity(ApiModel):
    label_selector: LabelSelector | None = None
    field_selector: FieldSelector | None = None
    cluster_names: list[str] | None = None
    exclude: list[str] | None = None


# --- FederatedHPA -------------------------------------------------------------------------------------

AssignmentType = Literal["Duplicated", "StaticWeighted", "DynamicWeighted", "Aggregated", "Prioritized"]
ASSIGNMENT_TYPES: tuple[str, ...] = (
    "Duplicated",
    "StaticWeighted",
    "DynamicWeighted",
    "Aggregated",
    "Prioritized",
)


class ClusterAutoscalingPreference(ApiModel):
    target_cluster: ClusterAffinity
    static_weight: int | None = None
    priority: int | None = None


class FederatedHPAAssignment(ApiModel):
    federated_hpa_assignment_type: str | None = Field(default=None, alias="federatedHPAAssignmentType")
    cluster_autoscaling_preference: list[ClusterAutoscalingPreference] | None = None


class FederatedHPASpec(ApiModel):
    scale_target_ref: CrossVersionObjectReference
    max_replicas: int
    min_replicas: int | None = None
    metrics: list[MetricSpec] | None = None
    behavior: HorizontalPodAutoscalerBehavior | None = None
    cluster_affinity: ClusterAffinity | None = None
    federated_hpa_assignment: FederatedHPAAssignment | None = Field(
        default=None, alias="federatedHPAAssignment"
    )
    autoscale_multi_cluster_delay: int | None = None
    scale_assist: bool | None = None
    scaling_to_zero: bool | None = None

    # Effective values: what the controller acts on whether or not the object went through defaulting.
    @property
    def effective_min(self) -> int:
        return self.min_replicas if self.min_replicas is not None else 1

    @property
    def assignment_type(self) -> str:
        assignment = self.federated_hpa_assignment
        if assignment is None or assignment.federated_hpa_assignment_type is None:
            return "Duplicated"
        return assignment.federated_hpa_assignment_type

    @property
    def preferences(self) -> list[ClusterAutoscalingPreference]:
        assignment = self.federated_hpa_assignment
        return list(assignment.cluster_autoscaling_preference or []) if assignment else []

    @property
    def effective_scale_assist(self) -> bool:
        return True if self.scale_assist is None else self.scale_assist

    @property
    def effective_scaling_to_zero(self) -> bool:
        """scalingToZero has no effect without scaleAssist or under Duplicated (DESIGN §2)."""
        if not self.scaling_to_zero or not self.effective_scale_assist:
            return False
        return self.assignment_type != "Duplicated"

    @property
    def effective_delay_seconds(self) -> int:
        return self.autoscale_multi_cluster_delay or 0


class MemberMetricTarget(ApiModel):
    """The target one member HPA got for an External or Object metric with an AverageValue target:
    the FederatedHPA's averageValue divided by the cluster's share of the metric (metricShare)."""

    type: str  # External or Object
    name: str  # the metric's name
    average_value: Quantity


class CapacityStatus(ApiModel):
    """A cluster's room for the workload as the last pass saw it: ``firm`` (holds now) plus ``elastic``
    (a node autoscaler can still add) is what planning counted; ``source`` says where the bound comes
    from (allocatable, quota, cluster-autoscaler, karpenter, declared) and ``detail`` why the cluster is
    full or growing, in words. ``comingSince``: the oldest TriggeredScaleUp among its pending pods."""

    firm: int | None = None
    elastic: int | None = None
    source: str | None = None
    detail: str | None = None
    coming_since: datetime | None = None


class SplitStatus(ApiModel):
    """What the last initial assignment's split read and gave this cluster, kept until the next one.

    The split reads each cluster's room at that instant, which later passes overwrite in ``capacity``;
    so that an explanation prints the split the controller made rather than one recomputed from later
    numbers, its inputs and results are kept here. ``room``: the replicas the cluster could hold then
    (firm plus elastic; absent: unknown, counted as unlimited). ``weight``: what StaticWeighted and
    DynamicWeighted divided by (the static weight, or the room with unknown counted as F.max).
    ``priority``: Prioritized's. ``rank``: the cluster's place in the policy's order (1 is served first and
    takes the excess). ``maxShare``/``minShare``: what the split gave it, each share capped at its room,
    before the later steps of the assignment (keep what runs, hold the floor); ``excess``: the part of
    ``maxShare`` that no cluster had room for."""

    room: int | None = None
    weight: int | None = None
    priority: int | None = None
    rank: int | None = None
    max_share: int | None = None
    min_share: int | None = None
    excess: int | None = None


class ClusterStatus(ApiModel):
    """One member cluster's row in a FederatedHPA's status.

    The planner keeps what it must remember between passes here (pendingSince, pinnedMinReplicas,
    unhealthySince, ...), so a restarted controller resumes from the API alone.
    """

    name: str
    min_replicas: int | None = None
    max_replicas: int | None = None
    current_replicas: int | None = None
    ready_replicas: int | None = None
    pending_replicas: int | None = None
    desired_replicas: int | None = None
    last_scale_time: datetime | None = None
    conditions: list[Condition] | None = None
    # planner memory
    state: str | None = None
    pending_since: datetime | None = None
    # when the cluster's pods began to pend without a break: arriving nodes restart pendingSince, never
    # past this plus the wait
    pending_first_since: datetime | None = None
    pinned_min_replicas: int | None = None
    unhealthy_since: datetime | None = None
    healthy_since: datetime | None = None  # written by 0.1 (rejoin hysteresis); read, no longer written
    failovers: int | None = None  # failovers within an hour of the last one: the grace grows with them
    last_failover_time: datetime | None = None
    # the failover grace this cluster gets now (grown by its recent failovers), and, while it is
    # unreachable, when it fails over if it stays so: what explain tells, rather than the flag's default
    failover_grace_seconds: int | None = None
    failover_at: datetime | None = None
    max_trend: int | None = None  # +1 / -1: the direction of the last change of this cluster's max
    max_trend_time: datetime | None = None
    max_moved_by: str | None = None  # the reason of the Event that last moved its max (explain says why)
    # the index of the clusterAutoscalingPreference entry this cluster matched (-1: none): a labelSelector
    # entry cannot be resolved from status alone, since a cluster's labels live in its Secret
    preference: int | None = None
    drained_at: datetime | None = None  # when its max was last lowered below what it ran (a drain)
    # until when its member HPA's minReplicas holds the replicas a burst assist started (pinnedMinReplicas)
    assist_held_until: datetime | None = None
    # until when its member HPA's minReplicas holds a take-back (pinnedMinReplicas): the lower-priority
    # clusters' HPAs get their scale-down window to shed what it took before the pin is judged
    take_back_held_until: datetime | None = None
    # scaling to zero's hysteresis: when the controller last raised it from 0 replicas, and since when its
    # HPA has sat at its min wanting fewer (reset by any other wish)
    woken_at: datetime | None = None
    idle_since: datetime | None = None
    # the decision key (annotation autoscaling.karmada.io/decision) of the member HPA as last applied by a
    # write of this controller or observed on it: the idempotence record of member writes
    decision_key: str | None = None
    # the cluster's share of External/Object AverageValue metrics as last written to its member HPA (a
    # quantity: "500m" is half the fleet's queue), and the targets it holds (planning.external_share)
    metric_share: Quantity | None = None
    metric_targets: list[MemberMetricTarget] | None = None
    capacity: CapacityStatus | None = None
    split: SplitStatus | None = None


class FederatedHPAStatus(ApiModel):
    observed_generation: int | None = None
    current_replicas: int | None = None
    desired_replicas: int | None = None
    last_scale_time: datetime | None = None
    current_metrics: list[MetricStatus] | None = None
    conditions: list[Condition] | None = None
    clusters: list[ClusterStatus] | None = None
    # planner memory
    assignment_key: str | None = None
    last_assignment_time: datetime | None = None
    last_optimization_time: datetime | None = None


class FederatedHPA(ApiModel):
    api_version: Literal["autoscaling.karmada.io/v1alpha1"] = API_VERSION  # type: ignore[assignment]
    kind: Literal["FederatedHPA"] = FEDERATED_HPA  # type: ignore[assignment]
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: FederatedHPASpec
    status: FederatedHPAStatus | None = None


# --- CronFederatedHPA ---------------------------------------------------------------------------------


class CalendarReference(ApiModel):
    """A ConfigMap in the CronFederatedHPA's namespace whose ``key`` (default "dates") lists excluded days."""

    name: str
    key: str | None = None

    @property
    def effective_key(self) -> str:
        return self.key or "dates"


class CronFederatedHPARule(ApiModel):
    name: str
    schedule: str
    target_replicas: int | None = None
    target_min_replicas: int | None = None
    target_max_replicas: int | None = None
    suspend: bool | None = None
    time_zone: str | None = None
    successful_history_limit: int | None = None
    failed_history_limit: int | None = None
    max_delay_seconds: int | None = None
    exclude_dates: list[str] | None = None
    exclude_calendar_ref: CalendarReference | None = None

    @property
    def effective_successful_history_limit(self) -> int:
        return 3 if self.successful_history_limit is None else self.successful_history_limit

    @property
    def effective_failed_history_limit(self) -> int:
        return 3 if self.failed_history_limit is None else self.failed_history_limit


class CronFederatedHPASpec(ApiModel):
    scale_target_ref: CrossVersionObjectReference
    rules: list[CronFederatedHPARule]


class SuccessfulExecution(ApiModel):
    schedule_time: datetime
    execution_time: datetime
    applied_replicas: int | None = None
    applied_min_replicas: int | None = None
    applied_max_replicas: int | None = None


class FailedExecution(ApiModel):
    schedule_time: datetime
    execution_time: datetime
    message: str


class ExecutionHistory(ApiModel):
    rule_name: str
    next_execution_time: datetime | None = None
    successful_executions: list[SuccessfulExecution] | None = None
    failed_executions: list[FailedExecution] | None = None


class CronFederatedHPAStatus(ApiModel):
    execution_histories: list[ExecutionHistory] | None = None
    conditions: list[Condition] | None = None
    observed_generation: int | None = None
    # a one-line summary of the histories, for `kubectl get cronfhpa`'s columns (printer columns can
    # only point at a field; they cannot take the earliest of a list): the earliest next execution of
    # any rule, and the latest execution's outcome and rule, as in "Succeeded (scale-up)"
    next_execution_time: datetime | None = None
    last_result: str | None = None


class CronFederatedHPA(ApiModel):
    api_version: Literal["autoscaling.karmada.io/v1alpha1"] = API_VERSION  # type: ignore[assignment]
    kind: Literal["CronFederatedHPA"] = CRON_FEDERATED_HPA  # type: ignore[assignment]
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CronFederatedHPASpec
    status: CronFederatedHPAStatus | None = None


KINDS: dict[str, type[FederatedHPA] | type[CronFederatedHPA]] = {
    FEDERATED_HPA: FederatedHPA,
    CRON_FEDERATED_HPA: CronFederatedHPA,
}
