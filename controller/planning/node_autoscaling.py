"""Elastic room from a node autoscaler, and what its pod Events say about pods that pend.

The cluster autoscaler names node groups with their min, max and target sizes (its status ConfigMap,
parsed in ``controller.kube.autoscaler_status``); Karpenter's NodePools state resource limits against
what their nodes already hold. Either way the room is counted in pods of the workload's template, only
over the groups or pools that could run it, so a GPU pool does not make room for a web server.

A node group's shape is read from one of its nodes (a node whose labels name the group, as every cloud
provider's node labels do): how many pods of the template fit on an empty node of that size, and
whether the node admits the template at all. A group scaled to zero has no node to read; it is assumed
shaped like the cluster's other nodes that admit the template, and, in a cluster with no such node,
to hold one pod per node: a group at zero is room, but an unmeasured one is not counted as much room.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from controller.planning.capacity import (
    NodeInfo,
    ResourceList,
    node_admits,
    pod_requests,
    replicas_that_fit,
    resource_list,
    tolerates,
)
from controller.planning.room import Elastic
from controller.planning.wording import count

TRIGGERED = "TriggeredScaleUp"
NOT_TRIGGERED = "NotTriggerScaleUp"


@dataclass(frozen=True)
class NodeGroup:
    """One cluster-autoscaler node group as its status reports it."""

    name: str
    min_size: int
    max_size: int
    target: int  # cloudProviderTarget: the size asked of the cloud
    registered: int = 0  # nodes that joined the cluster so far
    scale_up: str | None = None  # NoActivity, InProgress, Backoff


def _of_group(node: NodeInfo, group: str) -> bool:
    """A node belongs to a group when one of its labels holds the group's name (EKS, GKE, AKS and the
    cluster-api providers all label nodes so), or names a suffix of it (an ASG named after its pool)."""
    return any(v and (v == group or (group.endswith(v) and len(v) > 2)) for v in node.labels.values())


def pods_per_node(node: NodeInfo, template_spec: Mapping[str, Any]) -> int:
    """Pods of the template that fit on an empty node of this node's size; 0 when it is not admitted."""
    if not node_admits(NodeInfo(node.name, node.allocatable, node.labels, node.taints), template_spec):
        return 0
    return replicas_that_fit(node.allocatable, pod_requests(template_spec))


def _group_shape(group: NodeGroup, nodes: Sequence[NodeInfo], template_spec: Mapping[str, Any]) -> int:
    own = [n for n in nodes if _of_group(n, group.name)]
    if own:
        return pods_per_node(own[0], template_spec)
    others = [p for n in nodes if (p := pods_per_node(n, template_spec)) > 0]
    return max(others) if others else 1


def cluster_autoscaler_room(
    groups: Iterable[NodeGroup], nodes: Sequence[NodeInfo], template_spec: Mapping[str, Any]
) -> Elastic:
    """(maxSize - target) x pods-per-node, summed over the node groups that can run the template.

    The node shape reported is the largest of those groups': a node of it goes only once that many
    pods have left, so the planner never counts a node freed that would stay. The standing pods are
    what the groups' minimum nodes hold (minSize x the shape): those nodes stay whatever runs there."""
    pods, full, coming, shapes, standing = 0, [], 0, [], 0
    for group in groups:
        per_node = _group_shape(group, nodes, template_spec)
        if per_node <= 0:
            continue
        shapes.append(per_node)
        pods += max(0, group.max_size - group.target) * per_node
        standing += max(0, group.min_size) * per_node
        coming += max(0, group.target - group.registered)
        if group.target >= group.max_size:
            full.append(f"node group at max {group.max_size}")
    if coming:
        detail = f"{count(coming, 'node')} coming"
    elif full and pods == 0:
        detail = full[0]
    else:
        detail = f"node groups can add {count(pods, 'pod')}"
    return Elastic(
        pods=pods,
        source="cluster-autoscaler",
        detail=detail,
        pods_per_node=max(shapes, default=None),
        standing_pods=standing,
    )


