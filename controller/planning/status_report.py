"""The status one planning pass writes: the FederatedHPA's sums and conditions, and a row per cluster.

The rows also carry what the next pass must remember (pins, saturation, since when pods pend, health
timestamps), so a restarted controller resumes from status alone. Conditions keep their
lastTransitionTime unless their status flips (``controller.planning.conditions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from controller.planning.affinity import affinity_matches
from controller.planning.conditions import condition
from controller.planning.deselection import DESELECTED, Deselected
from controller.planning.external_share import format_share, member_targets
from controller.planning.failover import Health, Role
from controller.planning.fleet import FAILED_OVER, SATURATED, Fleet, Slot
from controller.planning.kstatus import with_kstatus
from controller.planning.member_health import member_conditions
from controller.planning.observation import ClusterObservation
from controller.planning.policies import policy_of
from controller.planning.removal import REMOVED
from controller.planning.wording import count
from fhpa_api.limits import HISTORY_MESSAGE_MAX_CHARS as DETAIL_MAX
from fhpa_api.models import CapacityStatus, ClusterStatus, Condition, FederatedHPAStatus, SplitStatus
from fhpa_api.pause import is_paused


def planned_status(
    fleet: Fleet,
    previous: FederatedHPAStatus,
    selected: list[ClusterObservation],
    registered: list[ClusterObservation],
    health: Mapping[str, Health],
    conflicting: set[str],
    *,
    key: str | None,
    assigned_at: datetime | None,
    optimized_at: datetime | None,
    shares: Mapping[str, int] | None = None,
    leaving: list[Deselected] | None = None,
) -> FederatedHPAStatus:
    """The FederatedHPA status after this pass: selected clusters, plus any other holding our HPA.

    ``shares``: each member's share of External/Object AverageValue metrics (external_share), shown
    with the targets it got and remembered for the next pass's threshold."""
    shares = shares or {}
    rows = {r.name: r for r in previous.clusters or []}
    selected_names = {o.name for o in selected}
    draining = {d.cluster.name: d for d in leaving or []}
    reported = selected + [
        o
        for o in registered
        if o.name not in selected_names and ((o.hpa and o.hpa.owned) or o.name in draining)
    ]
    table = [
        _with_share(
            fleet,
            _row(
                fleet,
                o,
                rows.get(o.name),
                health.get(o.name),
                o.name in conflicting,
                o.name in selected_names,
            ),
            shares.get(o.name),
        )
        for o in sorted(reported, key=lambda o: o.name)
    ]
    table = [_leaving(r, draining[r.name]) if r.name in draining else r for r in table]
    shown = {r.name for r in table}
    kept = [r for r in _draining_out_of_reach(registered, rows, selected_names) if r.name not in shown]
    table = sorted([*table, *kept], key=lambda r: r.name)
    slots = fleet.ordered()
    current = sum(s.cluster.current_replicas for s in slots)  # as observed, like the rows
    desired = sum(
        s.owned_hpa_desired if s.owned_hpa_desired is not None else s.cluster.current_replicas for s in slots
    )
    scale_times = [r.last_scale_time for r in table if r.last_scale_time is not None]
    return FederatedHPAStatus(
        observed_generation=fleet.fhpa.metadata.generation,
        current_replicas=current,
        desired_replicas=desired,
        last_scale_time=max(scale_times) if scale_times else None,
        current_metrics=previous.current_metrics,
        conditions=_object_conditions(fleet, previous.conditions, selected, conflicting),
        clusters=table,
        assignment_key=key,
        last_assignment_time=assigned_at,
        last_optimization_time=optimized_at,
    )


def _with_share(fleet: Fleet, row: ClusterStatus, share: int | None) -> ClusterStatus:
    if share is None:
        return row
    return row.model_copy(
        update={"metric_share": format_share(share), "metric_targets": member_targets(fleet.fhpa, share)}
    )


