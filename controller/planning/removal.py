"""A cluster that leaves the registry (its Secret deleted) while it holds one of our member HPAs.

Removing the Secret removes the controller's access, not the member HPA: it keeps scaling there within
its last bounds, unseen. Dropping the cluster at once would plan as if those replicas and that max did
not exist and hand its whole share to the others, so the fleet's maxes would exceed F.max. Instead the
cluster is planned as one that stopped answering, from its last status row: its bounds count through
the failover grace, then it is failed over like any lost cluster, and its row goes once that is done.
An Event names what was left behind, since only the operator can remove it.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.planning.conditions import had_reason
from controller.planning.fleet import FAILED_OVER
from controller.planning.observation import ClusterObservation
from controller.planning.plan import EventRecord
from fhpa_api.models import ClusterStatus

REMOVED = "ClusterRemoved"


def removed_clusters(
    observations: list[ClusterObservation], rows: Mapping[str, ClusterStatus]
) -> list[ClusterObservation]:
    """Unregistered clusters still planned: a row that held an HPA of ours (a max) and is not failed
    over yet, observed as unreachable and not registered."""
    seen = {o.name for o in observations}
    return [
        ClusterObservation(name=name, healthy=False, registered=False)
        for name, row in sorted(rows.items())
        if name not in seen and (row.max_replicas or 0) > 0 and row.state != FAILED_OVER
    ]


def removal_events(removed: list[ClusterObservation], rows: Mapping[str, ClusterStatus]) -> list[EventRecord]:
    """A Warning, once per removal, naming the member HPA left behind with its last bounds."""
    events = []
    for cluster in removed:
        row = rows[cluster.name]
        if had_reason(row.conditions, REMOVED):
            continue
        events.append(
            EventRecord(
                type="Warning",
                reason=REMOVED,
                message=f"{cluster.name}: removed from the registry; its member HPA is left there, unseen, "
                f"with min {row.min_replicas} max {row.max_replicas} over {row.current_replicas or 0} "
                "replicas; its bounds count until it is failed over. Delete that HPA in the cluster "
                "(fhpa cluster unjoin --delete-member-hpas) or register the cluster again",
            )
        )
    return events
