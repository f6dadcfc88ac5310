"""The kube HPA replica calculator, emulated: how one metric turns pod readings into a replica count.

This follows kubernetes' ``replica_calculator.go`` step by step (research/hpa_and_peers.md §1.4) so that
a simulated member HPA reacts to pending and starting pods exactly as a real one does: pods that are
Pending or not yet ready are *unready*; their samples are dropped, and on a scale-up they count as
using nothing, which damps the jump but keeps a capacity-starved cluster asking for more replicas.
Integer truncation happens where the Go code truncates (utilization percent, average usage).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class MetricsUnavailableError(Exception):
    """No usable sample: the real controller reports this and does not scale on this metric."""


@dataclass(frozen=True)
class Tolerances:
    """The band around a usage ratio of 1 inside which the HPA keeps its replicas (default 10% each way)."""

    scale_down: float = 0.1
    scale_up: float = 0.1

    def is_within(self, ratio: float) -> bool:
        return (1.0 - self.scale_down) <= ratio <= (1.0 + self.scale_up)


@dataclass(frozen=True)
class PodReadings:
    """What the metrics pipeline and the pod lister show for the target's pods at one sync.

    ``usage_total`` is the summed usage of the ready pods that have a sample (millicores for CPU);
    ``request_per_pod`` is every pod's request in the same unit (the simulator gives all pods one size).
    """

    ready: int
    unready: int = 0
    missing: int = 0
    usage_total: int = 0
    request_per_pod: int = 1000

    @property
    def pod_count(self) -> int:
        return self.ready + self.unready + self.missing


def _utilization_ratio(usage_total: int, pods: int, request: int, target: int) -> tuple[float, int]:
    """GetResourceUtilizationRatio: percent truncated to an integer, then divided by the target."""
    utilization = (usage_total * 100) // (request * pods)
    return utilization / target, utilization


def _average_ratio(usage_total: int, pods: int, target: int) -> tuple[float, int]:
    """GetMetricUsageRatio: the average per pod, truncated, over the target average."""
    average = usage_total // pods
    return average / target, average


def _finish(
    current: int,
    ratio: float,
    new_ratio: float,
    counted_pods: int,
    tolerances: Tolerances,
) -> int:
    """The calculator's last step once missing/unready pods were folded in."""
    flipped = (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio)
    if tolerances.is_within(new_ratio) or flipped:
        return current
    proposal = math.ceil(new_ratio * counted_pods)
    if (new_ratio < 1.0 and proposal > current) or (new_ratio > 1.0 and proposal < current):
        return current
    return proposal


def utilization_replicas(
    current: int, target_utilization: int, pods: PodReadings, tolerances: Tolerances
) -> tuple[int, int]:
    """Resource metric with an averageUtilization target: (replicas, current utilization percent)."""
    if pods.pod_count == 0:
        raise MetricsUnavailableError("no pods returned by selector while calculating replica count")
    if pods.ready == 0:
        raise MetricsUnavailableError("did not receive metrics for targeted pods (pods might be unready)")
    request = pods.request_per_pod
    ratio, utilization = _utilization_ratio(pods.usage_total, pods.ready, request, target_utilization)
    scale_up_with_unready = pods.unready > 0 and ratio > 1.0
    if not scale_up_with_unready and pods.missing == 0:
        if tolerances.is_within(ratio):
            return current, utilization
        return math.ceil(ratio * pods.ready), utilization
    usage, counted = pods.usage_total, pods.ready
    if pods.missing:
        if ratio < 1.0:  # scale-down: assume missing pods run at max(100%, target) of their request
            usage += pods.missing * request * max(100, target_utilization) // 100
            counted += pods.missing
        elif ratio > 1.0:  # scale-up: assume they use nothing
            counted += pods.missing
        # at a ratio of exactly 1 the Go code leaves missing pods out altogether
    if scale_up_with_unready:
        counted += pods.unready
    new_ratio, _ = _utilization_ratio(usage, counted, request, target_utilization)
    return _finish(current, ratio, new_ratio, counted, tolerances), utilization


def average_value_replicas(
    current: int, target_average: int, pods: PodReadings, tolerances: Tolerances
) -> tuple[int, int]:
    """A per-pod average target (Pods metric, Resource averageValue): (replicas, current average)."""
    if pods.pod_count == 0:
        raise MetricsUnavailableError("no pods returned by selector while calculating replica count")
    if pods.ready == 0:
        raise MetricsUnavailableError("did not receive metrics for targeted pods (pods might be unready)")
    ratio, average = _average_ratio(pods.usage_total, pods.ready, target_average)
    scale_up_with_unready = pods.unready > 0 and ratio > 1.0
    if not scale_up_with_unready and pods.missing == 0:
        if tolerances.is_within(ratio):
            return current, average
        return math.ceil(ratio * pods.ready), average
    usage, counted = pods.usage_total, pods.ready
    if pods.missing and ratio != 1.0:  # at exactly 1 the Go code leaves missing pods out
        counted += pods.missing
        if ratio < 1.0:  # scale-down: missing pods assumed exactly at the target
            usage += pods.missing * target_average
    if scale_up_with_unready:
        counted += pods.unready
    new_ratio, _ = _average_ratio(usage, counted, target_average)
    return _finish(current, ratio, new_ratio, counted, tolerances), average


def per_pod_metric_replicas(
    current: int, usage_milli: int, target_per_pod_milli: int, tolerances: Tolerances
) -> tuple[int, int]:
    """An External or Object metric with an AverageValue target (GetExternalPerPodMetricReplicas,
    GetObjectPerPodMetricReplicas): (replicas, current average per replica, in milli-units).

    The metric is one number for the whole target (a queue's length), not a per-pod sample: the
    proposal is ceil(usage / target) whatever the pods' readiness, and the replicas it is compared with
    are the target's current replicas. This is why N member HPAs reading one queue with the same
    target each want the whole fleet's count (controller.planning.external_share)."""
    if current <= 0:
        raise MetricsUnavailableError("the target has no replicas to average the metric over")
    if target_per_pod_milli <= 0:
        raise MetricsUnavailableError("the AverageValue target must be above 0")
    ratio = usage_milli / (target_per_pod_milli * current)
    replicas = current if tolerances.is_within(ratio) else math.ceil(usage_milli / target_per_pod_milli)
    return replicas, math.ceil(usage_milli / current)


def usage_ratio_replicas(current: int, ratio: float, pods: PodReadings, tolerances: Tolerances) -> int:
    """An External or Object metric with a Value target (getUsageRatioReplicaCount): the ratio of the
    value to the target scales the ready pods."""
    if current == 0:
        return math.ceil(ratio)
    if tolerances.is_within(ratio):
        return current
    if pods.pod_count == 0:
        raise MetricsUnavailableError("no pods returned by selector while calculating replica count")
    return math.ceil(ratio * pods.ready)
