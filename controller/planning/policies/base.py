"""What every assignment policy answers, and the two shapes most of them share.

The planner's mechanics (the assignment, the optimizations, the spill, scaling to zero, metric shares)
and the words that explain them ask a policy the same few questions; each policy answers them in its
own module, so a new policy is one module plus its name in the API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from controller.planning.divide import capped_divide, divide, fill, greedy_fill
from controller.planning.firm_first import elastic_of, firm_of
from controller.planning.observation import ClusterObservation
from fhpa_api.models import ClusterAutoscalingPreference, FederatedHPA

Clusters = Sequence[ClusterObservation]
Capacity = Mapping[str, int | None]

UNKNOWN = "unknown"
"""What a :class:`PreferenceView` answers for a cluster whose preference cannot be resolved."""


class PreferenceView(Protocol):
    """The preferences as an explanation can resolve them from status alone (no cluster labels).

    Lazy on purpose: asking marks the explanation as having a gap when a preference selects by labels,
    so only a policy that reads preferences may ask.
    """

    def preference(self, name: str) -> ClusterAutoscalingPreference | str | None:
        """The cluster's preference entry, :data:`UNKNOWN` when it cannot be resolved, None when none."""
        ...

    def weights(self) -> dict[str, int] | None:
        """The static weights of the candidates, None when one cannot be resolved."""
        ...


class AssignmentPolicy(Protocol):
    """One assignment policy: how it shares F.min..F.max out and how the controller then moves it.

    ``divides_bounds``: F.min..F.max is divided among the clusters (False: each gets the whole, and
    nothing moves between clusters after the assignment). ``tiered``: clusters are filled one tier at a
    time in preference order, so a full cluster spills down the order, scale-down drains from the
    bottom under pins and clusters at 0 wake one at a time; otherwise the trigger optimization caps a
    full cluster and hands its max to the others by the split. ``reads_capacity``: the split depends
    on the clusters' available replicas (an explanation from status alone cannot show it).
    ``shares_capped_by_room``: metric shares are capped by what each holder can run. ``zero_wake_note``:
    which cluster at 0 wakes first, as the explanation says it ("" when no order applies).
    ``elastic_first``: when the load falls, the policy's clusters of fixed room are pinned while those
    on node groups shed, so whole nodes go first (DESIGN §3 Capacity; a tiered policy pins by its tiers).
    """

    name: str
    divides_bounds: bool
    tiered: bool
    reads_capacity: bool
    shares_capped_by_room: bool
    zero_wake_note: str
    elastic_first: bool

    def preference_order(self, fhpa: FederatedHPA, clusters: Clusters) -> list[str]:
        """Cluster names, most preferred first, by the policy's own measure; ties to the current holder
        (:func:`holding`), then by name."""
        ...

    def split(self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity) -> dict[str, int]:
        """Share ``total`` among (non-empty) ``clusters``, each bounded by ``capacity`` where it fills."""
        ...

    def capped_split(
        self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity
    ) -> tuple[dict[str, int], int]:
        """Share ``total`` among (non-empty) ``clusters`` with no share above its ``capacity`` (None:
        no cap); also return the excess, what none of them has room for."""
        ...

    def least_preferred(self, fhpa: FederatedHPA, clusters: Clusters) -> str:
        """The (non-empty) ``clusters``' first to go to zero."""
        ...

    def share_weight(self, fhpa: FederatedHPA, cluster: ClusterObservation, runs: int) -> int:
        """The weight of a cluster's metric share, given the replicas it runs (more than 0)."""
        ...

    def explain_split(
        self, fhpa: FederatedHPA, view: PreferenceView, cluster: str, assigned_max: int | None
    ) -> list[str]:
        """The split for one cluster (its assigned max: ``assigned_max``), in numbers where the spec
        and status allow."""
        ...

    def split_max_from_spec(self, fhpa: FederatedHPA, view: PreferenceView, cluster: str) -> int | None:
        """The max the split gave ``cluster``, when the spec alone decides it; None otherwise."""
        ...


def holding(cluster: ClusterObservation) -> tuple[int, int]:
    """A sort key that puts the current holder first among clusters the policy ranks alike: the max its
    member HPA holds, then the replicas it runs, most first. Read from what the cluster shows (not
    from history), so a restarted controller breaks the tie the same way; before the first assignment
    nothing is held and the names decide. Keeping the holder is what makes a failover or a rejoin move
    only what it must, instead of refilling the first cluster by name."""
    hpa = cluster.hpa
    held = hpa.max_replicas if hpa is not None and hpa.owned else 0
    return (-held, -cluster.current_replicas)


