"""Prioritized scaling across clusters (DESIGN §4): spill up the priority order, drain it from the bottom.

Scale-up: the highest-priority cluster that still has headroom and holds unschedulable pods past
``autoscaleMultiClusterDelay`` has its max dropped to what it holds (its ready replicas, plus pods
already scheduled and starting); the difference moves to the next cluster by priority, whose replicas
are raised by the number of pods that pend (at least 1, at most its new max). The capped cluster is marked
Saturated so that optimization does not hand the max straight back, and the spill cascades as the next
cluster saturates in turn.

Scale-down: the controller never writes replicas against a running member HPA. Instead it pins each
higher-priority cluster (its HPA's minReplicas raised to its current replicas) while a lower-priority
cluster sheds replicas, so the low clusters' HPAs shed load first; once every lower cluster is at its
min or its HPA wants no fewer than it runs, the pin is released and the Saturated mark with it, and
the unused max flows back up. "Lower" is a strictly lower priority: clusters of one priority are
peers, whatever their names.

Taking back: under a steady load, firm room that returns to a higher-priority cluster (its nodes back
after a drain) is filled the same way, by a pin, from what lower clusters run above their mins; that
pin holds for the lower HPAs' scale-down window, since they shed only once it has passed.

Node groups first: the policies that divide the bounds without tiers (StaticWeighted,
DynamicWeighted, Aggregated) pin their clusters of fixed room the same way while clusters on node
groups shed, so that whole nodes go first when the load falls.
"""

from __future__ import annotations

from datetime import timedelta

from controller.planning import burst
from controller.planning.affinity import priority
from controller.planning.fleet import Fleet, Slot
from controller.planning.member_health import blind_reason
from controller.planning.optimization import scale_down_window
from controller.planning.policies import policy_of
from controller.planning.policy import preference_order
from controller.planning.tolerance import tolerance_of


def _by_priority(fleet: Fleet) -> list[Slot]:
    order = preference_order(fleet.fhpa, [s.cluster for s in fleet.slots.values()])
    return [fleet.slots[n] for n in order]


def _level(fleet: Fleet, slot: Slot) -> int:
    return priority(fleet.fhpa.spec.preferences, slot.cluster)


def _above(fleet: Fleet, ranked: list[Slot], slot: Slot) -> list[Slot]:
    """The clusters of a strictly higher priority than ``slot``'s, preferred first."""
    level = _level(fleet, slot)
    return [s for s in ranked if _level(fleet, s) > level]


def _below(fleet: Fleet, ranked: list[Slot], slot: Slot) -> list[Slot]:
    """The clusters of a strictly lower priority than ``slot``'s."""
    level = _level(fleet, slot)
    return [s for s in ranked if _level(fleet, s) < level]


def scale_up(fleet: Fleet) -> bool:
    """Move max from saturated high-priority clusters to the next by priority. True if anything moved."""
    if not policy_of(fleet.fhpa).tiered:
        return False
    ranked = _by_priority(fleet)
    moved = False
    for index, slot in enumerate(ranked):
        if not fleet.pending_past_delay(slot):
            continue
        new_max = slot.scheduled_cap
        freed = slot.max_replicas - new_max
        slot.saturated = True
        if freed <= 0:
            continue
        target = _next_with_room(fleet, ranked[index + 1 :])
        if target is None:
            continue
        slot.max_replicas = new_max
        target.max_replicas += freed
        # the pods that pend here are what the next cluster must run: raise it by that many now rather
        # than let its HPA ramp up from what it runs (at least 1, at most its new max)
        moved_pods = min(target.current + max(slot.cluster.pending_replicas, 1), target.max_replicas)
        if moved_pods > target.current:
            fleet.write_replicas(
                target,
                moved_pods,
                f"priority scale-up: takes the {slot.cluster.pending_replicas} pods that pend in {slot.name}",
            )
        fleet.event(
            "ScaledAcrossClusters",
            f"{slot.name} holds {slot.cluster.pending_replicas} unschedulable pods: max {new_max + freed}"
            f" -> {new_max}, {freed} moved to {target.name} (max now {target.max_replicas})",
        )
        moved = True
    return moved


