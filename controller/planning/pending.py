"""Which of a cluster's pods count as pending for the rules that move load away (DESIGN §3 capacity).

A pod the node autoscaler is adding a node for (``TriggeredScaleUp``) is coming, not a reason to spill:
moving load away would race the node that is on its way. It counts only once it has pended longer than
a node takes to come (the cluster's provision time, else the planner's flag, else 10 minutes), and
then at once: it has already waited longer than any delay would have. A pod no node group can fit
(``NotTriggerScaleUp``) and a pod the namespace's quota refused count at once: nothing in the cluster
will make room for them, so waiting ``autoscaleMultiClusterDelay`` would only hold the load back.

A pod the autoscaler has not spoken of yet, in a cluster that can still grow nodes, waits as a
coming one does: the autoscaler's next look will most likely say a node comes for it.

Refused pods were never created, so they are not among the unschedulable pods the adapter counts; they
join them here, which is what lets a quota-bound cluster spill while nothing in it is Pending.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from controller.planning.observation import ClusterObservation

DEFAULT_PROVISION_SECONDS = 600.0


SHORTEST_PROVISION_SECONDS = 30.0
"""No node joins sooner than the node autoscaler's next look (the cluster autoscaler scans every 10 s)
and the pass after it that sees the node: a cluster that shows less is read as this."""


def provision_seconds(cluster: ClusterObservation, flag: float | None) -> float:
    """How long a new node may take here: the flag when an operator set it, else what the cluster
    shows (at least :data:`SHORTEST_PROVISION_SECONDS`), else 10 minutes.

    Read as shown, a node group that claims nodes in 0 s counted the pods of a burst assist as stuck
    the pass after they were started, before the autoscaler had looked at them: the cluster was marked
    full, its max cut to 2 and handed to a quota-bound cluster, and the next pass moved it back (a
    user-level review's fleet, podsPerNode 1). The operator's flag is taken as set: 0 there means "do
    not wait for nodes"."""
    if flag is not None:
        return flag
    shown = cluster.capacity.provision_seconds if cluster.capacity is not None else None
    return DEFAULT_PROVISION_SECONDS if shown is None else max(shown, SHORTEST_PROVISION_SECONDS)


def unheard(cluster: ClusterObservation) -> int:
    """Pods that pend in a cluster that can still grow nodes, and of which its node autoscaler has not
    said yet whether a node comes for them.

    The autoscaler looks at unschedulable pods on its own period (the cluster autoscaler every 10
    seconds), so a pod that began to pend moments ago has no Event yet: it is as likely coming as any
    pod that has one, and moving load away would race that node just the same."""
    room = cluster.capacity
    if room is None or room.elastic <= 0:
        return 0
    spoken = cluster.pending_coming_replicas + cluster.pending_stuck_replicas
    return max(0, cluster.pending_replicas - spoken)


def as_counted(
    cluster: ClusterObservation,
    now: datetime,
    flag: float | None,
    delay_seconds: float,
    pending_since: datetime | None = None,
) -> ClusterObservation:
    """The observation as the spill rules read it: ``pending_replicas`` holds the pods that count
    (coming ones only once overdue, refused ones always) and ``pending_stuck_replicas`` those that
    count at once (no node group fits, overdue coming, refused). Pods the node autoscaler has not
    spoken of yet (:func:`unheard`) wait as coming ones do, from ``pending_since`` (when the cluster's
    pods began to pend, as its status row recorded; None: now)."""
    coming = min(cluster.pending_coming_replicas, cluster.pending_replicas)
    silent = unheard(cluster)
    if coming == 0 and silent == 0 and cluster.refused_replicas == 0:
        return cluster
    wait = max(provision_seconds(cluster, flag), delay_seconds)
    since = cluster.pending_coming_since
    overdue = coming > 0 and since is not None and (now - since).total_seconds() >= wait
    started = pending_since or now
    silent_overdue = silent > 0 and (now - started).total_seconds() >= wait
    waiting = (0 if overdue else coming) + (0 if silent_overdue else silent)
    if silent and not silent_overdue:
        since = started if since is None else min(since, started)
    return cluster.model_copy(
        update={
            "pending_replicas": cluster.pending_replicas - waiting + cluster.refused_replicas,
            "pending_coming_replicas": waiting,
            "pending_coming_since": since,
            "pending_stuck_replicas": cluster.pending_stuck_replicas
            + (coming if overdue else 0)
            + (silent if silent_overdue else 0),
        }
    )


def counts_at_once(cluster: ClusterObservation) -> bool:
    """Pods pend that nothing in the cluster will place: no wait for ``autoscaleMultiClusterDelay``."""
    return cluster.pending_stuck_replicas > 0 or cluster.refused_replicas > 0


def coming_due(cluster: ClusterObservation, flag: float | None, delay_seconds: float) -> datetime | None:
    """When the pods nodes are coming for start to count, if they still pend then (a pass is due)."""
    if cluster.pending_coming_replicas <= 0 or cluster.pending_coming_since is None:
        return None
    wait = max(provision_seconds(cluster, flag), delay_seconds)
    return cluster.pending_coming_since + timedelta(seconds=wait)
