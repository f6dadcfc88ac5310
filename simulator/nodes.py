"""A cloud node group as the cluster autoscaler runs it: whole nodes that come when pods pend and go when
they stay empty.

Counted in pods of the workload (``pods_per_node`` per node), like the rest of the simulator. The rules,
as cluster-autoscaler plays them with its default flags:
- pods that cannot be scheduled make the group grow by the whole nodes they need, up to ``max_nodes``;
  the new nodes are Ready ``provision_s`` later (their pods are ``TriggeredScaleUp`` meanwhile). Pods
  beyond what the group can ever hold are ``NotTriggerScaleUp`` and stay Pending;
- a node that stays empty for ``idle_s`` is removed, down to ``min_nodes``. Pods are packed on as few
  nodes as they fit on, so the empty nodes are the ones beyond ``ceil(scheduled / pods_per_node)``;
- nodes may also be lost or added by hand (``set_nodes``: a drain, a spot interruption, an operator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass(frozen=True)
class NodeGroupSpec:
    pods_per_node: int
    min_nodes: int
    max_nodes: int
    provision_s: float
    idle_s: float


@dataclass
class _Coming:
    triggered_at: datetime
    ready_at: datetime
    count: int


@dataclass
class NodeGroup:
    """The nodes of one group now, those on their way, and since when the empty ones have been empty."""

    spec: NodeGroupSpec
    nodes: int
    coming: list[_Coming] = field(default_factory=list)
    empty_since: list[datetime] = field(default_factory=list)  # one per empty node, oldest first

    @property
    def capacity(self) -> int:
        return self.nodes * self.spec.pods_per_node

    @property
    def coming_nodes(self) -> int:
        return sum(c.count for c in self.coming)

    @property
    def coming_since(self) -> datetime | None:
        """When the oldest scale-up still on its way was triggered."""
        return min((c.triggered_at for c in self.coming), default=None)

    @property
    def room_to_grow(self) -> int:
        """Pods the group can still add, nodes on their way included (the elastic room)."""
        return max(0, self.spec.max_nodes - self.nodes) * self.spec.pods_per_node

    @property
    def at_max(self) -> bool:
        return self.nodes + self.coming_nodes >= self.spec.max_nodes

    def arrive(self, now: datetime) -> None:
        """Nodes whose provisioning time ran out join the group."""
        keep = []
        for batch in self.coming:
            if batch.ready_at <= now:  # the group's max holds whatever joined meanwhile by hand
                self.nodes = max(self.nodes, min(self.nodes + batch.count, self.spec.max_nodes))
            else:
                keep.append(batch)
        self.coming = keep

    def scale_up(self, pending: int, now: datetime) -> None:
        """Whole nodes for the pods that pend and are not already waiting for a node, up to the max."""
        needed = math.ceil(pending / self.spec.pods_per_node) - self.coming_nodes
        added = min(needed, self.spec.max_nodes - self.nodes - self.coming_nodes)
        if added > 0:
            ready_at = now + timedelta(seconds=self.spec.provision_s)
            self.coming.append(_Coming(now, ready_at, added))

    def coming_for(self, pending: int) -> int:
        """Of ``pending`` pods, those a node on its way will hold (TriggeredScaleUp)."""
        return min(pending, self.coming_nodes * self.spec.pods_per_node)

    def scale_down(self, scheduled: int, now: datetime) -> None:
        """Remove the nodes that have been empty for ``idle_s``, down to ``min_nodes``."""
        empty = max(0, self.nodes - math.ceil(scheduled / self.spec.pods_per_node))
        if self.coming:
            empty = 0  # the autoscaler does not remove nodes while a scale-up is on its way
        del self.empty_since[empty:]  # the most recently emptied nodes were filled first
        self.empty_since += [now] * (empty - len(self.empty_since))
        idle = sum(1 for since in self.empty_since if (now - since).total_seconds() >= self.spec.idle_s)
        removed = min(idle, self.nodes - self.spec.min_nodes)
        if removed > 0:
            self.nodes -= removed
            del self.empty_since[:removed]

    def set_nodes(self, nodes: int) -> None:
        """Nodes lost or added by hand; the empty-node clocks start again. Nodes on their way beyond
        the group's max less those now there are not coming any more (the provider's group never
        exceeds its max size)."""
        self.nodes = nodes
        self.empty_since = []
        room = max(0, self.spec.max_nodes - nodes)
        kept: list[_Coming] = []
        for batch in self.coming:
            count = min(batch.count, room)
            room -= count
            if count > 0:
                kept.append(_Coming(batch.triggered_at, batch.ready_at, count))
        self.coming = kept
