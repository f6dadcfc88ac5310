"""The planner: one FederatedHPA plus one observation per cluster, at one instant, becomes a Plan.

``plan()`` is pure: no I/O and no clock (``now`` is an argument). Everything it must remember from one
pass to the next (the assignment key, since when pods pend, pins, saturation, health timestamps, the last
optimization) is written into the status it returns, so a restarted controller resumes where it was.

A pass: pick the candidates (affinity, health, taints, conflicting HPAs); when the candidate set or the
spec changed, run the initial assignment (DESIGN §3); otherwise resume the recorded bounds and, with
scaleAssist and a policy other than Duplicated, apply the cross-cluster steps of DESIGN §4; then derive
the member HPA actions, replica writes, status, Events and when to plan again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from controller import optimization, priority, zero
from controller.affinity import affinity_matches
from controller.assignment import initial_assignment, initial_replicas
from controller.conditions import condition, had_reason
from controller.failover import Health, HealthPolicy, Role, assess, due_at
from controller.fleet import FAILED_OVER, SATURATED, Fleet, Slot, normalize
from controller.member_hpa import render_spec, template_digest
from controller.observation import ClusterObservation
from controller.plan import EventRecord, HPAAction, Plan, ReplicaWrite
from controller.policy import DUPLICATED
from fhpa_api.models import ClusterStatus, Condition, FederatedHPA, FederatedHPAStatus


class PlannerConfig(BaseModel):
    """The controller's flags that shape planning (seconds)."""

    failover_grace_seconds: float = Field(default=60, ge=0)
    optimization_period_seconds: float = Field(default=60, gt=0)
    rejoin_hysteresis_seconds: float = Field(default=120, ge=0)


def plan(
    fhpa: FederatedHPA,
    observations: list[ClusterObservation],
    now: datetime,
    config: PlannerConfig,
) -> Plan:
    """Decide one pass for ``fhpa``. Raises ValueError when two observations share a cluster name."""
    previous = fhpa.status or FederatedHPAStatus()
    rows = {r.name: r for r in previous.clusters or []}
    registered, selected = _registered_and_selected(fhpa, observations)
    health_policy = HealthPolicy(
        grace_seconds=config.failover_grace_seconds,
        hysteresis_seconds=config.rejoin_hysteresis_seconds,
        enabled=fhpa.spec.effective_scale_assist,
    )
    health = {o.name: assess(o, rows.get(o.name), now, health_policy) for o in selected}
    conflicting = {o.name for o in selected if o.hpa is not None and not o.hpa.owned}
    candidates = _candidates(selected, rows, health, conflicting)
    key = assignment_key(fhpa, [c.name for c in candidates])
    fleet = Fleet(fhpa=fhpa, now=now, slots={})
    reassign = key != previous.assignment_key or any(_bounds_missing(rows.get(c.name)) for c in candidates)
    last_optimization = previous.last_optimization_time
    if reassign:
        _assign(fleet, candidates, rows, health)
        last_optimization = now
    else:
        _resume(fleet, candidates, rows, health)
    if _assists(fhpa):  # also right after an assignment, so that the next pass finds nothing left to do
        last_optimization = _adjust(fleet, last_optimization, config)
    normalize(fleet)
    hpa_actions = _hpa_actions(fleet, registered, health, conflicting)
    replica_writes = _replica_writes(fleet)
    status = _status(
        fleet,
        previous,
        selected,
        registered,
        health,
        conflicting,
        key=key,
        assigned_at=now if reassign else previous.last_assignment_time,
        optimized_at=last_optimization,
    )
    events = _transition_events(fleet, selected, rows, health, conflicting) + fleet.events
    events += _action_events(hpa_actions, replica_writes, fleet)
    requeue = _requeue(fleet, health, health_policy, last_optimization, config)
    return Plan(
        hpa_actions=hpa_actions,
        replica_writes=replica_writes,
        status=status,
        events=events,
        requeue_after_seconds=requeue,
    )


def _registered_and_selected(
    fhpa: FederatedHPA, observations: list[ClusterObservation]
) -> tuple[list[ClusterObservation], list[ClusterObservation]]:
    """Every observed cluster by name, and those the clusterAffinity selects."""
    names = [o.name for o in observations]
    if len(set(names)) != len(names):
        raise ValueError(f"plan: duplicate cluster names in observations: {sorted(names)}")
    registered = sorted(observations, key=lambda o: o.name)
    return registered, [o for o in registered if affinity_matches(fhpa.spec.cluster_affinity, o)]