def _next_with_room(fleet: Fleet, lower: list[Slot]) -> Slot | None:
    """The next cluster down the priority order that may receive replicas and is not saturated."""
    return next(
        (s for s in lower if s.can_receive and not s.saturated and not fleet.pending_past_delay(s)),
        None,
    )


def _load_falling(fleet: Fleet) -> bool:
    """Is the load dropping? (Every cluster sees the same per-pod load, so one cluster's sign will do.)

    A member HPA wants fewer replicas than run, holds a scale-down back in its stabilization window
    (AbleToScale reason ScaleDownStabilized), or has scaled down since the last pass to below its max
    (a drop to the max is the controller's own capping, not the load). An HPA that cannot read its
    metrics keeps a stale recommendation, which is no sign of the load either way.
    """
    if any(fleet.wants_more(s) or s.cluster.pending_replicas > 0 for s in fleet.slots.values()):
        return False  # some cluster still wants more: a stabilized scale-down elsewhere is noise
    for slot in fleet.slots.values():
        hpa = slot.cluster.hpa
        if slot.held or hpa is None or not hpa.owned or blind_reason(slot.cluster) is not None:
            continue  # a member HPA that cannot read its metrics says nothing about the load
        able = hpa.condition("AbleToScale")
        if hpa.desired_replicas < slot.cluster.current_replicas:
            return True
        if able is not None and able.reason == "ScaleDownStabilized":
            return True
        dropped = slot.previous_current is not None and slot.cluster.current_replicas < slot.previous_current
        if dropped and slot.cluster.current_replicas < hpa.max_replicas:  # not our max (or write) capping it
            return True
    return False


def _demand_fell(fleet: Fleet) -> bool:
    """Has a member HPA decided to scale down, past its scale-down stabilization window?

    A native HPA reports a lower desired count (or scales down) only once the window has passed, the
    user's ``behavior.scaleDown`` included, so this is the fleet's demand falling, never the per-pod
    load of one moment: when a higher tier's pods come back, every HPA sees its load per pod fall
    (ScaleDownStabilized) while the fleet serves the same traffic, and the window keeps the lower tier
    warm for the next blip, as a lone native HPA would.
    """
    if any(fleet.wants_more(s) or s.cluster.pending_replicas > 0 for s in fleet.slots.values()):
        return False
    for slot in fleet.slots.values():
        hpa = slot.cluster.hpa
        if slot.held or hpa is None or not hpa.owned or blind_reason(slot.cluster) is not None:
            continue
        if hpa.desired_replicas < slot.cluster.current_replicas:
            return True
        dropped = slot.previous_current is not None and slot.cluster.current_replicas < slot.previous_current
        if dropped and slot.cluster.current_replicas < hpa.max_replicas:
            return True
    return False


def _sheds(slot: Slot) -> bool:
    """Is the cluster above its min with an HPA that wants fewer than it runs (now, once its
    stabilization window lets it: ScaleDownStabilized, or below the min it is held at: ScalingLimited
    TooFewReplicas), that has just stepped down, or pinned itself (held above what its HPA would keep
    until the clusters below it are done)? A pinned cluster above waits only for these.

    A native HPA descends in steps, and the sync that makes a step reports the count it stepped from as
    its current and the new count as desired, while the workload already runs the new count. Right after
    a step, "desired equals what runs" is a cluster on its way down, not one that wants no fewer: read
    as the latter, the pins above would be released between two steps and every tier would shed at once.
    The HPA's next sync says which it is (ScaleDownStabilized again, or its current equal to desired)."""
    hpa = slot.cluster.hpa
    if slot.held or slot.max_replicas <= 0 or slot.current <= slot.min_replicas:
        return False
    if slot.pin is not None:
        return True
    if slot.replicas is not None and slot.replicas > slot.cluster.current_replicas:
        return False  # this pass raised it (it takes a spill): whatever its HPA said, it sheds nothing now
    if hpa is None or not hpa.owned:
        return False
    able, limited = hpa.condition("AbleToScale"), hpa.condition("ScalingLimited")
    stabilized = able is not None and able.reason == "ScaleDownStabilized"
    held_up = limited is not None and limited.status == "True" and limited.reason == "TooFewReplicas"
    stepped = hpa.desired_replicas < hpa.current_replicas  # the HPA's own status: it just scaled down
    return hpa.desired_replicas < slot.cluster.current_replicas or stabilized or held_up or stepped