def _why_no_holder(selected: list[ClusterObservation], conflicting: set[str]) -> tuple[str, str]:
    """Ready=False's reason and message when no cluster holds a member HPA, in the operator's terms.

    When every cluster that matches has an HPA we do not own on the workload, saying "no healthy
    cluster matches" sends the reader to clusterAffinity and health, both fine; the HPAs are what to fix.
    """
    if not selected:
        return "NoCandidates", "no registered cluster matches clusterAffinity; no member HPA exists"
    blocked = sorted(o.name for o in selected if o.name in conflicting)
    if len(blocked) == len(selected):
        every = (
            "the one matching cluster" if len(blocked) == 1 else f"every matching cluster ({len(blocked)})"
        )
        return (
            "ConflictingHPA",
            f"{every} has an HPA not owned by this FederatedHPA targeting the workload "
            f"({', '.join(blocked)}); no member HPA exists. Remove those HPAs to let the clusters take part",
        )
    if blocked:
        return (
            "NoCandidates",
            f"no healthy matching cluster without a conflicting HPA (conflicting: {', '.join(blocked)}); "
            "no member HPA exists",
        )
    return "NoCandidates", "no healthy cluster matches clusterAffinity; no member HPA exists"


def _object_conditions(
    fleet: Fleet,
    previous: list[Condition] | None,
    selected: list[ClusterObservation],
    conflicting: set[str],
) -> list[Condition]:
    holders = [s for s in fleet.ordered() if s.max_replicas > 0]
    if holders:
        held = "holds a member HPA" if len(holders) == 1 else "hold member HPAs"
        ready = condition(
            previous, "Ready", "True", "Assigned", f"{count(len(holders), 'cluster')} {held}", fleet.now
        )
    else:
        reason, message = _why_no_holder(selected, conflicting)
        ready = condition(previous, "Ready", "False", reason, message, fleet.now)
    spec = fleet.fhpa.spec
    if not spec.effective_scale_assist:
        active = condition(
            previous,
            "ScalingActive",
            "False",
            "ScaleAssistDisabled",
            "scaleAssist is false: member HPAs scale within their assigned bounds only",
            fleet.now,
        )
    elif not policy_of(fleet.fhpa).divides_bounds:
        active = condition(
            previous,
            "ScalingActive",
            "False",
            spec.assignment_type,
            f"{spec.assignment_type}: every member HPA has the federated bounds; nothing moves between "
            "clusters",
            fleet.now,
        )
    else:
        active = condition(
            previous,
            "ScalingActive",
            "True",
            "ScaleAssist",
            f"{spec.assignment_type}: capacity moves between clusters as load requires",
            fleet.now,
        )
    return with_kstatus([ready, active, _floor_condition(fleet, previous)])


FLOOR_GIVES_WAY = "CapacityBelowMinReplicas"


def _floor_condition(fleet: Fleet, previous: list[Condition] | None) -> Condition:
    """Can the reachable clusters hold F.min? When not, the floor gives way to the ceiling (README)."""
    federated_min = fleet.fhpa.spec.effective_min
    # held clusters count (a blip must not raise a Warning); failed-over ones have no slot
    reachable = [s for s in fleet.ordered() if (s.can_receive or s.held) and s.max_replicas > 0]
    unknown = any(s.cluster.available_replicas is None for s in reachable)
    holdable = sum(s.cluster.available_or(0) for s in reachable)
    if not reachable or unknown or holdable >= federated_min:
        return condition(
            previous,
            "FloorHeld",
            "True",
            "Held",
            f"the reachable clusters can hold minReplicas {federated_min}",
            fleet.now,
        )
    return condition(
        previous,
        "FloorHeld",
        "False",
        FLOOR_GIVES_WAY,
        f"the reachable clusters can hold {holdable} of minReplicas {federated_min}: the floor gives way to "
        "what they hold, and the pods beyond it wait where they are (pending, or refused by a quota) "
        "until room grows",
        fleet.now,
    )


def _pending_first_since(slot: Slot | None, row: ClusterStatus | None) -> datetime | None:
    """When the pods that pend now began to pend, however often arriving nodes restarted their clock."""
    if slot is None or slot.pending_since is None:
        return None
    earlier = [t for t in (row.pending_first_since, row.pending_since) if t is not None] if row else []
    return min([*earlier, slot.pending_since])


