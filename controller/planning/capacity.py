"""How many replicas of a workload a member cluster can hold: pure arithmetic over nodes and pods.

DESIGN §3 ``available``: the replicas running plus what fits in the free allocatable of schedulable
nodes, by the pod template's requests. This is the scheduler's resource fit counted node by node (so
fragmentation is respected, unlike a fleet-wide sum), with the parts of scheduling a template states
plainly: nodeSelector, taints and tolerations, cordoned and NotReady nodes. Node affinity, pod
(anti-)affinity, topology spread and volume limits are not modelled: the estimate is an upper bound,
which is what the planner needs to split capacity, and the native HPA plus unschedulable-pod counts
correct it at run time.

Quantities are exact decimals (fhpa_api.quantity), so "100m" of CPU against "4" allocatable is exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from fhpa_api.quantity import parse_quantity

ResourceList = dict[str, Decimal]
PODS = "pods"


def resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    """A ResourceList (``{"cpu": "500m"}``) as exact decimals; a bad quantity raises QuantityError."""
    return {name: parse_quantity(value) for name, value in (raw or {}).items()}


def _add(total: ResourceList, more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Decimal(0)) + value


def _max_into(total: ResourceList, other: Mapping[str, Decimal]) -> None:
    for name, value in other.items():
        total[name] = max(total.get(name, Decimal(0)), value)


def container_requests(container: Mapping[str, Any]) -> ResourceList:
    """A container's requests; a limit with no request counts as the request (API defaulting does that)."""
    resources = container.get("resources") or {}
    requests = resource_list(resources.get("limits"))
    requests.update(resource_list(resources.get("requests")))
    return requests


def pod_requests(pod_spec: Mapping[str, Any]) -> ResourceList:
    """What the scheduler reserves for one pod, as in its resource-fit check.

    The larger of (the sum over containers plus restartable "sidecar" init containers) and each plain
    init container's request plus the sidecars started before it; plus the pod overhead; plus one
    ``pods`` slot.
    """
    total: ResourceList = {}
    for container in pod_spec.get("containers") or []:
        _add(total, container_requests(container))
    init_peak: ResourceList = {}
    sidecars: ResourceList = {}
    for init in pod_spec.get("initContainers") or []:
        req = container_requests(init)
        if init.get("restartPolicy") == "Always":
            _add(sidecars, req)
            continue
        step = dict(sidecars)
        _add(step, req)
        _max_into(init_peak, step)
    _add(total, sidecars)
    _max_into(total, init_peak)
    _add(total, resource_list(pod_spec.get("overhead")))
    total[PODS] = Decimal(1)
    return total


@dataclass(frozen=True)
class NodeInfo:
    name: str
    allocatable: ResourceList
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    schedulable: bool = True  # not cordoned, Ready


def node_info(node: Mapping[str, Any]) -> NodeInfo:
    """The parts of a core/v1 Node that decide whether and how much it can take."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return NodeInfo(
        name=meta.get("name", ""),
        allocatable=resource_list(status.get("allocatable")),
        labels=dict(meta.get("labels") or {}),
        taints=tuple(spec.get("taints") or ()),
        schedulable=ready and not spec.get("unschedulable", False),
    )


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Kubernetes toleration matching: empty key with Exists tolerates everything; empty effect any."""
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        operator = tol.get("operator") or "Equal"
        if not tol.get("key"):
            if operator == "Exists":
                return True
            continue
        if tol.get("key") != taint.get("key"):
            continue
        if operator == "Exists" or (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def node_admits(node: NodeInfo, pod_spec: Mapping[str, Any]) -> bool:
    """Whether new pods of this template may land on the node at all."""
    if not node.schedulable:
        return False
    selector = pod_spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()):
        return False
    tolerations = pod_spec.get("tolerations") or []
    return all(
        tolerates(tolerations, taint)
        for taint in node.taints
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def used_by_node(pods: Iterable[Mapping[str, Any]]) -> dict[str, ResourceList]:
    """Requests of the pods bound to each node (terminal pods hold nothing)."""
    used: dict[str, ResourceList] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        if not node_name or is_terminal(pod):
            continue
        _add(used.setdefault(node_name, {}), pod_requests(spec))
    return used


def replicas_that_fit(free: Mapping[str, Decimal], request: Mapping[str, Decimal]) -> int:
    """How many pods of ``request`` fit in ``free``: the minimum over the resources requested.

    A requested resource the node does not offer fits none; nothing requested but the pod slot fits
    as many as the slots allow.
    """
    counts = []
    for name, amount in request.items():
        if amount <= 0:
            continue
        have = free.get(name, Decimal(0))
        if have <= 0:
            return 0
        counts.append(int((have / amount).to_integral_value(rounding=ROUND_FLOOR)))
    return min(counts) if counts else 0


def free_on(node: NodeInfo, used: Mapping[str, Decimal]) -> ResourceList:
    return {name: amount - used.get(name, Decimal(0)) for name, amount in node.allocatable.items()}


def available_replicas(
    nodes: Iterable[NodeInfo],
    pods: Iterable[Mapping[str, Any]],
    template_spec: Mapping[str, Any],
    running: int,
) -> int:
    """DESIGN §3 ``available``: ``running`` replicas of the workload plus the new ones that fit,
    node by node, on the nodes that admit the template. ``pods`` are all pods in the cluster."""
    return running + fit_on_nodes(nodes, used_by_node(pods), template_spec)


def fit_on_nodes(
    nodes: Iterable[NodeInfo], used: Mapping[str, Mapping[str, Decimal]], template_spec: Mapping[str, Any]
) -> int:
    """New pods of the template that fit, node by node, given what is already bound to each node
    (``used``: a watch-backed cache keeps it as pods come and go, instead of summing every pod again)."""
    request = pod_requests(template_spec)
    return sum(
        replicas_that_fit(free_on(node, used.get(node.name, {})), request)
        for node in nodes
        if node_admits(node, template_spec)
    )
