"""A member cluster's native HPA controller (kube-controller-manager's), emulated on the virtual clock.

The controller under test never talks to this code: it only writes member HPA specs and reads their
status, as it would on a real cluster. So the emulation has to reproduce what a real HPA reports and
how fast it moves (research/hpa_and_peers.md §1.2-1.8): the metric branches of ``reconcileAutoscaler``,
the legacy no-``behavior`` path (scale-up limit max(2x, 4) per sync, 5-minute scale-down stabilization),
the ``behavior`` path (stabilization windows, Pods/Percent policies over their periods, selectPolicy),
min/max clamping, and the AbleToScale / ScalingActive / ScalingLimited conditions.

The recommendation and scale-event histories are in memory, as in the real controller: they go when the
HPA is deleted or when the cluster's controller-manager restarts (:meth:`NativeHPA.forget_history`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fhpa_api.models import (
    Condition,
    HorizontalPodAutoscalerBehavior,
    HPAScalingPolicy,
    HPAScalingRules,
    MetricSpec,
)
from fhpa_api.quantity import parse_quantity
from simulator.replica_calculator import (
    MetricsUnavailableError,
    PodReadings,
    Tolerances,
    average_value_replicas,
    per_pod_metric_replicas,
    usage_ratio_replicas,
    utilization_replicas,
)

SYNC_PERIOD_S = 15
DEFAULT_TOLERANCE = 0.1
DOWNSCALE_STABILIZATION_S = 300
SCALE_UP_LIMIT_FACTOR = 2
SCALE_UP_LIMIT_MINIMUM = 4
DEFAULT_SCALE_UP = HPAScalingRules(
    stabilization_window_seconds=0,
    select_policy="Max",
    policies=[
        HPAScalingPolicy(type="Pods", value=4, period_seconds=15),
        HPAScalingPolicy(type="Percent", value=100, period_seconds=15),
    ],
)
DEFAULT_SCALE_DOWN = HPAScalingRules(
    stabilization_window_seconds=None,
    select_policy="Max",
    policies=[HPAScalingPolicy(type="Percent", value=100, period_seconds=15)],
)
MSG_DOWN_STABILIZED = (
    "recent recommendations were higher than current one, applying the highest recent recommendation"
)
MSG_UP_STABILIZED = (
    "recent recommendations were lower than current one, applying the lowest recent recommendation"
)
CONDITION_ORDER = ("AbleToScale", "ScalingActive", "ScalingLimited")
REASON_SCALE_UP_LIMIT = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
)
REASON_TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
REASON_TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
REASON_WITHIN = ("DesiredWithinRange", "the desired count is within the acceptable range")


class HPASpecError(ValueError):
    """The member HPA spec written to the simulated cluster is not a usable autoscaling/v2 spec."""


@dataclass
class _Recommendation:
    at: datetime
    replicas: int


@dataclass
class _ScaleEvent:
    at: datetime
    change: int  # absolute value, as in the Go code


@dataclass
class HPAStatus:
    current_replicas: int = 0
    desired_replicas: int = 0
    last_scale_time: datetime | None = None
    current_utilization: int | None = None
    # status.currentMetrics entries of the External and Object metrics read at the last sync
    shared_metrics: list[dict[str, Any]] = field(default_factory=list)
    conditions: dict[str, Condition] = field(default_factory=dict)

    def condition_list(self) -> list[Condition]:
        return [self.conditions[t] for t in CONDITION_ORDER if t in self.conditions]


@dataclass(frozen=True)
class SyncResult:
    """What one sync decided: the replicas to write (equal to current when nothing changes)."""

    replicas: int
    rescaled: bool
    reason: str = ""


def _fill_rules(given: HPAScalingRules | None, default: HPAScalingRules) -> HPAScalingRules:
    """copyHPAScalingRules: keep what the user set, default the rest field by field."""
    if given is None:
        return default
    return HPAScalingRules(
        stabilization_window_seconds=(
            given.stabilization_window_seconds
            if given.stabilization_window_seconds is not None
            else default.stabilization_window_seconds
        ),
        select_policy=given.select_policy or default.select_policy,
        policies=given.policies or default.policies,
        tolerance=given.tolerance,
    )


def default_behavior(behavior: HorizontalPodAutoscalerBehavior) -> HorizontalPodAutoscalerBehavior:
    """autoscaling/v2 defaulting of a non-nil behavior, then the controller's scale-down window fill."""
    up = _fill_rules(behavior.scale_up, DEFAULT_SCALE_UP)
    down = _fill_rules(behavior.scale_down, DEFAULT_SCALE_DOWN)
    if down.stabilization_window_seconds is None:  # maybeInitScaleDownStabilizationWindow
        down = down.model_copy(update={"stabilization_window_seconds": DOWNSCALE_STABILIZATION_S})
    return HorizontalPodAutoscalerBehavior(scale_up=up, scale_down=down)


