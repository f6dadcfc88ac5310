"""The planner: one FederatedHPA plus one observation per cluster, at one instant, becomes a Plan.

``plan()`` is pure: no I/O and no clock (``now`` is an argument). Everything it must remember from one
pass to the next (the assignment key, since when pods pend, pins, saturation, health timestamps, the last
optimization) is written into the status it returns, so a restarted controller resumes where it was.

A pass: pick the candidates (affinity, health, taints, conflicting HPAs); when the candidate set or the
spec changed, run the initial assignment (DESIGN §3); otherwise resume the recorded bounds and, with
scaleAssist and a policy other than Duplicated, apply the cross-cluster steps of DESIGN §4; then decide
each member's share of External/Object AverageValue metrics (``controller.planning.external_share``) and
derive the member HPA actions, replica writes, status (``controller.planning.status_report``), Events
(``controller.planning.plan_events``) and when to plan again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from controller.planning import (
    burst,
    deselection,
    external_share,
    optimization,
    pause,
    pending,
    priority,
    zero,
)
from controller.planning.affinity import affinity_matches
from controller.planning.assignment import initial_assignment
from controller.planning.failover import Health, HealthPolicy, Role, assess, due_at
from controller.planning.fleet import FAILED_OVER, SATURATED, Fleet, Slot, normalize
from controller.planning.member_hpa import render_spec, spec_digest
from controller.planning.observation import CapacityObservation, ClusterObservation
from controller.planning.plan import HPAAction, Plan, ReplicaWrite
from controller.planning.plan_events import action_events, object_events, transition_events
from controller.planning.policies import policy_of
from controller.planning.removal import removal_events, removed_clusters
from controller.planning.status_report import planned_status
from controller.planning.unobserved import observed_conditions
from controller.planning.wording import count
from fhpa_api.models import CapacityStatus, ClusterStatus, FederatedHPA, FederatedHPAStatus
from fhpa_api.pause import is_paused


class PlannerConfig(BaseModel):
    """The controller's flags that shape planning (seconds)."""

    failover_grace_seconds: float = Field(default=60, ge=0)
    optimization_period_seconds: float = Field(default=60, gt=0)
    rejoin_hysteresis_seconds: float = Field(default=120, ge=0)  # grace growth per flap (failover.py)
    blip_tolerance_seconds: float = Field(default=30, ge=0)  # shorter unreachable spells move nothing
    # how long pods with TriggeredScaleUp may pend before they count (None: what each cluster shows)
    node_provision_seconds: float | None = Field(default=None, ge=0)
    # start the replicas a capped cluster's load asks for in the clusters with room, ahead of their
    # member HPAs (planning.burst)
    burst_assist: bool = True


