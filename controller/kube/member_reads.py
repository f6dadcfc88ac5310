"""What the member adapter reads of a member cluster, and how (``controller.kube.member`` is the port
and its writes; this is their base).

What it reads: the workload's replicas, selector and pod template (for any kind with a scale
subresource, found through discovery), the pods the selector picks (ready, and unschedulable:
PodScheduled False with reason Unschedulable), nodes and every pod's requests (the capacity estimate),
and the HorizontalPodAutoscalers (autoscaling/v2, or v2beta2 on clusters without v2). The room beyond
the free allocatable (quotas, a node autoscaler, a declared bound) comes from
``controller.kube.capacity_signals``.

With a ``MemberCache`` (the controller's default, ``watch=True``) every read of ``observe`` comes from
the member's watch-backed cache, shared by every FederatedHPA: no request per reconcile. A member whose
cache has not synced is not observed at all (CacheNotSyncedError, a ClusterUnreachableError: unknown,
never empty); a workload kind first referenced starts its watch and ``observe`` waits up to
``cache_wait_seconds`` for it. Deployments, StatefulSets and ReplicaSets carry their Scale in the
object (``spec.replicas``, ``spec.selector``, the same resourceVersion); another kind's Scale is read
once per change of the object. Without a cache (tests, tools) each ``observe`` reads the API directly.

Health: ``probe`` asks GET /readyz, unless the member's watches are all open and
- one of them carried a line (an event or a bookmark) within ``live_window_seconds`` (the probe
  period): the member has just answered, so a probe would tell nothing new; or
- a real probe succeeded within ``quiet_probe_seconds`` (60 s): a quiet member, whose watches are open
  but carry only a bookmark a minute, is asked once a minute rather than every probe period.
A member that goes away is seen at once (its watches fail, so the next probe is real) or, if it stalls
with its connections open, at most ``quiet_probe_seconds`` plus a probe period later; TCP keepalive on
the watch sockets turns a silent partition into a failing watch within about 25 s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.errors import ClusterUnreachableError
from controller.kube.api_errors import AccessDeniedError
from controller.kube.capacity_signals import CapacitySignals, observe_capacity
from controller.kube.clients import KubeClient
from controller.kube.member_cache import CacheNotSyncedError, MemberCache, WorkloadKind
from controller.kube.member_hpas import (
    DEFAULT_API_VERSIONS,
    cached_hpas,
    hpa_observation,
    owns,
    split_api_version,
    targets,
)
from controller.planning import capacity
from controller.planning.member_hpa import (
    hpa_name,
)
from controller.planning.observation import ClusterObservation, MemberHPAObservation
from controller.planning.selectors import selector_string
from controller.ports import ClusterIdentity
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA

log = logging.getLogger(__name__)

HPA_VERSIONS = ("v2", "v2beta2")  # preferred first
SCALE_IN_OBJECT = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")}
_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class ResolvedKind:
    """Where a kind lives in one cluster, from discovery."""

    group: str
    version: str
    plural: str
    namespaced: bool
    scalable: bool

    @property
    def api_prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
        base = self.api_prefix
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


@dataclass(frozen=True)
class _Found:
    """A workload ``observe`` found: where, its object, its Scale's replicas and version, its pods."""

    namespace: str
    workload: Mapping[str, Any]
    replicas: int
    scale_resource_version: str | None
    pods: Sequence[Mapping[str, Any]]


@dataclass
class _CapacitySnapshot:
    taken: float
    nodes: list[capacity.NodeInfo]
    pods: list[dict[str, Any]]


def pod_counts(pods: Sequence[Mapping[str, Any]]) -> tuple[int, int, int]:
    """(ready, unschedulable, running-on-a-node) among a workload's pods; terminating pods are not ready."""
    ready = pending = running = 0
    for pod in pods:
        status, meta = pod.get("status") or {}, pod.get("metadata") or {}
        if status.get("phase") in _TERMINAL:
            continue
        conds = {c.get("type"): c for c in status.get("conditions") or []}
        scheduled = conds.get("PodScheduled") or {}
        if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            pending += 1
            continue
        if (pod.get("spec") or {}).get("nodeName"):
            running += 1
        if (conds.get("Ready") or {}).get("status") == "True" and not meta.get("deletionTimestamp"):
            ready += 1
    return ready, pending, running