def _tolerances(behavior: HorizontalPodAutoscalerBehavior | None) -> Tolerances:
    def pick(rules: HPAScalingRules | None) -> float:
        if rules is None or rules.tolerance is None:
            return DEFAULT_TOLERANCE
        return float(parse_quantity(rules.tolerance))

    if behavior is None:
        return Tolerances()
    return Tolerances(scale_down=pick(behavior.scale_down), scale_up=pick(behavior.scale_up))


def _change_in_period(events: list[_ScaleEvent], now: datetime, period_s: int) -> int:
    cutoff = now - timedelta(seconds=period_s)
    return sum(e.change for e in events if e.at > cutoff)


def _period_start(
    current: int, up: list[_ScaleEvent], down: list[_ScaleEvent], period_s: int, now: datetime
) -> int:
    """The replica count at the start of a policy's period: what the policy's limit is measured from."""
    return current - _change_in_period(up, now, period_s) + _change_in_period(down, now, period_s)


def scale_up_limit(
    current: int, up: list[_ScaleEvent], down: list[_ScaleEvent], rules: HPAScalingRules, now: datetime
) -> int:
    """calculateScaleUpLimitWithScalingRules: the highest count the policies allow right now."""
    if rules.select_policy == "Disabled":
        return current
    proposals = []
    for policy in rules.policies or []:
        start = _period_start(current, up, down, policy.period_seconds, now)
        if policy.type == "Pods":
            proposals.append(start + policy.value)
        else:
            proposals.append(_ceil(start * (1 + policy.value / 100)))
    if not proposals:
        return current
    return min(proposals) if rules.select_policy == "Min" else max(proposals)


def scale_down_limit(
    current: int, up: list[_ScaleEvent], down: list[_ScaleEvent], rules: HPAScalingRules, now: datetime
) -> int:
    """calculateScaleDownLimitWithBehaviors: the lowest count the policies allow right now."""
    if rules.select_policy == "Disabled":
        return current
    proposals = []
    for policy in rules.policies or []:
        start = _period_start(current, up, down, policy.period_seconds, now)
        if policy.type == "Pods":
            proposals.append(start - policy.value)
        else:
            proposals.append(int(start * (1 - policy.value / 100)))  # int32() truncates toward zero
    if not proposals:
        return current
    return max(proposals) if rules.select_policy == "Min" else min(proposals)


def _ceil(value: float) -> int:
    whole = int(value)
    return whole if whole == value or value < 0 else whole + 1


