"""How much room a cluster has for one workload, in two kinds: firm (fits now) and elastic (can come).

Pure arithmetic over what the adapter read: the fit on today's nodes, the namespace's ResourceQuotas,
the node autoscaler's node groups or NodePools, or the bound an operator declared. Every number here
counts pods of the workload's template, so the planner can add them to what runs.

Quotas cap both kinds: a node group at 30 nodes is no room for pods the namespace may not create. A
workload whose controller reports a quota refusal is full now, whatever the arithmetic says: the
refusal is the API server's own word, the arithmetic an estimate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from controller.planning.capacity import ResourceList, pod_requests, resource_list
from controller.planning.observation import CapacityObservation

QUOTA_REFUSED = "exceeded quota"
# a quota's resource name and the key of the pod's requests (or limits) it counts
_QUOTA_KEYS = {
    "pods": ("requests", "pods"),
    "count/pods": ("requests", "pods"),
    "cpu": ("requests", "cpu"),
    "memory": ("requests", "memory"),
    "requests.cpu": ("requests", "cpu"),
    "requests.memory": ("requests", "memory"),
    "limits.cpu": ("limits", "cpu"),
    "limits.memory": ("limits", "memory"),
}


@dataclass(frozen=True)
class QuotaRoom:
    """What the namespace's tightest quota still admits: ``pods`` more of the template, and why."""

    pods: int
    resource: str  # the quota resource that binds, e.g. "pods", "requests.cpu"
    hard: str
    used: str

    def words(self) -> str:
        if self.resource in ("pods", "count/pods"):
            return f"quota {self.hard} pods, {self.used} used"
        return f"quota {self.resource} {self.hard}, {self.used} used"


def pod_limits(pod_spec: Mapping[str, Any]) -> ResourceList:
    """What a pod counts against ``limits.*`` quotas: each container's limit, else its request.

    A container without a limit gets none, but quota admission refuses such a pod under a limits quota
    unless a LimitRange fills it in; its request is the smallest limit that can be, so the room computed
    from it is an upper bound, as every capacity estimate here is.
    """
    total: ResourceList = {}
    for container in pod_spec.get("containers") or []:
        resources = container.get("resources") or {}
        each = resource_list(resources.get("requests"))
        each.update(resource_list(resources.get("limits")))
        for name, value in each.items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


def _scoped(quota: Mapping[str, Any]) -> bool:
    spec = quota.get("spec") or {}
    return bool(spec.get("scopes") or spec.get("scopeSelector"))


def quota_room(quotas: Iterable[Mapping[str, Any]], template_spec: Mapping[str, Any]) -> QuotaRoom | None:
    """The fewest new pods of the template that the namespace's quotas admit; None when none binds.

    Each of pods, count/pods, cpu/memory and their requests.*/limits.* forms counts: (hard - used)
    divided by what one pod takes of it, rounded down. A resource the pod does not ask for does not
    bind here (a LimitRange may default it). Scoped quotas (BestEffort, a PriorityClass) are left out:
    whether one applies depends on fields the estimate does not model.
    """
    amounts = {"requests": pod_requests(template_spec), "limits": pod_limits(template_spec)}
    amounts["limits"]["pods"] = Decimal(1)
    tightest: QuotaRoom | None = None
    for quota in quotas:
        if _scoped(quota):
            continue
        status = quota.get("status") or {}
        hard, used = status.get("hard") or {}, status.get("used") or {}
        for resource, (kind, key) in _QUOTA_KEYS.items():
            per_pod = amounts[kind].get(key, Decimal(0))
            if resource not in hard or per_pod <= 0:
                continue
            left = (
                resource_list({"h": hard[resource]})["h"] - resource_list({"u": used.get(resource, "0")})["u"]
            )
            pods = max(0, int((left / per_pod).to_integral_value(rounding=ROUND_FLOOR)))
            if tightest is None or pods < tightest.pods:
                tightest = QuotaRoom(pods, resource, str(hard[resource]), str(used.get(resource, "0")))
    return tightest


def quota_refusal(workload_status: Mapping[str, Any] | None) -> str | None:
    """The message of a ``ReplicaFailure`` condition that names a quota, if the workload reports one."""
    for cond in (workload_status or {}).get("conditions") or []:
        message = str(cond.get("message") or "")
        if cond.get("type") == "ReplicaFailure" and cond.get("status") == "True" and QUOTA_REFUSED in message:
            return message
    return None


def refused_replicas(spec_replicas: int, workload_status: Mapping[str, Any] | None) -> int:
    """Pods the workload wants that were never created: its replicas minus the pods it has."""
    if quota_refusal(workload_status) is None:
        return 0
    return max(0, spec_replicas - int((workload_status or {}).get("replicas") or 0))


@dataclass(frozen=True)
class Elastic:
    """Room a node autoscaler can still add, in pods of the template, and how it says so."""

    pods: int
    source: str  # cluster-autoscaler, karpenter, declared
    detail: str | None = None
    provision_seconds: float | None = None
    pods_per_node: int | None = None  # the shape of the group's nodes, in pods of the template
    standing_pods: int = 0  # what the groups' minimum nodes hold, in pods of the template


def combine(
    running: int,
    fit: int | None,
    quota: QuotaRoom | None = None,
    elastic: Elastic | None = None,
    refusal: str | None = None,
) -> CapacityObservation:
    """Firm and elastic room from the signals; ``available_replicas`` is ``firm + elastic``.

    firm = running + what fits now, elastic = what can come; the quota caps the two together (what it
    admits beyond what runs). A quota refusal makes the cluster full now: firm is what runs, no elastic.
    """
    firm = None if fit is None else running + fit
    grow = elastic.pods if elastic is not None else 0
    source = elastic.source if elastic is not None else "allocatable"
    detail = elastic.detail if elastic is not None else None
    provision = elastic.provision_seconds if elastic is not None else None
    per_node = elastic.pods_per_node if elastic is not None else None
    if refusal is not None:
        words = quota.words() if quota is not None else "quota refuses new pods"
        firm, grow, source, detail = running, 0, "quota", words
    elif quota is not None:
        cap = running + quota.pods
        if firm is None or firm >= cap:
            firm, grow, source, detail = cap, 0, "quota", quota.words()
        elif firm + grow > cap:
            grow, source, detail = cap - firm, "quota", quota.words()
    return CapacityObservation(
        firm=firm,
        elastic=grow,
        source=source,
        detail=detail,
        provision_seconds=provision,
        pods_per_node=per_node,
        standing_pods=elastic.standing_pods if elastic is not None else 0,
    )


def available(room: CapacityObservation) -> int | None:
    """The planner's one number: firm + elastic; unknown firm stays unknown."""
    return None if room.firm is None else room.firm + room.elastic