def _row(
    fleet: Fleet,
    cluster: ClusterObservation,
    row: ClusterStatus | None,
    health: Health | None,
    conflict: bool,
    selected: bool,
) -> ClusterStatus:
    slot = fleet.slots.get(cluster.name)
    seen = slot.cluster if slot is not None else cluster
    known = seen.healthy or slot is not None  # a held cluster keeps its last-known counts
    previous = row.conditions if row is not None else None
    now = fleet.now
    last_scale = row.last_scale_time if row is not None else None
    if slot is not None and slot.replicas is not None:
        last_scale = now
    trend, trend_time = _max_trend(slot, row, now)
    state = None
    if health is not None and health.role == Role.FAILED_OVER:
        state = FAILED_OVER
    elif slot is not None and slot.saturated:
        state = SATURATED
    return ClusterStatus(
        name=cluster.name,
        min_replicas=slot.min_replicas if slot is not None else None,
        max_replicas=slot.max_replicas if slot is not None else None,
        # after this pass's write, so that the next pass does not take our own write for a change in load
        current_replicas=(slot.current if slot is not None else seen.current_replicas) if known else None,
        ready_replicas=seen.ready_replicas if known else None,
        pending_replicas=seen.pending_replicas if seen.healthy else None,
        desired_replicas=slot.owned_hpa_desired if slot is not None else None,
        last_scale_time=last_scale,
        conditions=_cluster_conditions(
            cluster,
            _assigned_condition(
                cluster,
                slot,
                health,
                conflict,
                selected,
                previous,
                now,
                is_paused(fleet.fhpa.metadata.annotations),
            ),
            previous,
            now,
        ),
        state=state,
        pending_since=slot.pending_since if slot is not None else None,
        pending_first_since=_pending_first_since(slot, row),
        pinned_min_replicas=slot.pin if slot is not None else None,
        unhealthy_since=health.unhealthy_since if health is not None else None,
        failovers=(health.failovers or None) if health is not None else None,
        last_failover_time=health.last_failover if health is not None else None,
        failover_grace_seconds=_grace(health),
        failover_at=_failover_at(fleet, health),
        max_trend=trend,
        max_trend_time=trend_time,
        max_moved_by=_moved_by(fleet, cluster.name, row)
        if trend_time == now
        else (row.max_moved_by if row else None),
        drained_at=slot.drained_at if slot is not None else (row.drained_at if row is not None else None),
        assist_held_until=slot.assist_until if slot is not None else None,
        # a pin cleared elsewhere (its room went, its min rose past it, a burst hold ended) ends the hold
        take_back_held_until=slot.take_back_until if slot is not None and slot.pin is not None else None,
        woken_at=_woken_at(slot, seen, row, now),
        idle_since=slot.idle_since if slot is not None else None,
        decision_key=_decision_key(cluster, row),
        preference=_preference(fleet, cluster, row),
        capacity=_capacity(seen, row),
        split=_split(slot, row),
    )


def _split(slot: Slot | None, row: ClusterStatus | None) -> SplitStatus | None:
    """What the assignment's split read and gave: this pass's when it assigned, else the one recorded
    (kept until the next assignment); a cluster without a slot took no part in it."""
    if slot is None:
        return None
    if slot.split is not None:
        return slot.split
    return row.split if row is not None else None


def _woken_at(
    slot: Slot | None, seen: ClusterObservation, row: ClusterStatus | None, now: datetime
) -> datetime | None:
    """When the controller last raised the cluster from 0 replicas: this pass, if it writes replicas to a
    workload at 0, else what the row recorded (scaling to zero waits an hour after it)."""
    if slot is not None and slot.replicas and seen.current_replicas == 0:
        return now
    return row.woken_at if row is not None else None