def _candidates(
    selected: list[ClusterObservation],
    rows: Mapping[str, ClusterStatus],
    health: Mapping[str, Health],
    conflicting: set[str],
) -> list[ClusterObservation]:
    """Selected clusters fit to hold an HPA (held ones planned with their last-known counts)."""
    return [
        _last_known(o, rows.get(o.name)) if health[o.name].role == Role.HELD else o
        for o in selected
        if health[o.name].candidate and o.name not in conflicting
    ]


def assignment_key(fhpa: FederatedHPA, candidate_names: list[str]) -> str:
    """A digest of the spec generation and the candidate set: when it changes, assign anew."""
    generation = fhpa.metadata.generation or 0
    raw = f"{generation}|{','.join(sorted(candidate_names))}".encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def _assists(fhpa: FederatedHPA) -> bool:
    """Does the controller act across clusters after the assignment? (DESIGN §4)"""
    return fhpa.spec.effective_scale_assist and fhpa.spec.assignment_type != DUPLICATED


def _bounds_missing(row: ClusterStatus | None) -> bool:
    return row is None or row.max_replicas is None or row.min_replicas is None or row.state == FAILED_OVER


def _last_known(cluster: ClusterObservation, row: ClusterStatus | None) -> ClusterObservation:
    """An unreachable cluster is planned with the counts it last reported (and no pending pods)."""
    if row is None:
        return cluster
    return cluster.model_copy(
        update={
            "current_replicas": row.current_replicas or 0,
            "ready_replicas": row.ready_replicas or 0,
            "pending_replicas": 0,
        }
    )


def _pending_since(cluster: ClusterObservation, row: ClusterStatus | None, now: datetime) -> datetime | None:
    if cluster.pending_replicas <= 0 or not cluster.healthy:
        return None
    return (row.pending_since if row is not None else None) or now


def _assign(
    fleet: Fleet,
    candidates: list[ClusterObservation],
    rows: Mapping[str, ClusterStatus],
    health: Mapping[str, Health],
) -> None:
    """The initial assignment (DESIGN §3), and the initial replicas it implies."""
    bounds = initial_assignment(fleet.fhpa, candidates)
    to_zero = fleet.fhpa.spec.effective_scaling_to_zero
    for cluster in candidates:
        b = bounds[cluster.name]
        slot = Slot(
            cluster=cluster,
            min_replicas=b.min_replicas,
            max_replicas=b.max_replicas,
            held=health[cluster.name].role == Role.HELD,
            pending_since=_pending_since(cluster, rows.get(cluster.name), fleet.now),
        )
        fleet.slots[cluster.name] = slot
        target = initial_replicas(b, cluster.current_replicas, to_zero)
        if target is not None:
            fleet.write_replicas(slot, target, "initial assignment")
    if to_zero:
        optimization.redistribute_min(fleet)
    shares = ", ".join(
        f"{n} {b.min_replicas}..{b.max_replicas}" for n, b in sorted(bounds.items()) if b.has_hpa
    )
    fleet.event(
        "Assigned",
        f"{fleet.fhpa.spec.assignment_type} over {len(candidates)} candidate clusters: {shares or 'none'}",
    )


def _resume(
    fleet: Fleet,
    candidates: list[ClusterObservation],
    rows: Mapping[str, ClusterStatus],
    health: Mapping[str, Health],
) -> None:
    """Carry the recorded bounds, pins and marks into this pass."""
    for cluster in candidates:
        row = rows[cluster.name]
        fleet.slots[cluster.name] = Slot(
            cluster=cluster,
            min_replicas=row.min_replicas or 0,
            max_replicas=row.max_replicas or 0,
            pin=row.pinned_min_replicas,
            saturated=row.state == SATURATED,
            held=health[cluster.name].role == Role.HELD,
            pending_since=_pending_since(cluster, row, fleet.now),
            previous_current=row.current_replicas,
            last_write=row.last_scale_time,
        )