def _pool_admits(pool: Mapping[str, Any], template_spec: Mapping[str, Any]) -> bool:
    """Whether a NodePool's nodes could take the template: its taints tolerated, and no nodeSelector
    term contradicting the pool's labels or its ``In`` requirements (a key the pool leaves open fits)."""
    template = (pool.get("spec") or {}).get("template") or {}
    spec, labels = template.get("spec") or {}, (template.get("metadata") or {}).get("labels") or {}
    tolerations = template_spec.get("tolerations") or []
    if not all(tolerates(tolerations, t) for t in spec.get("taints") or []):
        return False
    allowed = {
        r.get("key"): set(r.get("values") or [])
        for r in spec.get("requirements") or []
        if r.get("operator") == "In"
    }
    for key, value in (template_spec.get("nodeSelector") or {}).items():
        if key in labels and labels[key] != value:
            return False
        if key in allowed and value not in allowed[key]:
            return False
    return True


def karpenter_room(pools: Iterable[Mapping[str, Any]], template_spec: Mapping[str, Any]) -> Elastic | None:
    """Pods of the template the NodePools' ``spec.limits`` still allow over ``status.resources``.

    None when a pool that admits the template sets no limit on anything the pod asks for: Karpenter
    then grows it without bound, and the cluster's room is unknown (no cap), not zero.
    """
    request: ResourceList = pod_requests(template_spec)
    pods, names = 0, []
    for pool in pools:
        if not _pool_admits(pool, template_spec):
            continue
        limits = resource_list((pool.get("spec") or {}).get("limits"))
        used = resource_list((pool.get("status") or {}).get("resources"))
        bound = {k: limits[k] - used.get(k, Decimal(0)) for k in request if k in limits and request[k] > 0}
        if not bound:
            return None
        pods += replicas_that_fit(bound, {k: request[k] for k in bound})
        names.append(str((pool.get("metadata") or {}).get("name") or ""))
    if not names:
        return Elastic(pods=0, source="karpenter", detail="no NodePool admits the pods")
    return Elastic(
        pods=pods, source="karpenter", detail=f"NodePools {', '.join(names)} can add {count(pods, 'pod')}"
    )


@dataclass(frozen=True)
class PendingReasons:
    """What the node autoscaler said of a workload's pending pods."""

    coming: int = 0  # its latest word: TriggeredScaleUp
    coming_since: datetime | None = None  # the oldest TriggeredScaleUp among them
    stuck: int = 0  # its latest word: NotTriggerScaleUp
    stuck_message: str | None = None


def _when(event: Mapping[str, Any]) -> datetime | None:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        raw = event.get(key) or (
            (event.get("series") or {}).get("lastObservedTime") if key == "eventTime" else None
        )
        if raw:
            try:
                return datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
            except ValueError:
                continue
    return None


def _first(event: Mapping[str, Any]) -> datetime | None:
    raw = event.get("firstTimestamp") or event.get("eventTime")
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")) if raw else None
    except ValueError:
        return None


def pending_reasons(pending_pods: Iterable[str], events: Iterable[Mapping[str, Any]]) -> PendingReasons:
    """Sort the pending pods (by name) by the latest scale-up Event about each: nodes are coming for
    them, or no node group can fit them. A pod with neither Event is neither (no autoscaler spoke)."""
    names = set(pending_pods)
    latest: dict[str, tuple[datetime, Mapping[str, Any]]] = {}
    for event in events:
        target = event.get("involvedObject") or event.get("regarding") or {}
        name, when = target.get("name"), _when(event)
        if event.get("reason") not in (TRIGGERED, NOT_TRIGGERED) or name not in names or when is None:
            continue
        if name not in latest or when > latest[name][0]:
            latest[name] = (when, event)
    coming = [e for _, e in latest.values() if e.get("reason") == TRIGGERED]
    stuck = [e for _, e in latest.values() if e.get("reason") == NOT_TRIGGERED]
    since = min((t for e in coming if (t := _first(e)) is not None), default=None)
    message = str(stuck[0].get("message") or "") if stuck else None
    return PendingReasons(coming=len(coming), coming_since=since, stuck=len(stuck), stuck_message=message)
