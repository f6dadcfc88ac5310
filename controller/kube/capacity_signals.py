"""What a member shows about room beyond its free allocatable, read for ``KubeMemberCluster.observe``.

Standard objects only: the namespace's ResourceQuotas, the cluster autoscaler's status ConfigMap
(``kube-system/cluster-autoscaler-status``), the Events it writes on pods (``TriggeredScaleUp``,
``NotTriggerScaleUp``), and Karpenter's NodePools where the ``karpenter.sh`` API is served (v1, else
v1beta1). When none of them tells of a node autoscaler, the bound an operator declared on the member
Secret (``autoscaling.karmada.io/elastic-pods``) is the elastic room.

Each read is kept for ``ttl_seconds`` (a minute) and shared by every workload of the member (one quota
list of every namespace, or of each namespace where RBAC grants only some; one ConfigMap; one NodePool
list), and Events are read only for workloads whose pods pend, kept ``events_ttl_seconds``. A read the
member's RBAC refuses, or an object or API that is not there, is a signal the cluster does not give: it
is asked again after ``denied_seconds`` (5 minutes), and the observation goes on without it. These are
polled, not watched: a member at rest whose FederatedHPAs are only resynced costs a few reads a
minute, and none while nothing observes it. A
failing read never makes the cluster unobservable: capacity is an estimate, the workload's counts are
not.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from controller.errors import PortError
from controller.kube import autoscaler_status
from controller.kube.api_errors import AccessDeniedError
from controller.kube.clients import KubeClient
from controller.planning import node_autoscaling, room
from controller.planning.capacity import NodeInfo
from controller.planning.observation import CapacityObservation

log = logging.getLogger(__name__)

KARPENTER_VERSIONS = ("v1", "v1beta1")  # preferred first
ANNOTATION_ELASTIC_PODS = "autoscaling.karmada.io/elastic-pods"
ANNOTATION_PROVISION_SECONDS = "autoscaling.karmada.io/node-provision-seconds"
_EVENT_REASONS = (node_autoscaling.TRIGGERED, node_autoscaling.NOT_TRIGGERED)


def declared(annotations: Mapping[str, str]) -> tuple[int | None, float | None, str | None]:
    """(elastic pods, node provision seconds, a problem) from a member Secret's annotations: a bound an
    operator declares for a cluster that grows nodes where nothing readable says so."""
    pods, seconds, problems = None, None, []
    raw = annotations.get(ANNOTATION_ELASTIC_PODS)
    if raw is not None:
        if raw.strip().isdigit():
            pods = int(raw)
        else:
            problems.append(f"annotation {ANNOTATION_ELASTIC_PODS} must be a whole number of pods; ignored")
    raw = annotations.get(ANNOTATION_PROVISION_SECONDS)
    if raw is not None:
        try:
            seconds = float(raw)
            if not 0 <= seconds < 86_400:
                raise ValueError(raw)
        except ValueError:
            seconds = None
            problems.append(f"annotation {ANNOTATION_PROVISION_SECONDS} must be seconds under a day; ignored")
    return pods, seconds, "; ".join(problems) or None


def pending_pod_names(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of the unschedulable pods among a workload's pods (as ``member.pod_counts`` counts them)."""
    names = []
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        conditions = status.get("conditions") or []
        scheduled: Mapping[str, Any] = next((c for c in conditions if c.get("type") == "PodScheduled"), {})
        if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            names.append(str((pod.get("metadata") or {}).get("name") or ""))
    return names


