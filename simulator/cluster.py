"""A simulated member cluster: pods with a capacity and a start-up delay, its native HPA, its outages.

It implements the ``controller.ports.MemberCluster`` port, so the controller drives it exactly as it
drives a real cluster. The workload is the one the FederatedHPA targets; the cluster runs nothing else,
so its capacity is counted in pods of that workload.

Pod life cycle, as the kube scheduler and kubelet would play it: a new pod is scheduled at once when the
cluster has room and becomes Ready ``pod_startup_s`` later; beyond the capacity it stays Pending
(unschedulable) until room frees up. A scale-down removes Pending pods first, then starting ones
(youngest first), then Ready ones, as a ReplicaSet does. The room may change over time
(``capacity_at``, set by the single-hpa baseline of ``--compare``; capacity changes by hand): pods beyond
a smaller room go back to Pending and start again when room returns.

Room as real clusters have it (``Room``): the capacity may be whole nodes of a node group that grows when
pods pend (``simulator.nodes``); a namespace quota refuses the replicas beyond it, which then are never
created (neither Pending nor starting); and ``observe`` shows the controller firm and elastic room, and
which pending pods wait for a node on its way or for none.

Outage: the whole cluster is down (API server, ingress and controller-manager). The controller gets
ClusterUnreachableError, the cluster serves no traffic, its HPA does not sync. Its pods are not lost:
they keep running (starting pods finish starting) and serve again the moment the outage ends, when the
controller-manager comes back with empty HPA histories (they lived only in its memory).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from controller.errors import ClusterUnreachableError, NotFoundError, NotOwnedError
from controller.planning.member_hpa import (
    ANNOTATION_DECISION,
    ANNOTATION_DIGEST,
    LABEL_OWNER_UID,
    hpa_name,
    owner_labels,
    spec_digest,
)
from controller.planning.metric_ratio import metric_ratio
from controller.planning.observation import (
    CapacityObservation,
    ClusterObservation,
    MemberHPAObservation,
    Taint,
)
from controller.planning.plan import ReplicaWrite
from controller.planning.wording import count
from controller.ports import Clock, ClusterIdentity, MemberWrite
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA
from simulator.native_hpa import NativeHPA, SyncResult, current_metrics, spec_metrics
from simulator.nodes import NodeGroup, NodeGroupSpec
from simulator.replica_calculator import PodReadings

CPU_REQUEST_MILLI = 1000
"""Every simulated pod requests one CPU: at podCapacity rps it runs at 100% of its request."""


@dataclass(frozen=True)
class Room:
    """What bounds a cluster's room besides a fixed capacity, and what the room costs.

    ``node_group``: the capacity is whole nodes of a cluster-autoscaler group (None: fixed capacity).
    ``quota_pods``: the namespace's ResourceQuota on pods (None: no quota). ``capacity_changes``: nodes
    lost or added by hand, as (instant, new capacity). Costs are per pod-hour: running pods on fixed room
    cost ``cost_per_pod_hour``; a node of the group costs ``pods_per_node x node_cost_per_pod_hour``
    every hour it exists, used or not.
    """

    node_group: NodeGroupSpec | None = None
    quota_pods: int | None = None
    capacity_changes: tuple[tuple[datetime, int], ...] = ()
    cost_per_pod_hour: float = 1.0
    node_cost_per_pod_hour: float = 1.0


@dataclass
class _StartingBatch:
    ready_at: datetime
    count: int


@dataclass
class Pods:
    """The workload's pods in one cluster, as counts (a day of 10 clusters must simulate in seconds)."""

    capacity: int
    startup: timedelta
    ready: int = 0
    pending: int = 0
    starting: list[_StartingBatch] = field(default_factory=list)

    @property
    def starting_count(self) -> int:
        return sum(b.count for b in self.starting)

    @property
    def scheduled(self) -> int:
        return self.ready + self.starting_count

    @property
    def total(self) -> int:
        return self.scheduled + self.pending

    def advance(self, now: datetime) -> None:
        """Starting pods whose start-up delay ran out become Ready; Pending pods take freed room."""
        keep = []
        for batch in self.starting:
            if batch.ready_at <= now:
                self.ready += batch.count
            else:
                keep.append(batch)
        self.starting = keep
        self._schedule(now)

    def scale_to(self, replicas: int, now: datetime) -> None:
        if replicas > self.total:
            self.pending += replicas - self.total
        else:
            self._remove(self.total - replicas)
        self._schedule(now)

    def set_capacity(self, capacity: int, now: datetime) -> None:
        """The cluster's room changes: pods beyond it go back to Pending (starting ones first, youngest
        first, then Ready ones) and wait for room; freed room takes Pending pods, which start again."""
        self.capacity = capacity
        evicted = max(0, self.scheduled - capacity)
        if evicted:
            pending, self.pending = self.pending, 0
            self._remove(evicted)
            self.pending = pending + evicted
        self._schedule(now)

    def _schedule(self, now: datetime) -> None:
        room = max(0, self.capacity - self.scheduled)
        placed = min(room, self.pending)
        if placed:
            self.pending -= placed
            self.starting.append(_StartingBatch(now + self.startup, placed))

    def _remove(self, count: int) -> None:
        taken = min(count, self.pending)
        self.pending -= taken
        count -= taken
        while count and self.starting:
            youngest = max(range(len(self.starting)), key=lambda i: self.starting[i].ready_at)
            batch = self.starting[youngest]
            taken = min(count, batch.count)
            batch.count -= taken
            count -= taken
            if batch.count == 0:
                self.starting.pop(youngest)
        self.ready -= min(count, self.ready)