def _draining_out_of_reach(
    registered: list[ClusterObservation], rows: Mapping[str, ClusterStatus], selected: set[str]
) -> list[ClusterStatus]:
    """The rows of de-selected clusters still being drained that this pass cannot reach, as they were,
    and of clusters de-selected while unreachable that held our HPA (or were failed over) and may run
    replicas (the last count was not 0, or is unknown: a failed-over cluster's), marked de-selected with
    no hand-over yet. A cluster the controller never reached while it was selected was never its to
    drain, and keeps no row.

    Their member HPA is gone, or goes the moment they answer, so the row is all that says they still
    run replicas: dropped on a blip, or on a de-selection made while the cluster was out of reach,
    nobody would drain them when they answer again (promise 2)."""
    kept = []
    for o in registered:
        row = rows.get(o.name)
        if o.healthy or o.name in selected or row is None:
            continue
        if row.state == DESELECTED:
            kept.append(row)
        elif row.current_replicas != 0 and (row.max_replicas is not None or row.state == FAILED_OVER):
            # it held our HPA (or was failed over, its counts unknown): it may run what it ran. Its
            # share of the bounds went with the selection, so the row no longer carries one.
            kept.append(
                row.model_copy(
                    update={
                        "state": DESELECTED,
                        "drained_at": None,
                        "min_replicas": None,
                        "max_replicas": None,
                    }
                )
            )
    return kept


def _leaving(row: ClusterStatus, leaving: Deselected) -> ClusterStatus:
    """A de-selected cluster's row while it is drained: when its replicas were handed over, and what is
    left of them (after this pass's write)."""
    return row.model_copy(
        update={
            "state": DESELECTED,
            "drained_at": leaving.handed_at,
            "current_replicas": 0 if leaving.drain else leaving.cluster.current_replicas,
        }
    )


def _grace(health: Health | None) -> int | None:
    """The grace recorded where it tells something: while unreachable, or once it has grown by flaps."""
    if health is None or not (health.role == Role.HELD or health.failovers):
        return None
    return round(health.grace_seconds)


def _failover_at(fleet: Fleet, health: Health | None) -> datetime | None:
    """When an unreachable cluster fails over if it stays so (never without scaleAssist)."""
    if health is None or health.role != Role.HELD or health.unhealthy_since is None:
        return None
    if not fleet.fhpa.spec.effective_scale_assist:
        return None
    return health.unhealthy_since + timedelta(seconds=health.grace_seconds)


def _capacity(cluster: ClusterObservation, row: ClusterStatus | None) -> CapacityStatus | None:
    """The room the pass counted, and why; a cluster not observed this pass keeps what was recorded."""
    room = cluster.capacity
    if not cluster.healthy:
        return row.capacity if row is not None else None
    if room is None:
        return None
    return CapacityStatus(
        firm=room.firm,
        elastic=room.elastic,
        source=room.source,
        detail=room.detail[:DETAIL_MAX] if room.detail is not None else None,
        coming_since=cluster.pending_coming_since if cluster.pending_coming_replicas > 0 else None,
    )


def _decision_key(cluster: ClusterObservation, row: ClusterStatus | None) -> str | None:
    """The decision the member HPA holds as observed (the executor records the one it applies); a
    cluster not observed this pass keeps the last one recorded."""
    if not cluster.healthy:
        return row.decision_key if row is not None else None
    hpa = cluster.hpa
    return hpa.decision if hpa is not None and hpa.owned else None


def _preference(fleet: Fleet, cluster: ClusterObservation, row: ClusterStatus | None) -> int | None:
    """The index of the preference entry the cluster matched (-1: none); a cluster seen without its
    labels (removed from the registry) keeps what was recorded."""
    if not cluster.registered:
        return row.preference if row is not None else None
    prefs = fleet.fhpa.spec.preferences
    return next((i for i, p in enumerate(prefs) if affinity_matches(p.target_cluster, cluster)), -1)


MOVE_NO_MAX = frozenset(
    {
        "Pinned",
        "Unpinned",
        "BurstAssisted",
        "BurstReleased",
        "ScaledFromZero",
        "ScaledToZero",
        "MinRedistributed",
        "MetricSharesUpdated",
    }
)
"""Events that change a member HPA's min or a cluster's replicas, never its max: they name the cluster
first, and an explain of a max move that took them for its cause was wrong (a review read "moved down,
by Unpinned" for a max that a spill's ScaledAcrossClusters moved in the same pass)."""


def _moved_by(fleet: Fleet, name: str, row: ClusterStatus | None) -> str | None:
    """The reason of this pass's Event that moved the cluster's max: one naming the cluster first, else
    the pass's first fleet-wide one (an optimization names no cluster first; an Event about another
    cluster, such as a pin on the tier above, did not move this one); an assignment has none. Events
    that move no max (:data:`MOVE_NO_MAX`) are no cause."""
    events = [e for e in fleet.events if e.reason not in MOVE_NO_MAX]
    named = [e.reason for e in events if e.message.startswith(f"{name}:")]
    if named:
        return named[-1]
    wide = [e.reason for e in events if not any(e.message.startswith(f"{n}:") for n in fleet.slots)]
    return wide[0] if wide else "Assigned"