class CapacitySignals:
    """The reads above for one member, kept for a while. Thread-safe."""

    def __init__(
        self,
        cluster: str,
        client: KubeClient,
        ttl_seconds: float = 60.0,
        events_ttl_seconds: float = 10.0,
        denied_seconds: float = 300.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self.client = client
        self.ttl_seconds = ttl_seconds
        self.events_ttl_seconds = events_ttl_seconds
        self.denied_seconds = denied_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[float, Any]] = {}
        self._denied: set[str] = set()

    def _read(self, key: str, ttl: float, fetch: Callable[[], Any]) -> Any:
        """``fetch()`` at most once per ``ttl``; None when refused or failing. A refusal, and an answer of
        None (the object or the API is not there), are kept ``denied_seconds``: they rarely change."""
        now = self._monotonic()
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and now < kept[0]:
            return kept[1]
        self._denied.discard(key)
        try:
            value = fetch()
            until = now + (ttl if value is not None else self.denied_seconds)
        except AccessDeniedError:
            log.info("Capacity signal not readable (RBAC)", extra={"cluster": self.cluster, "signal": key})
            value, until = None, now + self.denied_seconds
            self._denied.add(key)
        except PortError as exc:
            log.debug(
                "Capacity signal unread", extra={"cluster": self.cluster, "signal": key, "error": str(exc)}
            )
            value, until = None, now + ttl
        with self._lock:
            self._kept[key] = (until, value)
        return value

    def quotas(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's ResourceQuotas: from one list of every namespace's per ``ttl_seconds`` (one
        request per member, however many namespaces its workloads use), or, where RBAC grants only some
        namespaces, from the namespace's own list."""
        every = self._read("quotas", self.ttl_seconds, lambda: self.client.get("/api/v1/resourcequotas"))
        if every is not None or "quotas" not in self._denied:
            items = (every or {}).get("items") or []
            return [q for q in items if (q.get("metadata") or {}).get("namespace") == namespace]
        path = f"/api/v1/namespaces/{namespace}/resourcequotas"
        found = self._read(f"quotas/{namespace}", self.ttl_seconds, lambda: self.client.get(path))
        return list((found or {}).get("items") or [])

    def node_groups(self) -> list[node_autoscaling.NodeGroup]:
        """The node groups of the autoscaler's status ConfigMap, parsed when it is read (once per
        ``ttl_seconds``), not at each observation: its YAML costs more than the rest of an observe."""
        ns, name = autoscaler_status.NAMESPACE, autoscaler_status.NAME
        path = f"/api/v1/namespaces/{ns}/configmaps/{name}"

        def fetch() -> list[node_autoscaling.NodeGroup] | None:
            found = self.client.find(path)
            return None if found is None else autoscaler_status.node_groups(found)

        return list(self._read("cluster-autoscaler-status", self.ttl_seconds, fetch) or [])

    def node_pools(self) -> list[dict[str, Any]] | None:
        """Karpenter's NodePools; None where the API is not served."""
        pools: list[dict[str, Any]] | None = self._read("nodepools", self.ttl_seconds, self._fetch_node_pools)
        return pools

    def _fetch_node_pools(self) -> list[dict[str, Any]] | None:
        group = self.client.find("/apis/karpenter.sh")
        served = (
            {v.get("version") for v in (group or {}).get("versions") or []}
            if isinstance(group, dict)
            else set()
        )
        version = next((v for v in KARPENTER_VERSIONS if v in served), None)
        if version is None:
            return None
        listing = self.client.find(f"/apis/karpenter.sh/{version}/nodepools")
        return list((listing or {}).get("items") or []) if isinstance(listing, dict) else None

    def scale_up_events(self, namespace: str) -> list[dict[str, Any]]:
        """The namespace's pod Events the node autoscaler wrote about scale-ups, of either reason."""
        path = f"/api/v1/namespaces/{namespace}/events"

        def fetch() -> list[dict[str, Any]]:
            items: list[dict[str, Any]] = []
            for reason in _EVENT_REASONS:
                found = self.client.get(path, fieldSelector=f"involvedObject.kind=Pod,reason={reason}")
                items += (found or {}).get("items") or []
            return items

        return list(self._read(f"events/{namespace}", self.events_ttl_seconds, fetch) or [])


def elastic_room(
    signals: CapacitySignals,
    nodes: Callable[[], Sequence[NodeInfo]],
    template: Mapping[str, Any],
    declared: int | None,
) -> tuple[room.Elastic | None, bool]:
    """(the elastic room, whether it is unbounded): the cluster autoscaler's node groups, else
    Karpenter's NodePools, else the declared bound, else none."""
    groups = signals.node_groups()
    if groups:
        return node_autoscaling.cluster_autoscaler_room(groups, nodes(), template), False
    pools = signals.node_pools()
    if pools:
        pool_room = node_autoscaling.karpenter_room(pools, template)
        if pool_room is None and declared is None:
            return None, True
        if pool_room is not None:
            return pool_room, False
    if declared is not None:
        return room.Elastic(
            pods=declared, source="declared", detail=f"declared elastic up to {declared} pods"
        ), False
    return None, False


def observe_capacity(
    signals: CapacitySignals,
    *,
    namespace: str,
    template: Mapping[str, Any],
    running: int,
    firm: int | None,
    spec_replicas: int,
    workload_status: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    nodes: Callable[[], Sequence[NodeInfo]],
    declared: int | None,
    provision_seconds: float | None,
) -> dict[str, Any]:
    """The capacity fields of a ClusterObservation (``available_replicas`` = firm + elastic included).

    ``firm`` is what the node fit alone gives (running plus what fits now; None: unknown)."""
    fit = None if firm is None else firm - running
    try:
        quota = room.quota_room(signals.quotas(namespace), template)
    except ValueError:  # a quantity we cannot read: that quota is not counted
        quota = None
    refusal = room.quota_refusal(workload_status)
    elastic, unbounded = elastic_room(signals, nodes, template, declared)
    if elastic is not None and provision_seconds is not None:
        elastic = dataclasses.replace(elastic, provision_seconds=provision_seconds)
    capacity = room.combine(running, fit, quota, elastic, refusal)
    available = None if unbounded and quota is None and refusal is None else room.available(capacity)
    fields: dict[str, Any] = {
        "capacity": capacity,
        "available_replicas": available,
        "refused_replicas": room.refused_replicas(spec_replicas, workload_status),
    }
    pending = pending_pod_names(pods)
    if pending:
        reasons = node_autoscaling.pending_reasons(pending, signals.scale_up_events(namespace))
        fields.update(
            pending_coming_replicas=reasons.coming,
            pending_coming_since=reasons.coming_since,
            pending_stuck_replicas=reasons.stuck,
        )
        if reasons.stuck and capacity.elastic == 0 and capacity.source != "quota":
            fields["capacity"] = _with_detail(capacity, f"{capacity.detail or 'no room'} (NotTriggerScaleUp)")
        elif reasons.coming and reasons.coming_since is not None:
            words = capacity.detail if capacity.detail and "coming" in capacity.detail else "nodes coming"
            fields["capacity"] = _with_detail(capacity, f"{words}, TriggeredScaleUp")
    return fields


def _with_detail(capacity: CapacityObservation, detail: str) -> CapacityObservation:
    return capacity.model_copy(update={"detail": detail})