def _adjust(fleet: Fleet, last_optimization: datetime | None, config: PlannerConfig) -> datetime | None:
    """The cross-cluster steps of DESIGN §4, in order. Returns the new last optimization time.

    Zeroing comes after everything that moves max (a cluster may just have received its first max),
    and min redistribution last, so that a pass leaves nothing for the next one at the same instant.
    """
    optimization.release_saturation(fleet)
    priority.scale_up(fleet)
    optimization.trigger(fleet)
    if priority.pin_and_release(fleet):
        optimization.optimize(fleet, "lower-priority clusters drained")
    due = last_optimization is None or (fleet.now - last_optimization).total_seconds() >= (
        config.optimization_period_seconds
    )
    if due:
        optimization.optimize(fleet, "period optimization")
        last_optimization = fleet.now
    if fleet.fhpa.spec.effective_scaling_to_zero:
        if not zero.scale_from_zero(fleet):
            zero.scale_to_zero(fleet, periodic=due, settle_seconds=config.optimization_period_seconds)
        optimization.redistribute_min(fleet)
    return last_optimization


def _hpa_actions(
    fleet: Fleet,
    registered: list[ClusterObservation],
    health: Mapping[str, Health],
    conflicting: set[str],
) -> list[HPAAction]:
    """Create, update or delete member HPAs; an HPA that already matches gets nothing (fixed point)."""
    digest = template_digest(fleet.fhpa)
    actions: list[HPAAction] = []
    for cluster in registered:
        if not cluster.healthy or cluster.name in conflicting:
            continue
        role = health.get(cluster.name)
        if role is not None and role.role in (Role.REJOINING, Role.FAILED_OVER):
            continue  # its stale HPA is corrected when it rejoins (DESIGN §4)
        slot = fleet.slots.get(cluster.name)
        observed = cluster.hpa
        if slot is None or slot.max_replicas <= 0:
            if observed is not None and observed.owned:
                actions.append(HPAAction(cluster=cluster.name, op="delete"))
            continue
        lo, hi = slot.hpa_min, slot.max_replicas
        spec = render_spec(fleet.fhpa, lo, hi)
        if observed is None:
            actions.append(
                HPAAction(cluster=cluster.name, op="create", min_replicas=lo, max_replicas=hi, spec=spec)
            )
        elif (observed.min_replicas, observed.max_replicas, observed.template_digest) != (lo, hi, digest):
            actions.append(
                HPAAction(cluster=cluster.name, op="update", min_replicas=lo, max_replicas=hi, spec=spec)
            )
    return actions


def _replica_writes(fleet: Fleet) -> list[ReplicaWrite]:
    return [
        ReplicaWrite(cluster=s.name, replicas=s.replicas, reason=s.replica_reason)
        for s in fleet.ordered()
        if s.replicas is not None
    ]


def _status(
    fleet: Fleet,
    previous: FederatedHPAStatus,
    selected: list[ClusterObservation],
    registered: list[ClusterObservation],
    health: Mapping[str, Health],
    conflicting: set[str],
    *,
    key: str,
    assigned_at: datetime | None,
    optimized_at: datetime | None,
) -> FederatedHPAStatus:
    rows = {r.name: r for r in previous.clusters or []}
    selected_names = {o.name for o in selected}
    reported = selected + [o for o in registered if o.name not in selected_names and o.hpa and o.hpa.owned]
    table = [
        _row(fleet, o, rows.get(o.name), health.get(o.name), o.name in conflicting, o.name in selected_names)
        for o in sorted(reported, key=lambda o: o.name)
    ]
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
        conditions=_object_conditions(fleet, previous.conditions),
        clusters=table,
        assignment_key=key,
        last_assignment_time=assigned_at,
        last_optimization_time=optimized_at,
    )


def _object_conditions(fleet: Fleet, previous: list[Condition] | None) -> list[Condition]:
    holders = [s for s in fleet.ordered() if s.max_replicas > 0]
    if holders:
        ready = condition(
            previous, "Ready", "True", "Assigned", f"{len(holders)} clusters hold member HPAs", fleet.now
        )
    else:
        ready = condition(
            previous,
            "Ready",
            "False",
            "NoCandidates",
            "no healthy cluster matches clusterAffinity; no member HPA exists",
            fleet.now,
        )
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
    elif spec.assignment_type == DUPLICATED:
        active = condition(
            previous,
            "ScalingActive",
            "False",
            "Duplicated",
            "Duplicated: every member HPA has the federated bounds; nothing moves between clusters",
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
    return [ready, active]


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
    state = None
    if health is not None and health.role in (Role.FAILED_OVER, Role.REJOINING):
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
        conditions=_cluster_conditions(cluster, slot, health, conflict, selected, previous, now),
        state=state,
        pending_since=slot.pending_since if slot is not None else None,
        pinned_min_replicas=slot.pin if slot is not None else None,
        unhealthy_since=health.unhealthy_since if health is not None else None,
        healthy_since=health.healthy_since if health is not None else None,
    )