class NativeHPA:
    """One autoscaling/v2 HorizontalPodAutoscaler object plus the controller's memory of it."""

    def __init__(
        self,
        name: str,
        spec: dict[str, Any],
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.labels: dict[str, str] = dict(labels or {})
        self.annotations: dict[str, str] = dict(annotations or {})
        self.status = HPAStatus()
        self._recommendations: list[_Recommendation] = []
        self._up_events: list[_ScaleEvent] = []
        self._down_events: list[_ScaleEvent] = []
        self._seen = False
        self._external: Mapping[str, float] = {}
        self.set_spec(spec)

    # --- the object -------------------------------------------------------------------------------

    def set_spec(self, spec: dict[str, Any]) -> None:
        """Create or update the spec; the histories survive an update, as they do in the real controller."""
        try:
            self.min_replicas = int(spec.get("minReplicas", 1))
            self.max_replicas = int(spec["maxReplicas"])
            self.metrics = [MetricSpec.model_validate(m) for m in spec.get("metrics") or []]
            raw_behavior = spec.get("behavior")
            self.behavior = (
                None if raw_behavior is None else HorizontalPodAutoscalerBehavior.model_validate(raw_behavior)
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise HPASpecError(f"member HPA {self.name}: unusable spec: {exc}") from exc
        self.spec = dict(spec)

    def forget_history(self) -> None:
        """The controller-manager restarted: recommendations and scale events were only in its memory."""
        self._recommendations.clear()
        self._up_events.clear()
        self._down_events.clear()
        self._seen = False

    # --- one sync ---------------------------------------------------------------------------------

    def sync(
        self,
        now: datetime,
        current: int,
        pods: PodReadings,
        external: Mapping[str, float] | None = None,
    ) -> SyncResult:
        """reconcileAutoscaler for one sync period. ``current`` is the target's scale.spec.replicas;
        ``external`` the External (and Object) metrics' values by metric name at this instant."""
        self._external = external or {}
        self._set(
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
            now,
        )
        if not self._seen:  # recordInitialRecommendation
            self._recommendations.append(_Recommendation(now, current))
            self._seen = True
        desired, reason = self._decide(now, current, pods)
        rescaled = desired is not None and desired != current
        if desired is not None and rescaled:
            self._set(
                "AbleToScale",
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {desired}",
                now,
            )
            self._store_scale_event(now, current, desired)
            self.status.last_scale_time = now
        self.status.current_replicas = current
        if desired is not None:
            self.status.desired_replicas = desired if rescaled else current
        return SyncResult(
            replicas=desired if desired is not None and rescaled else current,
            rescaled=rescaled,
            reason=reason,
        )

    def _decide(self, now: datetime, current: int, pods: PodReadings) -> tuple[int | None, str]:
        """The branches of reconcileAutoscaler; None means "could not compute, keep the previous status"."""
        if current == 0 and self.min_replicas != 0:
            self._set(
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
                now,
            )
            return 0, ""
        if current > self.max_replicas:
            return self.max_replicas, "Current number of replicas above Spec.MaxReplicas"
        if current < self.min_replicas:
            return self.min_replicas, "Current number of replicas below Spec.MinReplicas"
        proposal = self._replicas_for_metrics(now, current, pods)
        if proposal is None:
            return None, ""
        if self.behavior is None:
            return self._normalize(now, current, proposal), "metrics above or below target"
        return self._normalize_with_behavior(now, current, proposal), "metrics above or below target"

    def _replicas_for_metrics(self, now: datetime, current: int, pods: PodReadings) -> int | None:
        """computeReplicasForMetrics: the max over metrics; a failing metric only allows a scale-up."""
        tolerances = _tolerances(self.behavior)
        best: int | None = None
        first_error: tuple[str, str] | None = None
        self.status.shared_metrics = []
        for metric in self.metrics or _default_metrics():
            try:
                if metric.type in ("External", "Object"):
                    replicas, entry = _shared_metric(metric, current, pods, tolerances, self._external)
                    self.status.shared_metrics.append(entry)
                else:
                    replicas, reading = _one_metric(metric, current, pods, tolerances)
                    self.status.current_utilization = reading
            except MetricsUnavailableError as exc:
                first_error = first_error or (f"FailedGet{metric.type}Metric", str(exc))
                continue
            best = replicas if best is None else max(best, replicas)
        if best is None or (first_error is not None and best < current):
            reason, message = first_error or ("FailedGetResourceMetric", "no metrics")
            self._set(
                "ScalingActive",
                "False",
                reason,
                f"the HPA was unable to compute the replica count: {message}",
                now,
            )
            return None
        self._set(
            "ScalingActive",
            "True",
            "ValidMetricFound",
            "the HPA was able to successfully calculate a replica count",
            now,
        )
        return best

    def _normalize(self, now: datetime, current: int, proposal: int) -> int:
        """normalizeDesiredReplicas: 5-minute down stabilization, then max(2x, 4) and min/max."""
        cutoff = now - timedelta(seconds=DOWNSCALE_STABILIZATION_S)
        stabilized = proposal
        old_index: int | None = None
        for i, rec in enumerate(self._recommendations):
            if rec.at < cutoff:
                old_index = i
            elif rec.replicas > stabilized:
                stabilized = rec.replicas
        self._record(old_index, now, proposal)
        if stabilized != proposal:
            self._set(
                "AbleToScale",
                "True",
                "ScaleDownStabilized",
                MSG_DOWN_STABILIZED,
                now,
            )
        else:
            self._set("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size", now)
        limit = max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM)
        ceiling, reason = self._ceiling(limit)
        if stabilized < self.min_replicas:
            result, reason = self.min_replicas, REASON_TOO_FEW
        elif stabilized > ceiling:
            result = ceiling
        else:
            result, reason = stabilized, REASON_WITHIN
        self._set("ScalingLimited", "True" if result != stabilized else "False", reason[0], reason[1], now)
        return result

    def _normalize_with_behavior(self, now: datetime, current: int, proposal: int) -> int:
        """normalizeDesiredReplicasWithBehaviors: both stabilization windows, then the policies' rate."""
        behavior = default_behavior(self.behavior or HorizontalPodAutoscalerBehavior())
        up_rules, down_rules = behavior.scale_up, behavior.scale_down
        assert up_rules is not None and down_rules is not None
        stabilized, reason = self._stabilize_with_behavior(now, current, proposal, up_rules, down_rules)
        if stabilized != proposal:
            message = MSG_UP_STABILIZED if reason == "ScaleUpStabilized" else MSG_DOWN_STABILIZED
            self._set("AbleToScale", "True", reason, message, now)
        else:
            self._set("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size", now)
        result, limited = self._rate_limit(now, current, stabilized, up_rules, down_rules)
        self._set("ScalingLimited", "True" if result != stabilized else "False", limited[0], limited[1], now)
        return result

    def _stabilize_with_behavior(
        self, now: datetime, current: int, proposal: int, up: HPAScalingRules, down: HPAScalingRules
    ) -> tuple[int, str]:
        up_cutoff = now - timedelta(seconds=up.stabilization_window_seconds or 0)
        down_cutoff = now - timedelta(seconds=down.stabilization_window_seconds or 0)
        up_rec = down_rec = proposal
        old_index: int | None = None
        for i, rec in enumerate(self._recommendations):
            if rec.at > up_cutoff:
                up_rec = min(up_rec, rec.replicas)
            if rec.at > down_cutoff:
                down_rec = max(down_rec, rec.replicas)
            if rec.at < up_cutoff and rec.at < down_cutoff:
                old_index = i
        stabilized = max(current, up_rec)
        stabilized = min(stabilized, down_rec)
        self._record(old_index, now, proposal)
        return stabilized, "ScaleUpStabilized" if proposal >= current else "ScaleDownStabilized"

    def _rate_limit(
        self, now: datetime, current: int, desired: int, up: HPAScalingRules, down: HPAScalingRules
    ) -> tuple[int, tuple[str, str]]:
        """convertDesiredReplicasWithBehaviorRate."""
        if desired > current:
            limit = max(scale_up_limit(current, self._up_events, self._down_events, up, now), current)
            ceiling, reason = self._ceiling(limit)
            return (ceiling, reason) if desired > ceiling else (desired, REASON_WITHIN)
        if desired < current:
            limit = min(scale_down_limit(current, self._up_events, self._down_events, down, now), current)
            if self.min_replicas < limit:
                floor, reason = (
                    limit,
                    (
                        "ScaleDownLimit",
                        "the desired replica count is decreasing faster than the maximum scale rate",
                    ),
                )
            else:
                floor, reason = self.min_replicas, REASON_TOO_FEW
            return (floor, reason) if desired < floor else (desired, REASON_WITHIN)
        return desired, REASON_WITHIN

    def _ceiling(self, limit: int) -> tuple[int, tuple[str, str]]:
        """The highest count a scale-up may reach: the rate limit, or maxReplicas if that is lower."""
        if self.max_replicas > limit:
            return limit, REASON_SCALE_UP_LIMIT
        return self.max_replicas, REASON_TOO_MANY

    def mark_ambiguous(self, now: datetime) -> None:
        """Another HPA targets the same pods: the real controller refuses to scale either of them."""
        message = "pods by selector are controlled by multiple HPAs"
        self._set("ScalingActive", "False", "AmbiguousSelector", message, now)

    # --- bookkeeping ------------------------------------------------------------------------------

    def _record(self, old_index: int | None, now: datetime, proposal: int) -> None:
        """Store the raw recommendation, reusing a slot that fell out of every window."""
        if old_index is not None:
            self._recommendations[old_index] = _Recommendation(now, proposal)
        else:
            self._recommendations.append(_Recommendation(now, proposal))

    def _store_scale_event(self, now: datetime, previous: int, new: int) -> None:
        """storeScaleEvent: only with behavior; events past the longest policy period are recycled."""
        if self.behavior is None:
            return
        behavior = default_behavior(self.behavior)
        rules = behavior.scale_up if new > previous else behavior.scale_down
        events = self._up_events if new > previous else self._down_events
        longest = max((p.period_seconds for p in (rules.policies if rules else None) or []), default=0)
        cutoff = now - timedelta(seconds=longest)
        event = _ScaleEvent(now, abs(new - previous))
        for i, old in enumerate(events):
            if old.at < cutoff:
                events[i] = event
                return
        events.append(event)

    def _set(self, type_: str, status: str, reason: str, message: str, now: datetime) -> None:
        """setCondition: the transition time moves only when the status flips."""
        old = self.status.conditions.get(type_)
        since = old.last_transition_time if old is not None and old.status == status else now
        self.status.conditions[type_] = Condition(
            type=type_,
            status=status,
            reason=reason,
            message=message,
            last_transition_time=since,
        )


def spec_metrics(hpa: NativeHPA) -> list[dict[str, Any]]:
    """The HPA's metrics as its spec holds them (the default CPU 80% when none are set)."""
    return [
        m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in hpa.metrics or _default_metrics()
    ]


def current_metrics(status: HPAStatus) -> list[dict[str, Any]]:
    """status.currentMetrics as the real HPA reports it: CPU from the pods, and the External and Object
    metrics read from the scenario's traces."""
    entries = list(status.shared_metrics)
    if status.current_utilization is None:
        return entries
    current = {"averageUtilization": status.current_utilization}
    return [{"type": "Resource", "resource": {"name": "cpu", "current": current}}, *entries]


def _default_metrics() -> list[MetricSpec]:
    return [
        MetricSpec.model_validate(
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
            }
        )
    ]