def plan(
    fhpa: FederatedHPA,
    observations: list[ClusterObservation],
    now: datetime,
    config: PlannerConfig,
) -> Plan:
    """Decide one pass for ``fhpa``. Raises ValueError when two observations share a cluster name.

    A paused object (``controller.planning.pause``) resumes its recorded bounds and stops there: no
    assignment, no cross-cluster step, no failover (its health policy is disabled, so an unreachable
    cluster stays held), and its assignment key is kept, so a change made while paused is assigned
    on the first pass after the resume.
    """
    previous = fhpa.status or FederatedHPAStatus()
    paused = is_paused(fhpa.metadata.annotations)
    rows = {r.name: r for r in previous.clusters or []}
    delay = fhpa.spec.effective_delay_seconds
    observations = [
        pending.as_counted(
            o,
            now,
            config.node_provision_seconds,
            delay,
            _clock_start(rows.get(o.name), o, now, config, delay),
        )
        for o in observations
    ]
    removed = removed_clusters(observations, rows)
    registered, selected = _registered_and_selected(fhpa, observations, removed)
    health_policy = HealthPolicy(
        grace_seconds=config.failover_grace_seconds,
        hysteresis_seconds=config.rejoin_hysteresis_seconds,
        enabled=fhpa.spec.effective_scale_assist and not paused,
        blip_tolerance_seconds=config.blip_tolerance_seconds,
    )
    holders = _sole_holders(selected, rows)
    health = {o.name: assess(o, rows.get(o.name), now, health_policy, o.name in holders) for o in selected}
    conflicting = {o.name for o in selected if o.hpa is not None and not o.hpa.owned}
    candidates = _candidates(selected, rows, health, conflicting)
    key = previous.assignment_key if paused else assignment_key(fhpa, [c.name for c in candidates])
    fleet = Fleet(fhpa=fhpa, now=now, slots={})
    missing = any(_bounds_missing(rows.get(c.name)) for c in candidates)
    reassign = not paused and (key != previous.assignment_key or missing)
    last_optimization = previous.last_optimization_time
    if paused:
        _resume(fleet, [c for c in candidates if not _bounds_missing(rows.get(c.name))], rows, health)
    elif reassign:
        _assign(fleet, candidates, rows, health)
        last_optimization = now
    else:
        _resume(fleet, candidates, rows, health)
        _drain_unshared(fleet)
    if _assists(fhpa) and not paused:  # also right after an assignment: the next pass finds nothing to do
        lost = sum((rows[n].ready_replicas or 0) for n, h in health.items() if h.failed_now and n in rows)
        last_optimization = _adjust(fleet, last_optimization, config, replacing=lost)
    if not paused:
        normalize(fleet)
    leaving = [] if paused else _drain_deselected(fleet, registered, selected, rows, config)
    review = not paused and (last_optimization == now or _writes_replicas(fleet) or _maxes_moved(fleet, rows))
    shares = _metric_shares(fleet, rows, review, config.blip_tolerance_seconds / 2)
    hpa_actions = _hpa_actions(fleet, registered, health, conflicting, shares, frozen=paused)
    replica_writes = _replica_writes(fleet) + [
        ReplicaWrite(cluster=d.cluster.name, replicas=0, reason="drained: no longer selected")
        for d in leaving
        if d.drain
    ]
    status = planned_status(
        fleet,
        previous,
        selected,
        registered,
        health,
        conflicting,
        key=key,
        assigned_at=now if reassign else previous.last_assignment_time,
        optimized_at=last_optimization,
        shares=shares,
        leaving=leaving,
    )
    status.conditions = pause.paused_conditions(status.conditions, previous.conditions, paused, fleet)
    status.conditions = observed_conditions(status.conditions, previous.conditions, selected, health, now)
    events = pause.pause_events(previous.conditions, paused, fleet)
    events += removal_events(removed, rows)
    events += transition_events(fleet, selected, rows, health, conflicting) + fleet.events
    events += object_events(previous.conditions, status.conditions)
    events += action_events(
        hpa_actions, replica_writes, fleet, {d.cluster.name: d.cluster.current_replicas for d in leaving}
    )
    # paused, nothing becomes due by time alone: removing the annotation is a watch event
    requeue, routine = (
        (None, False) if paused else _requeue(fleet, health, health_policy, last_optimization, config)
    )
    return Plan(
        hpa_actions=hpa_actions,
        replica_writes=replica_writes,
        status=status,
        events=events,
        requeue_after_seconds=requeue,
        requeue_routine=routine,
    )


def _registered_and_selected(
    fhpa: FederatedHPA, observations: list[ClusterObservation], removed: list[ClusterObservation]
) -> tuple[list[ClusterObservation], list[ClusterObservation]]:
    """Every observed cluster by name, and those the clusterAffinity selects; a removed cluster that
    still holds our HPA stays in both until failed over (its labels are gone with its Secret, and it was
    selected when it got its bounds)."""
    names = [o.name for o in observations]
    if len(set(names)) != len(names):
        raise ValueError(f"plan: duplicate cluster names in observations: {sorted(names)}")
    registered = sorted([*observations, *removed], key=lambda o: o.name)
    return registered, [
        o for o in registered if not o.registered or affinity_matches(fhpa.spec.cluster_affinity, o)
    ]