def dynamic_weight(fhpa: FederatedHPA, cluster: ClusterObservation) -> int:
    """A weight by available replicas; unknown counts as room for all of F.max."""
    return cluster.available_or(fhpa.spec.max_replicas)


def by_room(clusters: Clusters) -> list[str]:
    """Cluster names by room, most first: firm room ranks before elastic room (a cluster that holds pods
    now before one that must grow nodes for them), then elastic room; unknown (unlimited) before any
    number; ties to the current holder (:func:`holding`), then by name."""

    def room(c: ClusterObservation) -> tuple[int, int, int, int, int, str]:
        firm = firm_of(c)
        if firm is None:
            return (0, 0, 0, *holding(c), c.name)
        return (1, -firm, -elastic_of(c), *holding(c), c.name)

    return [c.name for c in sorted(clusters, key=room)]


def holders_of_their_room_first(clusters: Clusters) -> list[str]:
    """Cluster names for a walk over elastic rooms: first the clusters whose member HPA already holds a
    max of all their room (firm + elastic), then the others by room (:func:`by_room`).

    The order by room ranks firm room first, and on an elastic cluster firm room is the nodes up now:
    once a peak is over the cluster autoscaler removes idle nodes from each node group in turn, so the
    cluster with a node more changes with every node removed. A walk over the elastic rooms in that
    order would hand the room still to come back and forth between node groups at a steady load
    (DESIGN §4 Promise 4: calm). A cluster that was given all of its room keeps it, as the excess stays
    where it is; the order is read from the member HPAs, so a restarted controller walks the same way."""
    order = by_room(clusters)
    full = {c.name for c in clusters if _holds_all_its_room(c)}
    return [n for n in order if n in full] + [n for n in order if n not in full]


def _holds_all_its_room(cluster: ClusterObservation) -> bool:
    hpa, room = cluster.hpa, cluster.available_replicas
    return hpa is not None and hpa.owned and room is not None and hpa.max_replicas >= room > 0


class Shared:
    """What most policies answer alike: a metric share weighed by room, the split explained in one
    fixed sentence (``split_words``), no split an explanation can compute from the spec alone."""

    split_words = ""
    elastic_first = False

    def share_weight(self, fhpa: FederatedHPA, cluster: ClusterObservation, runs: int) -> int:
        return dynamic_weight(fhpa, cluster)

    def explain_split(
        self, fhpa: FederatedHPA, view: PreferenceView, cluster: str, assigned_max: int | None
    ) -> list[str]:
        return [self.split_words]

    def split_max_from_spec(self, fhpa: FederatedHPA, view: PreferenceView, cluster: str) -> int | None:
        return None


class ByWeight(Shared):
    """A policy that divides by a weight per cluster: the heaviest is the most preferred, the lightest
    goes to zero first. Subclasses give the weight."""

    divides_bounds = True
    tiered = False
    shares_capped_by_room = True
    zero_wake_note = ""

    def weight(self, fhpa: FederatedHPA, cluster: ClusterObservation) -> int:
        raise NotImplementedError

    def preference_order(self, fhpa: FederatedHPA, clusters: Clusters) -> list[str]:
        keys = {c.name: (-self.weight(fhpa, c), *holding(c), c.name) for c in clusters}
        return sorted(keys, key=keys.__getitem__)

    def split(self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity) -> dict[str, int]:
        weights = {c.name: self.weight(fhpa, c) for c in clusters}
        return divide(total, weights, self.preference_order(fhpa, clusters))

    def capped_split(
        self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity
    ) -> tuple[dict[str, int], int]:
        """The same division, each share cut to its room and the cut divided again by weight."""
        weights = {c.name: self.weight(fhpa, c) for c in clusters}
        return capped_divide(total, weights, capacity, self.preference_order(fhpa, clusters))

    def least_preferred(self, fhpa: FederatedHPA, clusters: Clusters) -> str:
        return self.preference_order(fhpa, clusters)[-1]


class InOrder(Shared):
    """A policy that fills clusters in its preference order, each up to its capacity (None: unlimited),
    and gives what nobody holds to the most preferred. Subclasses give the order."""

    divides_bounds = True
    reads_capacity = True

    def preference_order(self, fhpa: FederatedHPA, clusters: Clusters) -> list[str]:
        raise NotImplementedError

    def split(self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity) -> dict[str, int]:
        return greedy_fill(total, self.preference_order(fhpa, clusters), capacity)

    def capped_split(
        self, fhpa: FederatedHPA, total: int, clusters: Clusters, capacity: Capacity
    ) -> tuple[dict[str, int], int]:
        """The same walk: it never passes a room, so only the remainder is left over."""
        return fill(total, self.preference_order(fhpa, clusters), capacity)