def _below_its_cap(slot: Slot) -> bool:
    """The load fell below what a capped cluster holds: its HPA wants fewer than its max, none pend."""
    hpa = slot.cluster.hpa
    if hpa is None or not hpa.owned or slot.cluster.pending_replicas > 0:
        return False
    return hpa.desired_replicas < slot.max_replicas


def drain_from_bottom(fleet: Fleet, settle_seconds: float) -> bool:
    """When the fleet's demand fell, take the replicas it no longer needs from the lowest priority first.

    The lowest running cluster's max is lowered to what it must keep, which scales it down at once (an
    HPA above its max goes straight to it); the surplus is what runs beyond what the member HPAs'
    metrics ask for (``burst.surplus``). Only a fall of demand starts a drain (:func:`_demand_fell`:
    an HPA that decided to scale down past its stabilization window), so a higher tier that comes back
    after a blip leaves the lower tier warm for the window. The freed max goes to the clusters of a
    strictly higher priority, each up to its room (DESIGN §3 Capacity cap); what none has room for is
    not drained, and that cluster's own HPA scales down as a lone one would. One tier per pass; a
    cluster whose max moved within ``settle_seconds`` is left to settle first. Nothing is drained
    while pods are still starting anywhere, nor in favour of a cluster that failed over within the
    hour: the cluster that stood in for it keeps serving (as in keep-what-runs), or the flapper's next
    outage, under its grown grace, would leave the floor to what was drained.
    """
    if not policy_of(fleet.fhpa).tiered or not _demand_fell(fleet):
        return False
    if any(
        s.cluster.current_replicas > s.cluster.ready_replicas for s in fleet.slots.values() if s.can_receive
    ):
        return False  # pods are still starting somewhere: an HPA asked for them, and they are not surplus
    extra = burst.surplus(fleet)
    ranked = [s for s in _by_priority(fleet) if s.can_receive and s.max_replicas > 0]
    if extra <= 0 or len(ranked) < 2:
        return False
    for slot in reversed(ranked):
        above = _above(fleet, ranked, slot)
        if not above or slot.current <= slot.hpa_min:
            continue
        if any(s.flapped for s in above):
            return False
        moved = (
            slot.trend_since is not None and (fleet.now - slot.trend_since).total_seconds() < settle_seconds
        )
        if moved:
            return False
        old = slot.max_replicas
        room = _room_above(above)
        new_max = max(slot.current - extra, slot.hpa_min, old - (old if room is None else room))
        if slot.current - new_max < max(2, -(-slot.current // 10)):
            return False  # a step of one replica or a few percent is its HPA's own business
        slot.max_replicas = new_max
        slot.drained_at = fleet.now
        given = _give_up_the_order(above, old - new_max)
        fleet.event(
            "DrainedFirst",
            f"{slot.name}: the demand fell; lower priorities give up replicas first: max {old} -> "
            f"{slot.max_replicas}, back to " + ", ".join(f"{n} +{k}" for n, k in given),
        )
        return True
    return False


def _room_of(slot: Slot) -> int | None:
    """The max a higher cluster can still take: up to its known room (None: unknown, unlimited);
    nothing when Saturated (full) or unable to receive."""
    if slot.saturated or not slot.can_receive:
        return 0
    room = slot.cluster.available_replicas
    return None if room is None else max(0, room - slot.max_replicas)


def _room_above(above: list[Slot]) -> int | None:
    """What the clusters above can take in all (None: one of them has unknown room, unlimited)."""
    rooms = [_room_of(s) for s in above]
    return None if any(r is None for r in rooms) else sum(r or 0 for r in rooms)


def _give_up_the_order(above: list[Slot], freed: int) -> list[tuple[str, int]]:
    """Hand ``freed`` max to the clusters above, preferred first, each up to its room (the caller
    frees no more than they hold in all)."""
    given: list[tuple[str, int]] = []
    for s in above:
        room = _room_of(s)
        take = freed if room is None else min(room, freed)
        if take > 0:
            s.max_replicas += take
            given.append((s.name, take))
            freed -= take
    return given


def _firm_room(slot: Slot) -> int | None:
    """What the cluster holds now without a node having to come (None: unknown)."""
    room = slot.cluster.capacity
    return slot.cluster.available_replicas if room is None else room.firm


def _freeable(slot: Slot) -> int:
    """Of what a lower cluster runs above its min, the pods whose leaving lets its nodes go.

    Moving the pods on the nodes its min keeps (``Slot.kept_pods``) up the order would only add to what the
    preferred cluster runs. When the node shape is unknown, every replica above the min counts."""
    return max(0, slot.current - slot.kept_pods)


def _lets_nodes_go(lower: list[Slot], take: int) -> bool:
    """Does taking ``take`` replicas take all that the lower clusters run beyond the nodes their mins
    keep, each of them of a known node shape? Then at least one node of theirs goes, however few
    pods that is: two pods that keep a node of ten are worth moving, where two of a hundred that
    leave every node in use are not."""
    givers = [s for s in lower if _freeable(s) > 0]
    shaped = all(s.cluster.capacity is not None and s.cluster.capacity.pods_per_node for s in givers)
    return bool(givers) and shaped and take >= sum(_freeable(s) for s in givers)


def _settled(fleet: Fleet) -> bool:
    """Every running cluster's HPA reports its metrics and wants what runs, no pod pends, is refused or
    is starting anywhere, and the load does not fall."""
    for slot in fleet.slots.values():
        cluster = slot.cluster
        hpa = cluster.hpa
        if slot.current > 0 and (hpa is None or not hpa.owned or hpa.metric_ratio is None):
            return False
        if hpa is not None and hpa.owned and hpa.desired_replicas != cluster.current_replicas:
            return False  # an HPA still on its way somewhere: the load is not steady
        if cluster.pending_replicas > 0 or cluster.refused_replicas > 0 or fleet.wants_more(slot):
            return False
        if slot.can_receive and cluster.current_replicas > cluster.ready_replicas:
            return False
    return not _load_falling(fleet)


def _moved_lately(fleet: Fleet, settle_seconds: float) -> bool:
    """Did a pass before this one write replicas or move a max within ``settle_seconds``?"""
    return any(
        when is not None and (fleet.now - when).total_seconds() < settle_seconds
        for s in fleet.slots.values()
        for when in (s.last_write, s.trend_since)
    )


def take_back_up(fleet: Fleet, settle_seconds: float) -> bool:
    """Room that returns to a preferred cluster takes back the load that lower-priority ones run.

    A spill leaves the load where it went: when the preferred cluster's nodes come back (a drain
    ends, nodes are added by hand), every member HPA sees its pods at target and none moves, so a
    lower tier whose nodes come and go with its pods (a cloud node group) keeps paying for what the
    preferred one could hold. Under a steady load the preferred cluster is pinned (its HPA's
    minReplicas raised) to what it runs plus what its firm room holds of such clusters' replicas above
    their mins; their HPAs then see their load fall and shed it. The pin holds for their scale-down
    window plus ``settle_seconds`` (the pods it adds must start and turn Ready first,
    :func:`_holds_a_take_back`), then goes once they shed no more, as after any drain. While any pin
    stands, nothing more is taken: the pods below that it is moving still run there, and counted
    again they would be taken twice. Only firm room counts: elastic room would make nodes come to
    move load that already runs. Only pods beyond the nodes a lower cluster's min keeps are taken
    (:func:`_freeable`): the others would leave no node to let go.
    A lower cluster of fixed nodes keeps its share: moving it saves nothing, and leaves fewer HPAs to
    grow side by side in the next burst. After any replica write or max move of ours the fleet gets
    ``settle_seconds`` to show where its load went first.
    """
    policy = policy_of(fleet.fhpa)
    if not (policy.tiered or policy.elastic_first):
        return False
    if _moved_lately(fleet, settle_seconds) or not _settled(fleet):
        return False
    ranked = [s for s in _by_priority(fleet) if s.can_receive and s.max_replicas > 0]
    if any(s.pin is not None for s in ranked):
        return False  # pods are on their way up the order already: the clusters below still run them
    for slot in ranked:
        lower = _givers(fleet, ranked, slot)
        excess = sum(_freeable(s) for s in lower)
        firm = _firm_room(slot)
        if firm is None or excess <= 0 or slot.current < slot.hpa_min:
            continue
        take = min(min(firm, slot.max_replicas) - slot.current, excess)
        if take <= 0 or (take < max(2, -(-slot.current // 10)) and not _lets_nodes_go(lower, take)):
            continue  # a step of one replica or a few percent is not worth moving pods for
        if not _sheds_after(fleet, lower, take):
            continue  # the pods would be added, not moved: the clusters below would keep theirs
        slot.pin = slot.current + take
        slot.take_back_until = fleet.now + timedelta(seconds=scale_down_window(fleet) + settle_seconds)
        fleet.event(
            "Pinned",
            f"{slot.name}: room for {take} more of what lower-priority clusters run: minReplicas pinned "
            f"at {slot.pin} while they scale down",
        )
        return True
    return False


def _givers(fleet: Fleet, ranked: list[Slot], slot: Slot) -> list[Slot]:
    """The clusters a take-back into ``slot`` takes from: under Prioritized those of a strictly lower
    priority (the same priority is not lower); under the policies that shed node groups first, every
    cluster on a node group when ``slot`` is of fixed room. Either way only clusters that pay by the
    node: moving load off fixed room saves nothing."""
    return [s for s in _under(fleet, ranked, slot) if s.pays_per_node]


def _under(fleet: Fleet, ranked: list[Slot], slot: Slot) -> list[Slot]:
    """The clusters a pin on ``slot`` is over: a strictly lower priority under a tiered policy, else
    the node groups below a cluster of fixed room (:func:`_elastic_below`)."""
    if policy_of(fleet.fhpa).tiered:
        return _below(fleet, ranked, slot)
    return _elastic_below(fleet, ranked, slot)


def _sheds_after(fleet: Fleet, lower: list[Slot], take: int) -> bool:
    """Would pinning ``take`` more replicas up the order make a cluster below shed load?

    Every cluster sees the same load per pod, so ``take`` more pods lower every member HPA's metric
    ratio by the factor running / (running + take). A lower cluster's HPA sheds only once its ratio
    falls below its tolerance; within the band it keeps what it runs, and the pin adds ``take`` pods
    to the fleet instead of moving them (a fleet at 96% of target that takes 2 of 35 pods back sits at
    91% with 37). The ratio read is each giver's own HPA's; one without metrics moves nothing."""
    running = sum(s.current for s in fleet.slots.values() if s.can_receive)
    band = tolerance_of(fleet.fhpa)
    for slot in lower:
        hpa = slot.cluster.hpa
        if _freeable(slot) <= 0 or hpa is None or hpa.metric_ratio is None or running <= 0:
            continue
        if band.asks_fewer(hpa.metric_ratio * running / (running + take)):
            return True
    return False


def _fit_pin(slot: Slot) -> None:
    """A pin never holds a cluster above what it can hold now. A pin is set within the cluster's room,
    but nodes go (a drain, a spot interruption): a pin left above the room would make the cluster's HPA
    start pods that pend as soon as its max allows, and the spill would take the max straight back."""
    room = slot.cluster.available_replicas
    if slot.pin is not None and room is not None and slot.pin > room:
        slot.pin = max(room, 1)


def _fit_pin_to_load(fleet: Fleet, ranked: list[Slot], slot: Slot, below: list[Slot]) -> None:
    """A pin never holds a cluster above what the fleet's load still needs of it.

    A pin keeps a preferred cluster at its peak while the tiers below shed; when the load falls far
    and fast (the end of a campaign), the lower tiers shed one stabilization window per step and the
    pin would hold the whole peak, and on a node group every node of it, long after the load left.
    So once the load asks for fewer replicas than this cluster and the others of its priority or above
    run, beyond the HPA's tolerance, the pin is lowered to the load's need less what those others run
    and what the nodes the lower clusters' mins keep hold (``Slot.kept_pods``). The cluster's own HPA then
    descends at its pace, as a lone native HPA would, and the tiers below still shed first: they are
    never asked for less than their kept nodes hold. A pin that takes load back up the order
    (:func:`take_back_up`) holds no more than the load, and is left alone. ``below``: the clusters
    the pin is over (a lower priority, or the node groups under a policy that sheds them first); the
    others count as "of its priority or above".

    Only a cluster that pays by the node (``Slot.pays_per_node``) is lowered: held on fixed room, the
    peak costs nothing more, and lowered, its HPA would shed beside the lower tiers' instead of
    before them, leaving the burst's pods on the clusters below (on-prem down to the load while the
    cloud still ran three times as many).
    """
    asked = burst.asked_for(fleet)
    if asked is None or slot.pin is None or not slot.pays_per_node:
        return
    reachable = [s for s in ranked if s.can_receive and s is not slot]
    under = {id(s) for s in below}
    others = sum(s.current for s in reachable if id(s) not in under)
    if asked >= (1 - tolerance_of(fleet.fhpa).down) * (others + slot.current):
        return  # the load still needs what this cluster and those above it run
    kept = sum(min(s.current, s.kept_pods) for s in reachable if id(s) in under)
    fit = max(asked - others - kept, slot.min_replicas)
    if slot.pin - fit < max(2, -(-slot.pin // 10)):
        return  # a step of one replica or a few percent is its HPA's own business
    fleet.event(
        "Pinned",
        f"{slot.name}: the load needs {asked} replicas in all; minReplicas lowered from {slot.pin} to "
        f"{fit} while lower-priority clusters scale down",
    )
    slot.pin = fit


def _holds_a_take_back(fleet: Fleet, slot: Slot) -> bool:
    """Does the cluster's pin still hold a take-back (:func:`take_back_up`)? Then it is not judged yet.

    The pods the pin adds must start and turn Ready before the HPAs below see their load fall, and
    those HPAs then keep their count for their scale-down window before they shed. Judged at the next
    pass, as a drain's pin is, the pin was released before they could shed, the preferred cluster's
    HPA gave the pods back, and the next take-back took the same pods again. Once the hold is over the
    pin goes as any other: when no cluster below sheds any more."""
    if slot.take_back_until is None:
        return False
    if fleet.now < slot.take_back_until and slot.pin is not None:
        return True
    slot.take_back_until = None
    return False


def _elastic_below(fleet: Fleet, ranked: list[Slot], slot: Slot) -> list[Slot]:
    """Under a policy that sheds node groups first, the clusters a cluster of fixed room is pinned over:
    those that grow and shrink nodes with their pods and run pods beyond the nodes their mins keep.

    After a burst their pods are what the fleet pays for by the node, while pods on fixed room cost
    nothing more: held at what it runs, the fixed cluster keeps its share and their HPAs shed theirs,
    so whole nodes go first (:func:`_frees_nodes`). A cluster that grows nodes itself is pinned over
    nothing."""
    if slot.pays_per_node:
        return []
    return [s for s in ranked if s is not slot and s.pays_per_node and _frees_nodes(fleet, s)]


def _frees_nodes(fleet: Fleet, slot: Slot) -> bool:
    """Does the cluster's shedding let nodes go? Not once a node group's cluster runs only what the
    nodes its min keeps hold (:func:`_freeable`): those pods cost nothing more where they are, and
    a pin held above for them would only move them onto the pinned cluster. Under scalingToZero the
    lowest tier's nodes go too, once it sits at its min (DESIGN §4 Scaling to zero), so every step
    down counts."""
    if not slot.pays_per_node or fleet.fhpa.spec.effective_scaling_to_zero:
        return True
    return _freeable(slot) > 0


def pin_and_release(fleet: Fleet) -> bool:
    """Pin higher-priority clusters while lower ones shed replicas; release when they are done.

    A pin is released once every cluster of a strictly lower priority is at its min or its HPA wants
    no fewer replicas than it runs (:func:`_sheds`): one that holds steady above its min would
    otherwise keep every cluster above it at its peak. Returns True when a pin was released (the
    caller then lets unused max flow back up).

    No pin is taken while a cluster of the fleet failed over within the hour, as no drain is made in
    its favour: the stand-ins keep what they run and the member HPAs shed side by side. A pin moves
    load up the order at the lower HPAs' pace, one stabilization window per step; right after a
    failover that holds the preferred tier at its peak long after the load fell, and the load it
    pulls up would be left to the flapper's next outage.

    The policies that shed node groups first (``elastic_first``) pin the same way, with the
    clusters whose nodes come and go with their pods (``Slot.pays_per_node``) as the lower tier of the
    clusters of fixed room, for as long as they run pods beyond the nodes their mins keep
    (:func:`_elastic_below`).
    """
    policy = policy_of(fleet.fhpa)
    if not (policy.tiered or policy.elastic_first):
        return False
    lower_words = "lower-priority clusters" if policy.tiered else "clusters on node groups"
    ranked = _by_priority(fleet)
    falling = _load_falling(fleet)
    after_failover = any(s.flapped for s in ranked)
    released = False
    for slot in ranked:
        _fit_pin(slot)
    for slot in ranked:
        below = _under(fleet, ranked, slot)
        lower = [s for s in below if not s.held and s.max_replicas > 0]
        shedding = any(_sheds(s) and _frees_nodes(fleet, s) for s in lower)
        if slot.assist_until is not None:
            pass  # the pin holds a burst assist's replicas until its own release (burst.release_holds)
        elif _holds_a_take_back(fleet, slot):
            pass
        elif slot.pin is not None:
            if not shedding:
                fleet.event(
                    "Unpinned",
                    f"{slot.name}: {lower_words} are at their min or want no fewer replicas, "
                    f"minReplicas back to {slot.min_replicas}",
                )
                slot.pin = None
                released = True
            else:
                _fit_pin_to_load(fleet, ranked, slot, below)
        elif falling and shedding and not (after_failover or slot.held) and slot.current > slot.min_replicas:
            # what it runs, not clipped to its max: a max cut by the spill may rise again in this very
            # pass (the period optimization), and the member HPA's min follows it (``Slot.hpa_min``);
            # a pin clipped to the old max would be taken again at once, higher, by the next pass
            slot.pin = slot.current
            fleet.event(
                "Pinned",
                f"{slot.name}: minReplicas pinned at {slot.pin} while {lower_words} scale down first",
            )
            _fit_pin_to_load(fleet, ranked, slot, below)
        draining = any(s.current > s.min_replicas for s in lower)
        if policy.tiered and slot.saturated and lower and not draining and _below_its_cap(slot):
            # every lower-priority cluster is back at its min and this one's HPA wants fewer than it may
            # run: the spill is no longer in use. (A cluster that just received the spill starts at its
            # min, so "lower ones at their min" alone would hand the max straight back; and an HPA the
            # cap just brought down reports desired = max, not limited, until it computes again.)
            slot.saturated = False
            released = True
    return released