class SimulatedCluster:
    """One member cluster behind the MemberCluster port, plus the simulator's hooks to drive it."""

    def __init__(
        self,
        identity: ClusterIdentity,
        clock: Clock,
        capacity: int,
        pod_startup_s: float,
        workload: CrossVersionObjectReference | None,
        namespace: str = "default",
        replicas: int = 0,
        room: Room | None = None,
    ) -> None:
        self._identity = identity
        self._clock = clock
        self.namespace = namespace
        self.workload = workload  # None: the workload is not propagated to this cluster
        self.room = room or Room()
        self.nodes: NodeGroup | None = None
        if self.room.node_group is not None:  # ``capacity`` is the starting nodes' room
            self.nodes = NodeGroup(self.room.node_group, capacity // self.room.node_group.pods_per_node)
            self.fixed_room = 0
        else:
            self.fixed_room = capacity
        self.refused = 0  # replicas the namespace quota refused: never created
        self._capacity_changes = sorted(self.room.capacity_changes)
        self.pods = Pods(capacity=capacity, startup=timedelta(seconds=pod_startup_s))
        self.replicas = 0  # the workload's spec.replicas
        self.hpas: dict[str, NativeHPA] = {}
        self.down = False
        self.api_writes = 0
        self.raises_while_down = 0  # attempts to give replicas to this cluster while it was down
        self.missed_propagation: int | None = None  # a template replica count to apply when back
        self.capacity_at: Callable[[datetime], int] | None = None  # room that changes over time
        if replicas:
            self._set_replicas(replicas)
            self.warm_start(clock.now())

    # --- MemberCluster port -----------------------------------------------------------------------

    @property
    def identity(self) -> ClusterIdentity:
        return self._identity

    def probe(self) -> bool:
        return not self.down

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        self._reachable()
        ident = self._identity
        found = self._targets(fhpa.spec.scale_target_ref)
        capacity = self.capacity_observation()
        pending = self.pods.pending if found else 0
        coming = self.nodes.coming_for(pending) if self.nodes is not None else 0
        return ident.observed(
            healthy=True,
            workload_found=found,
            current_replicas=self.replicas if found else 0,
            ready_replicas=self.pods.ready if found else 0,
            pending_replicas=pending,
            available_replicas=(capacity.firm or 0) + capacity.elastic,
            capacity=capacity,
            pending_coming_replicas=coming,
            pending_coming_since=self.nodes.coming_since if coming and self.nodes is not None else None,
            pending_stuck_replicas=pending - coming if self.nodes is not None and self.nodes.at_max else 0,
            refused_replicas=self.refused if found else 0,
            hpa=self._hpa_observation(fhpa),
        )

    def capacity_observation(self) -> CapacityObservation:
        """The room as a real member shows it: firm (the nodes there now), elastic (the nodes the group
        can still add), both capped by the quota, and why the cluster is full or growing, in words."""
        quota = self.room.quota_pods
        firm = self.capacity if quota is None else min(self.capacity, quota)
        elastic = self.nodes.room_to_grow if self.nodes is not None else 0
        if quota is not None:
            elastic = min(elastic, max(0, quota - firm))
        source = "cluster-autoscaler" if self.nodes is not None else "allocatable"
        if quota is not None and quota <= self.capacity + (self.nodes.room_to_grow if self.nodes else 0):
            source = "quota"
        nodes = self.nodes
        return CapacityObservation(
            firm=firm,
            elastic=elastic,
            source=source,
            detail=self._room_detail(),
            provision_seconds=nodes.spec.provision_s if nodes is not None else None,
            pods_per_node=nodes.spec.pods_per_node if nodes is not None else None,
            standing_pods=nodes.spec.min_nodes * nodes.spec.pods_per_node if nodes is not None else 0,
        )

    def _room_detail(self) -> str | None:
        """Why the cluster is full or growing, as ``fhpa explain`` words it."""
        quota = self.room.quota_pods
        if quota is not None and (self.refused or self.pods.total >= quota):
            return f"quota {quota} pods, {self.pods.total} used"
        nodes = self.nodes
        if nodes is None or not self.pods.pending:
            return None
        if nodes.coming:
            since = nodes.coming_since
            ago = (self._clock.now() - since).total_seconds() if since is not None else 0.0
            return f"{count(nodes.coming_nodes, 'node')} coming, TriggeredScaleUp {ago:.0f} s ago"
        if nodes.at_max:
            return f"node group at max {nodes.spec.max_nodes} (NotTriggerScaleUp)"
        return None

    @property
    def ceiling(self) -> int:
        """The most pods this cluster can ever hold: fixed room plus the group at its max, within quota."""
        top = self.fixed_room + (
            self.nodes.spec.max_nodes * self.nodes.spec.pods_per_node if self.nodes else 0
        )
        return top if self.room.quota_pods is None else min(top, self.room.quota_pods)

    def write(self, fhpa: FederatedHPA, action: MemberWrite) -> None:
        # the simulator observes no resourceVersions (one writer, no concurrency): ``observed`` is None
        if isinstance(action, ReplicaWrite):
            self._scale(fhpa.metadata.namespace or "default", fhpa.spec.scale_target_ref, action.replicas)
        elif action.op == "delete":
            self._delete_hpa(fhpa)
        else:
            self._apply_hpa(fhpa, action.spec or {}, action.decision)

    def _apply_hpa(self, fhpa: FederatedHPA, spec: dict[str, object], decision: str | None) -> None:
        name = hpa_name(fhpa)
        existing = self.hpas.get(name)
        if self.down:
            old_max = existing.max_replicas if existing else 0
            if int(spec.get("maxReplicas", 0)) > old_max:  # type: ignore[call-overload]
                self.raises_while_down += 1
        self._reachable()
        if existing is not None and existing.labels.get(LABEL_OWNER_UID) != (fhpa.metadata.uid or ""):
            raise NotOwnedError(
                f"cluster {self.name}: HPA {name} exists and is not owned by this FederatedHPA"
            )
        labels = owner_labels(fhpa)
        annotations = {ANNOTATION_DIGEST: spec_digest(dict(spec))}  # as the kube adapter stamps it
        if decision is not None:
            annotations[ANNOTATION_DECISION] = decision
        body: dict[str, Any] = dict(spec)
        if existing is None:
            self.hpas[name] = NativeHPA(name, body, labels, annotations)
        else:
            existing.set_spec(body)
            existing.labels, existing.annotations = labels, annotations
        self.api_writes += 1

    def _delete_hpa(self, fhpa: FederatedHPA) -> None:
        self._reachable()
        name = hpa_name(fhpa)
        existing = self.hpas.get(name)
        if existing is None:
            return
        if existing.labels.get(LABEL_OWNER_UID) != (fhpa.metadata.uid or ""):
            raise NotOwnedError(f"cluster {self.name}: HPA {name} is not owned by this FederatedHPA")
        del self.hpas[name]
        self.api_writes += 1

    def _scale(self, namespace: str, target: CrossVersionObjectReference, replicas: int) -> None:
        if self.down and replicas > self.replicas:
            self.raises_while_down += 1
        self._reachable()
        if namespace != self.namespace or not self._targets(target):
            raise NotFoundError(f"cluster {self.name}: {target.kind} {namespace}/{target.name} not found")
        self._set_replicas(replicas)
        self.api_writes += 1

    # --- the simulator's side ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._identity.name

    def relabel(self, labels: dict[str, str]) -> None:
        """The cluster's labels as the registry now knows them (the user relabelled its Cluster object)."""
        self._identity = self._identity.model_copy(update={"labels": dict(labels)})

    def add_foreign_hpa(self, name: str, spec: dict[str, Any]) -> None:
        """An HPA the user created by hand: the controller must leave it alone (ConflictingHPA)."""
        self.hpas[name] = NativeHPA(name, spec, labels={"owner": "someone-else"})

    def set_down(self, down: bool) -> None:
        if self.down and not down:
            for hpa in self.hpas.values():
                hpa.forget_history()  # the controller-manager restarted
            if self.missed_propagation is not None:
                self._set_replicas(self.missed_propagation)
                self.missed_propagation = None
        self.down = down

    def propagate_replicas(self, replicas: int) -> None:
        """The workload template's replicas reached this cluster (Duplicated propagation)."""
        if self.workload is None:
            return
        if self.down:
            self.missed_propagation = replicas
            return
        self._set_replicas(replicas)

    def warm_start(self, now: datetime) -> None:
        """At t=0 the pods that fit were already running: they are Ready, not starting."""
        if self.capacity_at is not None:
            self.fixed_room = self.capacity_at(now)
        self.pods.set_capacity(self.capacity, now)
        self.pods.ready += self.pods.starting_count
        self.pods.starting = []

    def advance(self, now: datetime) -> None:
        """The cluster moves to ``now``: capacity changes by hand, nodes arriving, pods starting and
        scheduling, then the node autoscaler's pass (grow for what pends, remove idle nodes)."""
        while self._capacity_changes and self._capacity_changes[0][0] <= now:
            self.set_room(self._capacity_changes.pop(0)[1])
        if self.capacity_at is not None:
            self.fixed_room = self.capacity_at(now)
        if self.nodes is not None:
            self.nodes.arrive(now)
        self.pods.set_capacity(self.capacity, now)
        self.pods.advance(now)
        if self.nodes is not None:
            self.nodes.scale_up(self.pods.pending, now)
            self.nodes.scale_down(max(0, self.pods.scheduled - self.fixed_room), now)
            self.pods.set_capacity(self.capacity, now)

    @property
    def capacity(self) -> int:
        """Pods of the workload the cluster's nodes hold now (not counting nodes on their way)."""
        return self.fixed_room + (self.nodes.capacity if self.nodes is not None else 0)

    @property
    def cost_per_hour(self) -> float:
        """What the cluster costs now: its running pods on fixed room, and every node of its group."""
        room = self.room
        on_fixed = min(self.pods.scheduled, self.fixed_room) * room.cost_per_pod_hour
        if self.nodes is None:
            return on_fixed
        return on_fixed + self.nodes.capacity * room.node_cost_per_pod_hour

    def set_room(self, capacity: int) -> None:
        """Nodes lost or added by hand: the room becomes ``capacity`` (whole nodes in a node group)."""
        if self.nodes is not None:
            self.nodes.set_nodes(capacity // self.nodes.spec.pods_per_node)
        else:
            self.fixed_room = capacity

    def readings(self, usage_per_pod_milli: int) -> PodReadings:
        """What metrics-server and the pod lister show: unready = Pending + still starting."""
        pods = self.pods
        return PodReadings(
            ready=pods.ready,
            unready=pods.pending + pods.starting_count,
            usage_total=pods.ready * usage_per_pod_milli,
            request_per_pod=CPU_REQUEST_MILLI,
        )

    def sync_hpas(
        self, now: datetime, usage_per_pod_milli: int, external: Mapping[str, float] | None = None
    ) -> list[SyncResult]:
        """One 15 s pass of the cluster's HPA controller over every HPA targeting the workload.
        ``external``: the External metrics' values by name (the whole fleet's, read alike everywhere)."""
        if self.down or self.workload is None:
            return []
        targeting = [h for h in self.hpas.values() if self._spec_targets(h.spec)]
        if len(targeting) > 1:  # AmbiguousSelector: two HPAs on one target both stand still
            for hpa in targeting:
                hpa.mark_ambiguous(now)
            return []
        results = []
        for hpa in targeting:
            result = hpa.sync(now, self.replicas, self.readings(usage_per_pod_milli), external)
            if result.rescaled:
                self._set_replicas(result.replicas)
            results.append(result)
        return results

    # --- helpers ----------------------------------------------------------------------------------

    def _set_replicas(self, replicas: int) -> None:
        if replicas < 0:
            raise ValueError(f"cluster {self.name}: replicas must be >= 0, got {replicas}")
        self.replicas = replicas
        quota = self.room.quota_pods
        created = replicas if quota is None else min(replicas, quota)
        self.refused = replicas - created  # FailedCreate: exceeded quota; neither pending nor starting
        self.pods.scale_to(created, self._clock.now())

    def _reachable(self) -> None:
        if self.down:
            raise ClusterUnreachableError(self.name, "connection timed out (simulated outage)")

    def _targets(self, target: CrossVersionObjectReference) -> bool:
        return self.workload is not None and (self.workload.kind, self.workload.name) == (
            target.kind,
            target.name,
        )

    def _spec_targets(self, spec: dict[str, Any]) -> bool:
        ref = spec.get("scaleTargetRef") or {}
        return self.workload is not None and (ref.get("kind"), ref.get("name")) == (
            self.workload.kind,
            self.workload.name,
        )

    def _hpa_observation(self, fhpa: FederatedHPA) -> MemberHPAObservation | None:
        """The member HPA that targets the workload: ours by name, or someone else's on the same target."""
        ours = self.hpas.get(hpa_name(fhpa))
        candidates = [ours] if ours is not None else []
        candidates += [h for h in self.hpas.values() if h is not ours and self._spec_targets(h.spec)]
        if not candidates:
            return None
        hpa = candidates[0]
        return MemberHPAObservation(
            name=hpa.name,
            owned=hpa.labels.get(LABEL_OWNER_UID) == (fhpa.metadata.uid or "") and hpa is ours,
            min_replicas=hpa.min_replicas,
            max_replicas=hpa.max_replicas,
            current_replicas=hpa.status.current_replicas,
            desired_replicas=hpa.status.desired_replicas,
            template_digest=hpa.annotations.get(ANNOTATION_DIGEST),
            decision=hpa.annotations.get(ANNOTATION_DECISION),
            conditions=hpa.status.condition_list(),
            metric_ratio=metric_ratio(spec_metrics(hpa), current_metrics(hpa.status)),
            last_scale_time=hpa.status.last_scale_time,
        )


def taints_from(raw: list[dict[str, str]] | None) -> list[Taint]:
    return [Taint.model_validate(t) for t in raw or []]