def _sole_holders(selected: list[ClusterObservation], rows: Mapping[str, ClusterStatus]) -> set[str]:
    """Unreachable clusters that last ran replicas while no reachable cluster runs any, and some
    reachable cluster could take over (when none answers, the controller has likely lost its own
    network: failing over would move nothing and only count a flap against every cluster).

    Pods that cannot be scheduled run nothing: a reachable cluster holding only those serves no more
    than one at 0. Counted as running, they made the holder's grace depend on them, and the pass that
    drained them (a cluster with no share of F.max) turned the holder sole at once, so the very next
    pass failed it over on the shorter grace."""
    if any(o.healthy and o.current_replicas - o.pending_replicas > 0 for o in selected):
        return set()
    if not any(o.healthy and o.workload_found for o in selected):
        return set()
    return {
        o.name
        for o in selected
        if not o.healthy and o.name in rows and (rows[o.name].current_replicas or 0) > 0
    }


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
    return fhpa.spec.effective_scale_assist and policy_of(fhpa).divides_bounds


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
    """Since when the cluster's pods pend, whether they count yet or wait for a node to come."""
    if cluster.pending_replicas + cluster.pending_coming_replicas <= 0 or not cluster.healthy:
        return None
    return _row_pending_since(row, cluster) or now


def _row_pending_since(row: ClusterStatus | None, cluster: ClusterObservation) -> datetime | None:
    """Since when the last pass saw the cluster's pods pend; None (from now) once a node arrived since
    then. What still pends is then what the node autoscaler has yet to see (new pods of a climb, or
    beyond the nodes that came), and its clock starts again. Counted from the first pod of an unbroken
    climb instead, every new pod of it would be overdue as soon as it pends, before the autoscaler's next
    look, and the load would be moved away from nodes about to come."""
    if row is None:
        return None
    return None if _a_node_came(row.capacity, cluster.capacity) else row.pending_since


def _clock_start(
    row: ClusterStatus | None, cluster: ClusterObservation, now: datetime, config: PlannerConfig, delay: float
) -> datetime | None:
    """Where the unheard pods' clock runs from this pass: restarted by arriving nodes. Where a node's
    worth of pods is unknown, any rise of firm room restarts it, and other workloads' churn could do so
    forever: there it never starts later than one wait after the pods first began to pend, so they are
    overdue within two waits. Where a node's worth is known, a restart is a node that came, and a long
    climb (each batch pending until its node comes) keeps the clock it needs."""
    start = _row_pending_since(row, cluster)
    first = row.pending_first_since if row is not None else None
    if first is None or (cluster.capacity is not None and cluster.capacity.pods_per_node):
        return start
    wait = max(pending.provision_seconds(cluster, config.node_provision_seconds), delay)
    return min(start or now, first + timedelta(seconds=wait))


def _a_node_came(was: CapacityStatus | None, has: CapacityObservation | None) -> bool:
    """Did firm room rise by at least a node's worth of the workload's pods (any rise where a node's
    worth is unknown)? In a shared cluster other pods come and go and firm room ticks up by a pod or two
    often; read as nodes arriving, that would restart the clock forever with the autoscaler down."""
    if was is None or was.firm is None or has is None or has.firm is None:
        return False
    return has.firm - was.firm >= max(has.pods_per_node or 1, 1)


