"""Firm room before elastic room, for the policies that rank or pack by room (DESIGN §3 Capacity).

A cluster's firm room runs a pod now; its elastic room runs one only after a node is bought and has
booted. Where a policy has no order of its own and ranks clusters by room (Aggregated, DynamicWeighted),
a fleet that counted both kinds alike would start pods on new cloud nodes while on-prem nodes sit idle.
So firm room is used first, everywhere in the fleet, and elastic room only for what firm room cannot
hold; the capacity cap still reads firm + elastic, so an elastic cluster at zero nodes is never capped
at 0.

Every function here takes a ``capacity`` per cluster (the room left to fill, None: unknown) as the
split's callers pass it, and divides it into its two kinds: elastic room is the last to be used, so of
a room of ``c`` the elastic part is min(c, elastic) and the rest is firm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.planning.divide import capped_divide, fill
from controller.planning.observation import ClusterObservation

Caps = dict[str, int | None]


def elastic_of(cluster: ClusterObservation) -> int:
    """The part of the cluster's available that would need nodes to come (0 without capacity signals)."""
    room, total = cluster.capacity, cluster.available_replicas
    if room is None or total is None:
        return 0
    return max(0, min(room.elastic, total))


def firm_of(cluster: ClusterObservation) -> int | None:
    """What the cluster holds without a node having to come (None: unknown, unlimited)."""
    total = cluster.available_replicas
    return None if total is None else max(0, total - elastic_of(cluster))


def room_kinds(
    clusters: Sequence[ClusterObservation], capacity: Mapping[str, int | None]
) -> tuple[Caps, Caps]:
    """``capacity`` split into its firm and elastic parts, per cluster."""
    firm: Caps = {}
    elastic: Caps = {}
    for c in clusters:
        cap = capacity.get(c.name)
        grow = 0 if cap is None else min(max(cap, 0), elastic_of(c))
        firm[c.name] = None if cap is None else max(cap, 0) - grow
        elastic[c.name] = grow
    return firm, elastic


def fill_firm_first(
    total: int,
    order: Sequence[str],
    grow_order: Sequence[str],
    clusters: Sequence[ClusterObservation],
    capacity: Mapping[str, int | None],
) -> tuple[dict[str, int], int]:
    """Walk ``order`` over the firm rooms, then ``grow_order`` over the elastic rooms: the shares and what
    is left.

    The two walks may differ: the order by firm room follows the nodes up right now, and those come and
    go with the pods. Once a peak is over, a cluster autoscaler removes idle nodes from each node group in
    turn, so the cluster with a node more changes with every node removed; a second walk in that order
    would hand the whole elastic remainder back and forth between the groups at a steady load (DESIGN
    §4 Promise 4: calm). The caller passes an order for the second walk that nodes coming and going do
    not turn around.
    """
    firm, elastic = room_kinds(clusters, capacity)
    shares, left = fill(total, order, firm)
    grown, left = fill(left, grow_order, elastic)
    return {n: shares[n] + grown[n] for n in order}, left


def divide_firm_first(
    total: int,
    clusters: Sequence[ClusterObservation],
    capacity: Mapping[str, int | None],
    unknown_weight: int,
) -> tuple[dict[str, int], int]:
    """Divide ``total`` by firm room, each share capped at it, then what firm room cannot hold by elastic
    room, capped likewise: the shares and the excess neither holds.

    The weights are the clusters' whole firm and elastic rooms (``unknown_weight`` for an unknown firm),
    the caps what ``capacity`` leaves of each; a fleet without elastic room divides exactly as by
    available.
    """
    firm_caps, elastic_caps = room_kinds(clusters, capacity)
    firm_weights = {c.name: unknown_weight if (f := firm_of(c)) is None else f for c in clusters}
    shares, left = _divide_where_room(total, firm_weights, firm_caps)
    grown, left = _divide_where_room(left, {c.name: elastic_of(c) for c in clusters}, elastic_caps)
    return {n: shares.get(n, 0) + grown.get(n, 0) for n in firm_caps}, left


def _divide_where_room(total: int, weights: Mapping[str, int], caps: Caps) -> tuple[dict[str, int], int]:
    """:func:`capped_divide` over the clusters with room of this kind only (all weights 0 there counts as
    equal, and a cluster without room must not take part in that)."""
    open_ = {n: w for n, w in weights.items() if caps.get(n) is None or (caps.get(n) or 0) > 0}
    if total <= 0 or not open_:
        return {}, total
    return capped_divide(total, open_, {n: caps.get(n) for n in open_})
