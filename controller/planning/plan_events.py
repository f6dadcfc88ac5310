"""The Events a planning pass records besides those of its steps: cluster transitions and member writes.

A transition (a conflicting HPA, a missing target, unreachable, failed over, rejoined) is reported once,
when it happens: the previous status row's conditions tell whether it was already reported.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.planning.conditions import had_reason
from controller.planning.failover import Health, Role
from controller.planning.fleet import Fleet
from controller.planning.member_health import METRICS_UNAVAILABLE, blind_message, blind_reason, was_blind
from controller.planning.observation import ClusterObservation
from controller.planning.plan import EventRecord, HPAAction, ReplicaWrite
from controller.planning.policies import policy_of
from fhpa_api.limits import HISTORY_MESSAGE_MAX_CHARS as DETAIL_MAX
from fhpa_api.models import ClusterStatus, Condition
from fhpa_api.pause import is_paused


def transition_events(
    fleet: Fleet,
    selected: list[ClusterObservation],
    rows: Mapping[str, ClusterStatus],
    health: Mapping[str, Health],
    conflicting: set[str],
) -> list[EventRecord]:
    """Events for what changed about a cluster: emitted once, on the transition."""
    events = []
    for cluster in selected:
        before = rows[cluster.name].conditions if cluster.name in rows else None
        h = health[cluster.name]
        if cluster.name in conflicting and not had_reason(before, "ConflictingHPA"):
            events.append(
                _warning(
                    cluster.name,
                    "ConflictingHPA",
                    "an HPA we do not own targets the workload; no member HPA is created there",
                )
            )
        if cluster.healthy and not cluster.workload_found and not had_reason(before, "TargetMissing"):
            events.append(_warning(cluster.name, "TargetMissing", "the scale target does not exist"))
        if blind_reason(cluster) is not None and not was_blind(before):
            events.append(
                EventRecord(type="Warning", reason=METRICS_UNAVAILABLE, message=blind_message(cluster))
            )
        if h.role == Role.HELD and not had_reason(before, "Unhealthy"):
            events.append(_warning(cluster.name, "Unhealthy", _held_text(fleet, cluster.unobserved)))
        if h.failed_now:
            events.append(_warning(cluster.name, "FailedOver", _failed_over_text(fleet, h)))
        if h.rejoined_now:
            events.append(
                EventRecord(
                    reason="Rejoined",
                    message=f"{cluster.name}: answers again; rejoins at once keeping what it runs"
                    + (f" (next failover grace {h.grace_seconds:.0f}s)" if h.failovers else ""),
                )
            )
    return events


def _held_text(fleet: Fleet, why: str | None) -> str:
    """The Warning when a cluster stops being observable, with the reason the observation failed (an
    outage, or a member over its budget: the operator acts differently on each)."""
    what = f"unreachable ({why[:DETAIL_MAX]})" if why else "unreachable"
    if is_paused(fleet.fhpa.metadata.annotations):
        return f"{what}; its bounds are frozen while paused, failed over after the resume if still down"
    return f"{what}; failed over if it stays so"


def object_events(before: list[Condition] | None, after: list[Condition] | None) -> list[EventRecord]:
    """A Warning when a promise starts giving way to another (the FloorHeld condition turns False)."""
    now = next((c for c in after or [] if c.type == "FloorHeld" and c.status == "False"), None)
    if now is None or had_reason(before, now.reason or ""):
        return []
    return [EventRecord(type="Warning", reason=now.reason or "FloorHeld", message=now.message or "")]


def _failed_over_text(fleet: Fleet, h: Health) -> str:
    """A policy that does not divide the bounds (Duplicated) has no share to move: every cluster
    already has F.min..F.max."""
    flaps = f" (failover {h.failovers} within the hour: its grace grows)" if h.failovers > 1 else ""
    if not policy_of(fleet.fhpa).divides_bounds:
        return f"failed over; its HPA is left alone, the other clusters keep their own bounds{flaps}"
    return f"failed over; its share goes to the other clusters{flaps}"


def _warning(cluster: str, reason: str, what: str) -> EventRecord:
    """A Warning about one cluster; the message names the cluster first, as every planner Event does."""
    return EventRecord(type="Warning", reason=reason, message=f"{cluster}: {what}")


def action_events(
    actions: list[HPAAction],
    writes: list[ReplicaWrite],
    fleet: Fleet,
    outside: Mapping[str, int] | None = None,
) -> list[EventRecord]:
    """One Event per member HPA created, updated or deleted and per replica write. ``outside``: the
    replicas of clusters written outside the fleet (de-selected ones being drained)."""
    outside = outside or {}
    events = []
    for action in actions:
        if action.op == "delete":
            events.append(
                EventRecord(
                    reason="MemberHPADeleted",
                    message=f"{action.cluster}: member HPA deleted",
                    action=f"delete/{action.cluster}",
                )
            )
        else:
            verb = "created" if action.op == "create" else "updated"
            events.append(
                EventRecord(
                    reason=f"MemberHPA{verb.capitalize()}",
                    message=f"{action.cluster}: member HPA {verb}, "
                    f"min {action.min_replicas} max {action.max_replicas}",
                    action=f"{action.op}/{action.cluster}",
                )
            )
    for write in writes:
        slot = fleet.slots.get(write.cluster)
        before = slot.cluster.current_replicas if slot is not None else outside.get(write.cluster, 0)
        events.append(
            EventRecord(
                reason="ReplicasSet",
                message=f"{write.cluster}: replicas {before} -> {write.replicas} ({write.reason})",
                action=f"scale/{write.cluster}",
            )
        )
    return events