def _pod_key(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class MemberReader:
    """The read side of a member cluster through a KubeClient: health, discovery and ``observe``, from the
    watch-backed cache or the API. Thread-safe: reconciles of different objects may share it."""

    def __init__(
        self,
        identity: ClusterIdentity,
        client: KubeClient,
        capacity_ttl_seconds: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
        *,
        watch: bool = False,
        cache_options: Mapping[str, Any] | None = None,
        cache_wait_seconds: float = 5.0,
        live_window_seconds: float = 10.0,
        quiet_probe_seconds: float = 60.0,
    ) -> None:
        self._identity = identity
        self.client = client
        self.capacity_ttl_seconds = capacity_ttl_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._kinds: dict[tuple[str, str], ResolvedKind] = {}
        self._hpa_version: str | None = None
        self._capacity: _CapacitySnapshot | None = None
        self.last_probe_error: str | None = None
        self.cache_wait_seconds = cache_wait_seconds
        self.live_window_seconds = live_window_seconds
        self.quiet_probe_seconds = quiet_probe_seconds
        self._last_good_probe = float("-inf")
        self._capacity_unknown_logged = False
        self._scales: dict[tuple[WorkloadKind, str, str], tuple[str | None, dict[str, Any] | None]] = {}
        self.signals = CapacitySignals(identity.name, client, monotonic=monotonic)
        self.cache: MemberCache | None = None
        if watch:
            self.cache = MemberCache.for_client(
                client, hpa_version=self.hpa_version, **dict(cache_options or {})
            )

    def start(self) -> None:
        """Start the member cache's watches (nothing to do without a cache)."""
        if self.cache is not None:
            self.cache.start()

    @property
    def identity(self) -> ClusterIdentity:
        return self._identity

    @property
    def name(self) -> str:
        return self._identity.name

    def set_identity(self, identity: ClusterIdentity) -> None:
        """New labels or annotations on the registry's Secret: same cluster, same client and caches."""
        self._identity = identity

    def close(self) -> None:
        if self.cache is not None:
            self.cache.stop(timeout=2.0)
        self.client.close()

    # --- health ----------------------------------------------------------------------------------

    def probe(self) -> bool:
        cache = self.cache
        now = self._monotonic()
        if cache is not None and (
            cache.live(self.live_window_seconds)
            or (now - self._last_good_probe < self.quiet_probe_seconds and cache.streaming())
        ):
            self.last_probe_error = None
            return True
        ok, detail = self.client.probe()
        self._last_good_probe = now if ok else float("-inf")
        self.last_probe_error = None if ok else detail
        if ok and self.cache is not None:
            self.cache.retry_failing()
        return ok

    # --- discovery -------------------------------------------------------------------------------

    def resolve(self, api_version: str, kind: str) -> ResolvedKind | None:
        """The resource serving ``kind`` in ``api_version``; None when the cluster does not serve it."""
        key = (api_version, kind)
        cached = self._kinds.get(key)
        if cached is not None:
            return cached
        group, version = split_api_version(api_version)
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        listing = self.client.find(path)
        if not isinstance(listing, dict):
            return None
        names = {r.get("name") for r in listing.get("resources") or []}
        for res in listing.get("resources") or []:
            if res.get("kind") == kind and "/" not in res.get("name", ""):
                plural = res["name"]
                resolved = ResolvedKind(
                    group, version, plural, bool(res.get("namespaced")), f"{plural}/scale" in names
                )
                self._kinds[key] = resolved
                return resolved
        return None

    def hpa_version(self) -> str:
        """autoscaling/v2 where served, else v2beta2 (clusters before 1.23); cached per client."""
        if self._hpa_version is None:
            group = self.client.find("/apis/autoscaling") or {}
            served = (
                {v.get("version") for v in group.get("versions") or []} if isinstance(group, dict) else set()
            )
            chosen = next((v for v in HPA_VERSIONS if v in served), None)
            if chosen is None:
                raise ClusterUnreachableError(
                    self.name, "serves neither autoscaling/v2 nor autoscaling/v2beta2"
                )
            self._hpa_version = chosen
        return self._hpa_version

    def _hpa_path(self, namespace: str, name: str | None = None) -> str:
        base = f"/apis/autoscaling/{self.hpa_version()}/namespaces/{namespace}/horizontalpodautoscalers"
        return f"{base}/{name}" if name else base

    def _target(self, ref: CrossVersionObjectReference) -> ResolvedKind | None:
        api_version = ref.api_version or DEFAULT_API_VERSIONS.get(ref.kind)
        if not api_version:
            return None
        resolved = self.resolve(api_version, ref.kind)
        if resolved is not None and not resolved.scalable:
            log.warning(
                "Workload kind has no scale subresource",
                extra={"cluster": self.name, "kind": f"{api_version} {ref.kind}"},
            )
            return None
        return resolved

    # --- observe ---------------------------------------------------------------------------------

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        if self.cache is not None:
            return self._observe_cached(fhpa, self.cache)
        namespace = fhpa.metadata.namespace or "default"
        ref = fhpa.spec.scale_target_ref
        hpa = self._observe_hpa(fhpa, namespace)
        ident = self._identity
        kind = self._target(ref)
        scale = self.client.find(kind.path(namespace, ref.name, "scale")) if kind else None
        if kind is None or not isinstance(scale, dict):
            return ident.observed(healthy=True, hpa=hpa, workload_found=False)
        workload = self.client.find(kind.path(namespace, ref.name)) or {}
        selector = (scale.get("status") or {}).get("selector") or selector_string(
            (workload.get("spec") or {}).get("selector")
        )
        pods: list[dict[str, Any]] = []
        if selector:
            pods = self.client.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector).get(
                "items", []
            )
        replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        scale_rv = (scale.get("metadata") or {}).get("resourceVersion")
        found = _Found(namespace, workload, replicas, scale_rv, pods)

        def available(template: Mapping[str, Any] | None, running: int) -> int | None:
            return self._available(template, running, pods)

        return self._workload_observation(hpa, found, available, self._snapshot_nodes)

    def _observe_cached(self, fhpa: FederatedHPA, cache: MemberCache) -> ClusterObservation:
        """``observe`` from the watch-backed cache: no request, unless a kind is seen for the first time
        (discovery, once) or a kind whose Scale is not in the object changed (one GET of its Scale)."""
        namespace = fhpa.metadata.namespace or "default"
        ref = fhpa.spec.scale_target_ref
        kind = self._target(ref)
        wkind = (kind.group, ref.kind) if kind is not None else None
        if kind is not None and wkind is not None:
            cache.watch_workloads(wkind, kind.api_prefix, kind.plural)
        if not cache.ready_for(namespace, wkind, timeout=self.cache_wait_seconds):
            cache.hpas(namespace)  # raises CacheNotSyncedError naming what is missing
            if wkind is not None:
                cache.workload(wkind, namespace, ref.name)
            raise CacheNotSyncedError(self.name, "member cache not synced")
        hpa = self._observe_hpa_cached(fhpa, namespace, cache)
        ident = self._identity
        workload = cache.workload(wkind, namespace, ref.name) if kind is not None and wkind else None
        if kind is None or wkind is None or workload is None:
            return ident.observed(healthy=True, hpa=hpa, workload_found=False)
        scale = self._scale_of(kind, wkind, namespace, ref.name, workload)
        if scale is None:
            return ident.observed(healthy=True, hpa=hpa, workload_found=False)
        replicas, selector, scale_rv = scale
        pods = cache.pods_matching(namespace, selector) if selector else []

        def available(template: Mapping[str, Any] | None, running: int) -> int | None:
            return self._available_cached(cache, template, running)

        def nodes() -> list[capacity.NodeInfo]:
            return [capacity.node_info(n) for n in cache.nodes()]

        found = _Found(namespace, workload, replicas, scale_rv, pods)
        return self._workload_observation(hpa, found, available, nodes)

    def _workload_observation(
        self,
        hpa: MemberHPAObservation | None,
        found: _Found,
        available: Callable[[Mapping[str, Any] | None, int], int | None],
        nodes: Callable[[], Sequence[capacity.NodeInfo]],
    ) -> ClusterObservation:
        """What ``observe`` reports of a workload it found, read from the API or the cache alike: its
        pods counted and its room, ``available`` being the node fit of its pod template."""
        ready, pending, running = pod_counts(found.pods)
        template = ((found.workload.get("spec") or {}).get("template") or {}).get("spec")
        firm = available(template, running)
        room = self._room(
            found.namespace, template, running, firm, found.replicas, found.workload, found.pods, nodes
        )
        return self._identity.observed(
            healthy=True,
            hpa=hpa,
            workload_found=True,
            current_replicas=found.replicas,
            ready_replicas=ready,
            pending_replicas=pending,
            scale_resource_version=found.scale_resource_version,
            **room,
        )

    def _room(
        self,
        namespace: str,
        template: Any,
        running: int,
        firm: int | None,
        replicas: int,
        workload: Mapping[str, Any],
        pods: Sequence[Mapping[str, Any]],
        nodes: Callable[[], Sequence[capacity.NodeInfo]],
    ) -> dict[str, Any]:
        """Firm and elastic room and why pods are not running (controller.kube.capacity_signals); the
        node fit alone (``firm``) stands when there is no pod template or the signals cannot be read."""
        if not isinstance(template, Mapping):
            return {"available_replicas": firm}
        try:
            return observe_capacity(
                self.signals,
                namespace=namespace,
                template=template,
                running=running,
                firm=firm,
                spec_replicas=replicas,
                workload_status=workload.get("status"),
                pods=pods,
                nodes=nodes,
                declared=self._identity.elastic_pods,
                provision_seconds=self._identity.provision_seconds,
            )
        except (ValueError, ClusterUnreachableError) as exc:  # a bad quantity, nodes not readable
            log.warning("Capacity signals unread", extra={"cluster": self.name, "error": str(exc)})
            return {"available_replicas": firm}

    def _snapshot_nodes(self) -> list[capacity.NodeInfo]:
        return self._capacity_snapshot().nodes

    def _scale_of(
        self, kind: ResolvedKind, wkind: WorkloadKind, namespace: str, name: str, workload: Mapping[str, Any]
    ) -> tuple[int, Any, str | None] | None:
        """(replicas, selector, the Scale's resourceVersion); None when the Scale is not there."""
        rv = (workload.get("metadata") or {}).get("resourceVersion")
        spec = workload.get("spec") or {}
        if wkind in SCALE_IN_OBJECT:
            return int(spec.get("replicas") or 0), spec.get("selector"), rv
        key = (wkind, namespace, name)
        memo = self._scales.get(key)
        if memo is None or memo[0] != rv:
            scale = self.client.find(kind.path(namespace, name, "scale"))
            memo = (rv, scale if isinstance(scale, dict) else None)
            self._scales[key] = memo
        scale = memo[1]
        if scale is None:
            return None
        selector = (scale.get("status") or {}).get("selector") or spec.get("selector")
        replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        return replicas, selector, (scale.get("metadata") or {}).get("resourceVersion")

    def _available_cached(
        self, cache: MemberCache, template: Mapping[str, Any] | None, running: int
    ) -> int | None:
        if not isinstance(template, Mapping):
            return None
        try:
            fit = cache.fit(template)
        except ValueError as exc:  # a quantity the cluster reports but we cannot read
            log.warning("Capacity unknown: bad quantity", extra={"cluster": self.name, "error": str(exc)})
            return None
        if fit is None:
            if not self._capacity_unknown_logged:  # once per member, not once per observation
                log.warning(
                    "Capacity unknown: nodes or pods not readable in every namespace (RBAC)",
                    extra={"cluster": self.name},
                )
                self._capacity_unknown_logged = True
            return None
        self._capacity_unknown_logged = False
        return running + fit

    def _observe_hpa_cached(
        self, fhpa: FederatedHPA, namespace: str, cache: MemberCache
    ) -> MemberHPAObservation | None:
        mine, foreign = cached_hpas(fhpa, namespace, cache)
        if foreign is not None:
            return hpa_observation(foreign, owned=False)
        return hpa_observation(mine, owned=owns(mine, fhpa)) if mine is not None else None

    def _observe_hpa(self, fhpa: FederatedHPA, namespace: str) -> MemberHPAObservation | None:
        """A foreign HPA on the workload is reported first (the conflict must show), then ours by name."""
        mine, foreign = self._hpas(fhpa, namespace)
        if foreign is not None:
            return hpa_observation(foreign, owned=False)
        if mine is not None:
            return hpa_observation(mine, owned=owns(mine, fhpa))
        return None

    def _hpas(
        self, fhpa: FederatedHPA, namespace: str
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(the HPA under our name, another HPA that targets the same workload and is not ours)."""
        items = self.client.get(self._hpa_path(namespace)).get("items", [])
        name = hpa_name(fhpa)
        mine = next((h for h in items if h["metadata"]["name"] == name), None)
        foreign = next(
            (
                h
                for h in items
                if h["metadata"]["name"] != name
                and targets(h, fhpa.spec.scale_target_ref)
                and not owns(h, fhpa)
            ),
            None,
        )
        return mine, foreign

    def _hpas_for_write(
        self, fhpa: FederatedHPA, namespace: str
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """``_hpas`` from the cache when it can answer (a write must not list every HPA of a namespace
        that holds a thousand: the write itself is conditional on the observed resourceVersion, so a
        cache a moment behind cannot make it overwrite a change), else from the API."""
        cache = self.cache
        if cache is not None:
            try:
                return cached_hpas(fhpa, namespace, cache)
            except ClusterUnreachableError:
                pass  # not synced (or failing): ask the API
        return self._hpas(fhpa, namespace)

    def _available(
        self, template: Mapping[str, Any] | None, running: int, own: Sequence[Mapping[str, Any]]
    ) -> int | None:
        """Replicas the cluster can hold; None (unknown) without a pod template or rights to list nodes.

        The cluster-wide pod list is a snapshot up to ``capacity_ttl_seconds`` old, while ``running``
        counts the workload's pods as just listed (``own``). So those pods stand in for their older
        selves in the snapshot: a pod bound since the snapshot would otherwise count twice, once
        running and once as room still free. Pods the snapshot has and the new list has not (gone
        since, or relabelled out of the selector) keep their room until the snapshot is renewed."""
        if not isinstance(template, Mapping):
            return None
        try:
            snap = self._capacity_snapshot()
        except AccessDeniedError as exc:
            log.warning(
                "Capacity unknown: nodes or pods not readable",
                extra={"cluster": self.name, "error": str(exc)},
            )
            return None
        listed = {_pod_key(p) for p in own}
        others = [p for p in snap.pods if _pod_key(p) not in listed]
        try:
            return capacity.available_replicas(snap.nodes, [*others, *own], template, running)
        except ValueError as exc:  # a quantity the cluster reports but we cannot read
            log.warning("Capacity unknown: bad quantity", extra={"cluster": self.name, "error": str(exc)})
            return None

    def _capacity_snapshot(self) -> _CapacitySnapshot:
        with self._lock:
            snap = self._capacity
            if snap is not None and self._monotonic() - snap.taken < self.capacity_ttl_seconds:
                return snap
        nodes = [capacity.node_info(n) for n in self.client.get("/api/v1/nodes").get("items", [])]
        pods = self.client.get("/api/v1/pods", fieldSelector="status.phase!=Succeeded,status.phase!=Failed")
        snap = _CapacitySnapshot(self._monotonic(), nodes, pods.get("items", []))
        with self._lock:
            self._capacity = snap
        return snap