def _assign(
    fleet: Fleet,
    candidates: list[ClusterObservation],
    rows: Mapping[str, ClusterStatus],
    health: Mapping[str, Health],
) -> None:
    """The initial assignment (DESIGN §3) and the first replicas it decides.

    A cluster the last pass found full (Saturated) whose pods still pend is still full: the split sees
    it as able to hold only what it holds, and it keeps the mark, so a reassignment (a failover, a
    rejoin) does not hand it a max its pods would pend against. Once nothing pends there and its HPA no
    longer presses against the cap, the mark goes (with unknown capacity nothing else would clear it).
    A policy that does not divide the bounds (Duplicated) marks nothing full: every cluster has
    F.min..F.max, and a mark left by the policy before it would cap one cluster and push its max onto
    the others, past F.max.
    """
    divides = policy_of(fleet.fhpa).divides_bounds  # Duplicated gives every cluster F.min..F.max
    full = {c.name for c in candidates if divides and _saturated(rows.get(c.name)) and _still_full(c)}
    flapped = {
        c.name: when
        for c in candidates
        if health[c.name].failovers > 0 and (when := health[c.name].last_failover) is not None
    }
    held = {c.name for c in candidates if health[c.name].role == Role.HELD}
    assignment = initial_assignment(
        fleet.fhpa,
        [_as_held(c) if c.name in held else _as_full(c) if c.name in full else c for c in candidates],
        flapped,
    )
    bounds = assignment.bounds
    for cluster in candidates:
        b = bounds[cluster.name]
        slot = Slot(
            cluster=cluster,
            min_replicas=b.min_replicas,
            max_replicas=b.max_replicas,
            saturated=cluster.name in full,
            held=health[cluster.name].role == Role.HELD,
            held_long=health[cluster.name].past_flag_grace,
            flapped=health[cluster.name].failovers > 0,
            held_since=health[cluster.name].unhealthy_since,
            pending_since=_pending_since(cluster, rows.get(cluster.name), fleet.now),
            split=assignment.splits.get(cluster.name),
        )
        fleet.slots[cluster.name] = slot
        if cluster.name in assignment.replicas:
            fleet.write_replicas(slot, assignment.replicas[cluster.name], "initial assignment")
    _drain_unshared(fleet)
    optimization.keep_full_capped(fleet)
    if assignment.started:
        fleet.event(
            "ScaledFromZero",
            f"initial assignment: the running clusters cannot hold minReplicas "
            f"{fleet.fhpa.spec.effective_min}: {', '.join(sorted(assignment.started))} started",
        )
    shares = ", ".join(
        f"{n} {b.min_replicas}..{b.max_replicas}" for n, b in sorted(bounds.items()) if b.has_hpa
    )
    fleet.event(
        "Assigned",
        f"{fleet.fhpa.spec.assignment_type} over {count(len(candidates), 'candidate cluster')}: "
        f"{shares or 'none'}",
    )


def _saturated(row: ClusterStatus | None) -> bool:
    return row is not None and row.state == SATURATED


def _still_full(cluster: ClusterObservation) -> bool:
    """Pods pend there, or its HPA is held at the cap and wants more."""
    hpa = cluster.hpa
    return cluster.pending_replicas > 0 or (hpa is not None and hpa.owned and hpa.wants_more_than_max)


def _as_held(cluster: ClusterObservation) -> ClusterObservation:
    """A held cluster (unreachable within its grace) as the split should see it: room for what it last
    ran, no more. It keeps what it runs and receives nothing (DESIGN §4 Failover): unreachable, its room
    reads unknown, and the split would count that as room for all of F.max and hand it new max and mins
    that are never written there, while the reachable clusters with room stay short of the floor."""
    return cluster.model_copy(update={"available_replicas": cluster.current_replicas, "capacity": None})


def _as_full(cluster: ClusterObservation) -> ClusterObservation:
    """The cluster as the split should see it when it is full: room for what it holds, no more."""
    holds = max(cluster.ready_replicas, cluster.current_replicas - cluster.pending_replicas, 1)
    room = holds if cluster.available_replicas is None else min(cluster.available_replicas, holds)
    return cluster.model_copy(update={"available_replicas": room})


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
            saturated=_saturated(row),
            held=health[cluster.name].role == Role.HELD,
            held_long=health[cluster.name].past_flag_grace,
            flapped=health[cluster.name].failovers > 0,
            held_since=health[cluster.name].unhealthy_since,
            returned=health[cluster.name].role == Role.ACTIVE and row.unhealthy_since is not None,
            pending_since=_pending_since(cluster, row, fleet.now),
            previous_current=row.current_replicas,
            last_write=row.last_scale_time,
            trend=row.max_trend or 0,
            trend_since=row.max_trend_time,
            drained_at=row.drained_at,
            assist_until=row.assist_held_until,
            take_back_until=row.take_back_held_until,
            woken_at=row.woken_at,
            idle_since=zero.idle_since(cluster, row.idle_since, fleet.now),
        )


def _drain_unshared(fleet: Fleet) -> None:
    """Drain a running cluster left with max 0 (no HPA): F.max is below what runs and keep-what-runs had
    no surplus to give it one replica of max. Its replicas would otherwise run with nothing to scale them
    (DESIGN §4 promise 2); the clusters with an HPA take its load."""
    for slot in fleet.ordered():
        if slot.max_replicas <= 0 and slot.current > 0:
            fleet.write_replicas(slot, 0, "drained: no share of F.max is left for it")