def _cluster_conditions(
    cluster: ClusterObservation,
    slot: Slot | None,
    health: Health | None,
    conflict: bool,
    selected: bool,
    previous: list[Condition] | None,
    now: datetime,
) -> list[Condition]:
    assigned = _assigned_condition(cluster, slot, health, conflict, selected, previous, now)
    if cluster.no_execute:
        healthy = condition(previous, "Healthy", "False", "NoExecuteTaint", "tainted NoExecute", now)
    elif cluster.healthy:
        healthy = condition(previous, "Healthy", "True", "Healthy", "the member API server answers", now)
    else:
        healthy = condition(
            previous, "Healthy", "False", "Unhealthy", "the member API server does not answer", now
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
    return result


def _assigned_condition(
    cluster: ClusterObservation,
    slot: Slot | None,
    health: Health | None,
    conflict: bool,
    selected: bool,
    previous: list[Condition] | None,
    now: datetime,
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
    if role == Role.REJOINING:
        return condition(
            previous,
            "Assigned",
            "False",
            "Rejoining",
            "healthy again; rejoins after the hysteresis period",
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


def _transition_events(
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
                EventRecord(
                    type="Warning",
                    reason="ConflictingHPA",
                    message=f"{cluster.name}: an HPA we do not own targets the workload; "
                    "no member HPA is created there",
                )
            )
        if cluster.healthy and not cluster.workload_found and not had_reason(before, "TargetMissing"):
            events.append(
                EventRecord(
                    type="Warning",
                    reason="TargetMissing",
                    message=f"{cluster.name}: the scale target does not exist",
                )
            )
        if h.role == Role.HELD and not had_reason(before, "Unhealthy"):
            events.append(
                EventRecord(
                    type="Warning",
                    reason="Unhealthy",
                    message=f"{cluster.name}: unreachable; failed over if it stays so",
                )
            )
        if h.failed_now:
            events.append(
                EventRecord(
                    type="Warning",
                    reason="FailedOver",
                    message=f"{cluster.name}: failed over; its share goes to the other clusters",
                )
            )
        if h.rejoined_now:
            events.append(
                EventRecord(
                    reason="Rejoined", message=f"{cluster.name}: healthy past the hysteresis period; rejoins"
                )
            )
    return events


def _action_events(actions: list[HPAAction], writes: list[ReplicaWrite], fleet: Fleet) -> list[EventRecord]:
    events = []
    for action in actions:
        if action.op == "delete":
            events.append(
                EventRecord(reason="MemberHPADeleted", message=f"{action.cluster}: member HPA deleted")
            )
        else:
            verb = "created" if action.op == "create" else "updated"
            events.append(
                EventRecord(
                    reason=f"MemberHPA{verb.capitalize()}",
                    message=f"{action.cluster}: member HPA {verb}, "
                    f"min {action.min_replicas} max {action.max_replicas}",
                )
            )
    for write in writes:
        before = fleet.slots[write.cluster].cluster.current_replicas
        events.append(
            EventRecord(
                reason="ReplicasSet",
                message=f"{write.cluster}: replicas {before} -> {write.replicas} ({write.reason})",
            )
        )
    return events


def _requeue(
    fleet: Fleet,
    health: Mapping[str, Health],
    policy: HealthPolicy,
    last_optimization: datetime | None,
    config: PlannerConfig,
) -> float | None:
    """Seconds until something becomes due by time alone: optimization, a delay, a grace, a hysteresis."""
    times: list[datetime] = []
    if _assists(fleet.fhpa) and fleet.slots and last_optimization is not None:
        times.append(last_optimization + timedelta(seconds=config.optimization_period_seconds))
    if _assists(fleet.fhpa):
        delay = timedelta(seconds=fleet.fhpa.spec.effective_delay_seconds)
        times += [s.pending_since + delay for s in fleet.slots.values() if s.pending_since is not None]
    times += [t for h in health.values() if (t := due_at(h, policy)) is not None]
    future = [t for t in times if t > fleet.now]
    if not future:
        return None
    return (min(future) - fleet.now).total_seconds()