def _max_trend(
    slot: Slot | None, row: ClusterStatus | None, now: datetime
) -> tuple[int | None, datetime | None]:
    """Which way this cluster's max moved last, and when: a change in this pass, else what the row says."""
    before = row.max_replicas if row is not None else None
    if slot is not None and before is not None and slot.max_replicas != before:
        return (1 if slot.max_replicas > before else -1), now
    if row is None:
        return None, None
    return row.max_trend, row.max_trend_time


def _cluster_conditions(
    cluster: ClusterObservation, assigned: Condition, previous: list[Condition] | None, now: datetime
) -> list[Condition]:
    """A row's conditions: the Assigned one the caller made, then health, target and the member HPA's."""
    if not cluster.registered:
        healthy = condition(
            previous, "Healthy", "False", REMOVED, "no longer registered: its member Secret is gone", now
        )
    elif cluster.no_execute:
        healthy = condition(previous, "Healthy", "False", "NoExecuteTaint", "tainted NoExecute", now)
    elif cluster.healthy:
        healthy = condition(previous, "Healthy", "True", "Healthy", "the member API server answers", now)
    else:
        detail = f"cannot be observed: {cluster.unobserved}" if cluster.unobserved else None
        healthy = condition(
            previous, "Healthy", "False", "Unhealthy", detail or "the member API server does not answer", now
        )
    result = [assigned, healthy]
    if cluster.healthy:
        if cluster.workload_found:
            result.append(
                condition(previous, "TargetFound", "True", "TargetFound", "the workload exists", now)
            )
        else:
            result.append(
                condition(
                    previous,
                    "TargetFound",
                    "False",
                    "TargetMissing",
                    "the scale target does not exist in this cluster; its HPA waits for it",
                    now,
                )
            )
    return result + member_conditions(cluster, previous, now)


def _assigned_condition(
    cluster: ClusterObservation,
    slot: Slot | None,
    health: Health | None,
    conflict: bool,
    selected: bool,
    previous: list[Condition] | None,
    now: datetime,
    paused: bool = False,
) -> Condition:
    role = health.role if health is not None else None
    if not selected:
        return condition(
            previous,
            "Assigned",
            "False",
            "NotSelected",
            "no longer matches clusterAffinity; its member HPA is removed",
            now,
        )
    if conflict:
        return condition(
            previous,
            "Assigned",
            "False",
            "ConflictingHPA",
            f"HPA {cluster.hpa.name if cluster.hpa else ''} not owned by this FederatedHPA targets the "
            "workload; remove it to let this cluster take part",
            now,
        )
    if role == Role.FAILED_OVER:
        return condition(
            previous,
            "Assigned",
            "False",
            "FailedOver",
            "unhealthy past the grace period or tainted NoExecute; its share was reassigned",
            now,
        )
    if role == Role.EXCLUDED:
        return condition(
            previous, "Assigned", "False", "Unhealthy", "unhealthy or tainted NoExecute; not a candidate", now
        )
    if slot is None or slot.max_replicas <= 0:
        return condition(
            previous,
            "Assigned",
            "False",
            "NoShare",
            "the policy gives this cluster no replicas; it has no member HPA",
            now,
        )
    if role == Role.HELD and paused:
        return condition(
            previous,
            "Assigned",
            "True",
            "Unhealthy",
            f"unreachable; bounds frozen at min {slot.hpa_min} max {slot.max_replicas} while paused: "
            "not failed over until resumed",
            now,
        )
    if role == Role.HELD:
        return condition(
            previous,
            "Assigned",
            "True",
            "Unhealthy",
            f"unreachable; keeps min {slot.hpa_min} max {slot.max_replicas} during the grace period",
            now,
        )
    return condition(
        previous,
        "Assigned",
        "True",
        "Assigned",
        f"member HPA min {slot.hpa_min} max {slot.max_replicas}",
        now,
    )
