"""The working state of one planning pass over the clusters that hold (or may hold) a member HPA.

A pass starts from the bounds recorded in status, lets each step of DESIGN §4 adjust them, and ends
with :func:`normalize`, which restores the invariants every HPA must satisfy. Nothing here does I/O;
the state lives only for the duration of one ``plan()`` call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from controller.planning.assignment import Bounds, min_ceiling, raise_mins
from controller.planning.observation import ClusterObservation
from controller.planning.pending import counts_at_once
from controller.planning.plan import EventRecord
from controller.planning.policies import policy_of
from controller.planning.tolerance import tolerance_of
from fhpa_api.models import FederatedHPA, SplitStatus

SATURATED = "Saturated"
NODE_GROUP_SOURCES = frozenset({"cluster-autoscaler", "karpenter", "declared"})
"""Capacity sources whose nodes come and go with the pods (``CapacityObservation.source``)."""
FAILED_OVER = "FailedOver"


@dataclass
class Slot:
    """One candidate cluster during a pass: its observation and the bounds being decided for it."""

    cluster: ClusterObservation
    min_replicas: int
    max_replicas: int
    pin: int | None = None
    saturated: bool = False
    pending_since: datetime | None = None
    held: bool = False  # unhealthy within the grace period: keeps its bounds, receives nothing
    held_long: bool = False  # held past the flag's grace (a flapper's grown grace): its min not counted
    flapped: bool = False  # failed over within the hour: the cluster that stood in for it keeps serving
    returned: bool = False  # answers again after being held (within its grace): keeps what it runs
    held_since: datetime | None = None  # unhealthy since (a blip shorter than the tolerance moves nothing)
    replicas: int | None = None  # a replica write decided in this pass
    previous_current: int | None = None  # the replicas the last pass saw (status row)
    last_write: datetime | None = None  # when the controller last wrote this cluster's replicas
    trend: int = 0  # +1 / -1: which way this cluster's max moved last (status row), 0 unknown
    trend_since: datetime | None = None
    drained_at: datetime | None = None  # when a drain last lowered its max below what it ran
    assist_until: datetime | None = None  # its pin holds a burst assist's replicas until then
    take_back_until: datetime | None = None  # its pin holds a take-back until then (priority.take_back_up)
    woken_at: datetime | None = None  # when the controller last raised it from 0 (status row)
    idle_since: datetime | None = None  # its HPA has sat at its min wanting fewer since then
    replica_reason: str = ""
    split: SplitStatus | None = None  # what this pass's assignment split read and gave it (None: resumed)

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def current(self) -> int:
        return self.cluster.current_replicas if self.replicas is None else self.replicas

    @property
    def hpa_min(self) -> int:
        """The member HPA's minReplicas: the pin while one is active, else the assigned min."""
        if self.pin is None:
            return self.min_replicas
        return min(max(self.pin, self.min_replicas), self.max_replicas)

    @property
    def pays_per_node(self) -> bool:
        """Does the cluster grow and shrink its nodes with its pods (a node group, NodePools, a declared
        bound)? Then the pods it stops running take their nodes, and their cost, with them."""
        room = self.cluster.capacity
        # a node shape is read only off a node group; a quota that binds first hides the group's source
        shaped = room is not None and room.pods_per_node is not None
        return room is not None and (room.elastic > 0 or room.source in NODE_GROUP_SOURCES or shaped)

    @property
    def kept_pods(self) -> int:
        """The pods that the nodes its min keeps can hold: the member HPA's min, rounded up to whole
        nodes where the node shape is known. Those nodes stay whatever else leaves them (a min of 1 on
        10-pod nodes keeps a node), so pods on them cost nothing more; under scalingToZero they are
        the last pods to go, and the node with them."""
        keep = self.hpa_min
        per_node = self.cluster.capacity.pods_per_node if self.cluster.capacity is not None else None
        if per_node:
            keep = max(keep, -(-keep // per_node) * per_node)
        return keep

    @property
    def scheduled_cap(self) -> int:
        """Where a cluster that cannot schedule more is capped: what it holds, ready or still starting
        (current minus unschedulable, as the seed says; its ready replicas at least), never below 1."""
        scheduled = self.cluster.current_replicas - self.cluster.pending_replicas
        return max(self.cluster.ready_replicas, scheduled, 1)

    @property
    def bounds(self) -> Bounds:
        return Bounds(self.min_replicas, self.max_replicas)

    @property
    def can_receive(self) -> bool:
        """May this cluster be given more max or replicas? Never while unhealthy."""
        return not self.held and self.cluster.healthy

    @property
    def owned_hpa_desired(self) -> int | None:
        hpa = self.cluster.hpa
        return hpa.desired_replicas if hpa is not None and hpa.owned else None


@dataclass
class Fleet:
    fhpa: FederatedHPA
    now: datetime
    slots: dict[str, Slot]
    events: list[EventRecord] = field(default_factory=list)

    def ordered(self) -> list[Slot]:
        return [self.slots[n] for n in sorted(self.slots)]

    def event(self, reason: str, message: str, warning: bool = False) -> None:
        self.events.append(
            EventRecord(type="Warning" if warning else "Normal", reason=reason, message=message)
        )

    def pending_past_delay(self, slot: Slot) -> bool:
        """Unschedulable pods that have persisted for autoscaleMultiClusterDelay (DESIGN §4), or pods
        nothing in the cluster will place (controller.planning.pending), at once."""
        if slot.held or slot.cluster.pending_replicas <= 0 or slot.pending_since is None:
            return False
        if counts_at_once(slot.cluster):
            return True
        waited = (self.now - slot.pending_since).total_seconds()
        return waited >= self.fhpa.spec.effective_delay_seconds

    def wants_more(self, slot: Slot) -> bool:
        """The cluster's HPA is held at its max and wants more (ScalingLimited, reason TooManyReplicas),
        or its pods cannot be scheduled past the delay."""
        hpa = slot.cluster.hpa
        if hpa is not None and hpa.owned and hpa.wants_more_than_max:
            limited = hpa.condition("ScalingLimited")
            if limited is None or limited.reason in (None, "TooManyReplicas"):
                return True
        return self.pending_past_delay(slot)

    def presses_for_more(self, slot: Slot) -> bool:
        """The cluster runs its max and its load asks for more: its metrics above target where its HPA
        reports them (an HPA whose max was just lowered under it keeps a stale ScalingLimited and a
        desired of the old count), else the HPA's own word."""
        if slot.current < slot.max_replicas:
            return False
        hpa = slot.cluster.hpa
        if hpa is not None and hpa.owned and hpa.metric_ratio is not None:
            return tolerance_of(self.fhpa).asks_more(hpa.metric_ratio)
        return self.wants_more(slot)

    def write_replicas(self, slot: Slot, replicas: int, reason: str) -> None:
        """Decide a replica write; only the steps DESIGN names call this, and never for a sick cluster."""
        if not slot.can_receive or not slot.cluster.workload_found:
            return
        if replicas == slot.cluster.current_replicas:
            return
        slot.replicas = replicas
        slot.replica_reason = reason


def normalize(fleet: Fleet) -> None:
    """Restore 1 <= min <= max on every HPA (max 0: no HPA), no min above what its cluster can hold, and
    mins summing to at least F.min where the clusters can hold it.

    Where the policy does not divide the bounds (Duplicated) each min is its cluster's own floor, F.min
    whatever the room: pods beyond it pend in place, where a cluster autoscaler sees them (DESIGN §3
    Duplicated)."""
    uncapped = not policy_of(fleet.fhpa).divides_bounds
    for slot in fleet.slots.values():
        if slot.max_replicas <= 0:
            slot.min_replicas, slot.max_replicas, slot.pin = 0, 0, None
            continue
        ceiling = (
            slot.max_replicas
            if slot.held or uncapped
            else min_ceiling(slot.max_replicas, slot.cluster.available_replicas)
        )
        slot.min_replicas = min(max(slot.min_replicas, 1), ceiling)
        if slot.pin is not None and slot.pin <= slot.min_replicas:
            slot.pin = None
    # a cluster held past the flag's grace (its grace grew with its flaps) keeps its bounds, but the floor
    # may not wait that long: the reachable clusters' mins then cover F.min alone (DESIGN §4 promise 1)
    if uncapped:
        return
    held_mins = sum(s.min_replicas for s in fleet.slots.values() if s.held and not s.held_long)
    free = {n: s.bounds for n, s in fleet.slots.items() if not s.held}
    ceilings = {n: min_ceiling(s.max_replicas, s.cluster.available_replicas) for n, s in fleet.slots.items()}
    capacity = {n: s.cluster.available_replicas for n, s in fleet.slots.items() if not s.held}
    raised = raise_mins(free, fleet.fhpa.spec.effective_min - held_mins, ceilings, capacity)
    for name, bounds in raised.items():
        fleet.slots[name].min_replicas = bounds.min_replicas