def _adjust(
    fleet: Fleet, last_optimization: datetime | None, config: PlannerConfig, replacing: int = 0
) -> datetime | None:
    """The cross-cluster steps of DESIGN §4, in order. Returns the new last optimization time.

    Zeroing comes after everything that moves max (a cluster may just have received its first max),
    and min redistribution last, so that a pass leaves nothing for the next one at the same instant.
    """
    burst.release_holds(fleet)
    optimization.keep_what_returns(fleet)
    optimization.release_saturation(fleet)
    priority.scale_up(fleet)
    optimization.trigger(fleet)
    optimization.lend_held_slack(fleet, blip_seconds=config.blip_tolerance_seconds / 2)
    optimization.lend_for_the_floor(fleet)
    optimization.move_max_for_the_floor(fleet)
    raised = burst.assist(
        fleet,
        settle_seconds=config.optimization_period_seconds,
        replacing=replacing,
        for_capped=config.burst_assist,
    )
    released = priority.pin_and_release(fleet)
    if released:
        optimization.optimize(fleet, "lower-priority clusters drained")
    due = last_optimization is None or (fleet.now - last_optimization).total_seconds() >= (
        config.optimization_period_seconds
    )
    if due:
        optimization.optimize(fleet, "period optimization")
        last_optimization = fleet.now
    if not raised and not released:  # after the optimizations: the max they give is room to take back
        priority.take_back_up(fleet, settle_seconds=config.optimization_period_seconds)
    # after the optimizations, which share slack by room and would hand it straight back to the cluster
    # being drained; the next period may give it max again, by then its replicas are down
    priority.drain_from_bottom(fleet, settle_seconds=config.optimization_period_seconds)
    if not fleet.fhpa.spec.effective_scaling_to_zero:
        zero.start_idle(fleet)
    else:
        started = zero.start_for_floor(fleet, "floor: the running clusters cannot hold F.min")
        # one wake-up a pass: a burst assist that started replicas already answered "who takes more"
        settle = config.optimization_period_seconds
        if (
            not started
            and not raised
            and not zero.scale_from_zero(fleet)
            and not zero.scale_to_zero(fleet, periodic=due, settle_seconds=settle)
        ):
            zero.drain_lowest_tier(
                fleet, window_seconds=optimization.scale_down_window(fleet), settle_seconds=settle
            )
        optimization.redistribute_min(fleet)
        zero.settle_started(started, "floor: the running clusters cannot hold F.min")
    return last_optimization


def _drain_deselected(
    fleet: Fleet,
    registered: list[ClusterObservation],
    selected: list[ClusterObservation],
    rows: Mapping[str, ClusterStatus],
    config: PlannerConfig,
) -> list[deselection.Deselected]:
    """Clusters that left the selection while running replicas: handed over, then drained (promise 2)."""
    leaving = deselection.deselected_clusters(registered, selected, rows)
    return deselection.drain(fleet, leaving, rows, config.optimization_period_seconds)


def _writes_replicas(fleet: Fleet) -> bool:
    return any(s.replicas is not None for s in fleet.slots.values())


def _maxes_moved(fleet: Fleet, rows: Mapping[str, ClusterStatus]) -> bool:
    """Did this pass move a member max (a spill, a drain, a trigger)? What a cluster can run changed,
    and with it its share of External metrics (a drained cluster keeping its share would press against
    its new max for load it no longer takes, and get the max straight back)."""
    return any(
        (rows[n].max_replicas if n in rows else None) != s.max_replicas for n, s in fleet.slots.items()
    )


def _metric_shares(
    fleet: Fleet, rows: Mapping[str, ClusterStatus], review: bool, blip_seconds: float
) -> dict[str, int]:
    """Each member HPA's share of External/Object AverageValue metrics (controller.planning.external_share),
    over the clusters that hold an HPA after this pass (a held one past ``blip_seconds`` lends its share);
    an Event when they are rewritten."""
    holders = [
        external_share.Holder(
            cluster=s.cluster,
            current=s.current,
            max_replicas=s.max_replicas,
            lent=optimization.lends(fleet, s, blip_seconds),
        )
        for s in fleet.ordered()
        if s.max_replicas > 0
    ]
    recorded = {n: external_share.parse_share(r.metric_share) for n, r in rows.items()}
    decision = external_share.decide(fleet.fhpa, holders, recorded, review)
    if decision.changed:
        fleet.event("MetricSharesUpdated", decision.message())
    return decision.shares