def _milli(value: Any) -> int:
    """A quantity in milli-units, rounded up (Kubernetes' MilliValue())."""
    return math.ceil(parse_quantity(value) * 1000)


def _shared_metric(
    metric: MetricSpec,
    current: int,
    pods: PodReadings,
    tolerances: Tolerances,
    values: Mapping[str, float],
) -> tuple[int, dict[str, Any]]:
    """An External or Object metric: its value by name from the scenario's ``load.external`` traces.

    Returns the proposal and the status.currentMetrics entry the real HPA reports (the average per
    replica for an AverageValue target, the value itself for a Value target)."""
    source = metric.external if metric.type == "External" else metric.object
    if source is None:
        raise MetricsUnavailableError(f"the {metric.type} metric has no {metric.type.lower()} source")
    name = source.metric.name
    if name not in values:
        raise MetricsUnavailableError(f"no {metric.type} metric {name!r} in the scenario's load.external")
    usage = math.ceil(values[name] * 1000)
    target = source.target
    entry: dict[str, Any] = {"metric": {"name": name}}
    if metric.type == "Object" and metric.object is not None:
        entry["describedObject"] = metric.object.described_object.to_json()
    if target.type == "AverageValue" and target.average_value is not None:
        replicas, average = per_pod_metric_replicas(current, usage, _milli(target.average_value), tolerances)
        entry["current"] = {"averageValue": f"{average}m"}
    elif target.type == "Value" and target.value is not None:
        wanted = _milli(target.value)
        if wanted <= 0:
            raise MetricsUnavailableError("the Value target must be above 0")
        replicas = usage_ratio_replicas(current, usage / wanted, pods, tolerances)
        entry["current"] = {"value": f"{usage}m"}
    else:
        raise MetricsUnavailableError(
            f"the {metric.type} metric {name!r} has no AverageValue or Value target"
        )
    return replicas, {"type": metric.type, metric.type.lower(): entry}


def _one_metric(
    metric: MetricSpec, current: int, pods: PodReadings, tolerances: Tolerances
) -> tuple[int, int]:
    """One Resource metric's proposal. The simulator's pods report CPU only: Pods metrics and other
    resources have no samples."""
    source = (
        metric.resource
        if metric.type == "Resource"
        else metric.container_resource
        if metric.type == "ContainerResource"
        else None
    )
    if source is None or source.name != "cpu":
        what = source.name if source is not None else metric.type
        raise MetricsUnavailableError(f"the simulator's pods report only CPU, no {what} metric")
    target = source.target
    if target.average_value is not None:
        millicores = int(parse_quantity(target.average_value) * 1000)
        return average_value_replicas(current, millicores, pods, tolerances)
    if target.average_utilization is None:
        raise MetricsUnavailableError("the CPU target has neither averageUtilization nor averageValue")
    return utilization_replicas(current, target.average_utilization, pods, tolerances)