def _hpa_actions(
    fleet: Fleet,
    registered: list[ClusterObservation],
    health: Mapping[str, Health],
    conflicting: set[str],
    shares: Mapping[str, int],
    frozen: bool = False,
) -> list[HPAAction]:
    """Create, update or delete member HPAs; an HPA that already matches gets nothing (fixed point).

    ``frozen`` (paused): only the clusters with recorded bounds are written, back to those bounds; an
    HPA elsewhere is left as it is, so a pause never changes which clusters serve.
    """
    actions: list[HPAAction] = []
    digests: dict[int | None, str] = {}  # the template digest depends on the metric share alone

    def digest_for(share: int | None) -> str:
        if share not in digests:
            digests[share] = spec_digest(render_spec(fleet.fhpa, 0, 0, share))
        return digests[share]

    for cluster in registered:
        if not cluster.healthy or cluster.name in conflicting:
            continue
        role = health.get(cluster.name)
        if role is not None and role.role == Role.FAILED_OVER:
            continue  # unreachable: its stale HPA is corrected when it rejoins, at once (DESIGN §4)
        slot = fleet.slots.get(cluster.name)
        observed = cluster.hpa
        if slot is None or slot.max_replicas <= 0:
            if observed is not None and observed.owned and not frozen:
                actions.append(HPAAction(cluster=cluster.name, op="delete"))
            continue
        lo, hi = slot.hpa_min, slot.max_replicas
        share = shares.get(cluster.name)
        if observed is not None and (
            observed.min_replicas,
            observed.max_replicas,
            observed.template_digest,
        ) == (
            lo,
            hi,
            digest_for(share),
        ):
            continue  # as planned: no spec rendered (most clusters, most passes)
        spec = render_spec(fleet.fhpa, lo, hi, share)
        op = "create" if observed is None else "update"
        actions.append(HPAAction(cluster=cluster.name, op=op, min_replicas=lo, max_replicas=hi, spec=spec))
    return actions


def _replica_writes(fleet: Fleet) -> list[ReplicaWrite]:
    return [
        ReplicaWrite(cluster=s.name, replicas=s.replicas, reason=s.replica_reason)
        for s in fleet.ordered()
        if s.replicas is not None
    ]


def _requeue(
    fleet: Fleet,
    health: Mapping[str, Health],
    policy: HealthPolicy,
    last_optimization: datetime | None,
    config: PlannerConfig,
) -> tuple[float | None, bool]:
    """Seconds until something becomes due by time alone: optimization, a delay, a grace, a hysteresis;
    and whether the requeue is routine (it may wait behind reactions). It is routine only when the
    periodic optimization is the one timer pending: the queue keeps one delayed add per object, so a
    grace or delay falling due after the optimization has no timer of its own, and would wait behind
    the low lane's backlog as long as the optimization pass does."""
    times: list[datetime] = []
    optimization = None
    if _assists(fleet.fhpa) and fleet.slots and last_optimization is not None:
        optimization = last_optimization + timedelta(seconds=config.optimization_period_seconds)
    if _assists(fleet.fhpa):
        delay = timedelta(seconds=fleet.fhpa.spec.effective_delay_seconds)
        times += [s.pending_since + delay for s in fleet.slots.values() if s.pending_since is not None]
        times += [
            t
            for s in fleet.slots.values()
            if (t := pending.coming_due(s.cluster, config.node_provision_seconds, delay.total_seconds()))
        ]
    times += [t for h in health.values() if (t := due_at(h, policy)) is not None]
    times += [s.assist_until for s in fleet.slots.values() if s.assist_until is not None]
    times += [s.take_back_until for s in fleet.slots.values() if s.take_back_until is not None]
    future = [t for t in times if t > fleet.now]
    due = min(future, default=None)
    if optimization is not None and optimization > fleet.now and (due is None or optimization < due):
        return (optimization - fleet.now).total_seconds(), due is None
    return (None, False) if due is None else ((due - fleet.now).total_seconds(), False)
