"""Scaling clusters to and from zero replicas (DESIGN §4, only with an effective scalingToZero).

A member HPA over a workload at 0 replicas stays idle, as native HPAs do, so going to zero and coming
back are the only replica writes the controller makes against a member HPA it runs. To zero: when every
running cluster sits at its min, the mins add up to more than F.min and the HPAs want fewer, the
least-preferred running cluster goes to 0 (Prioritized: the lowest priority). From zero: when a running
cluster's HPA is at its max and wants more, or holds unschedulable pods past the delay, clusters at 0
are raised to their min (Prioritized: only the highest-priority one). And the floor (DESIGN §3-§4,
promise 1): when the running clusters cannot hold F.min (a new app with every cluster at 0, the only
running cluster failed over), clusters at 0 are started in the policy's order of preference until they
can, each with its min once the mins are raised (:func:`start_for_floor`, :func:`settle_started`).
"""

from __future__ import annotations

from datetime import datetime

from controller.planning.affinity import priority
from controller.planning.firm_first import firm_of
from controller.planning.fleet import Fleet, Slot
from controller.planning.observation import ClusterObservation
from controller.planning.optimization import scale_down_window
from controller.planning.policies import policy_of
from controller.planning.policy import least_preferred, preference_order
from controller.planning.wording import count

WAKE_QUIET_SECONDS = 3600.0
"""After a wake, a cluster is not sent to 0 again for this long: at a load that needs it, zeroing it
again would only wake it again (DESIGN §4, promise 4: at most two switches an hour)."""


def _wants_fewer(slot: Slot, periodic: bool) -> bool:
    """The HPA holds the cluster at its min and wants fewer (ScalingLimited, reason TooFewReplicas).

    A native HPA at min 1 never says so while there is any load (it never recommends 0), so on the
    periodic pass an HPA merely content at its min (desiring no more than min) counts as well. Every
    pod must be ready: a cluster just raised from zero reports a low desire until its pods serve.
    """
    hpa = slot.cluster.hpa
    if hpa is None or not hpa.owned or slot.cluster.ready_replicas < slot.current:
        return False
    if hpa.desired_replicas > hpa.min_replicas:
        return False
    limited = hpa.condition("ScalingLimited")
    return periodic or (
        limited is not None and limited.status == "True" and limited.reason in (None, "TooFewReplicas")
    )


def idle_since(cluster: ClusterObservation, recorded: datetime | None, now: datetime) -> datetime | None:
    """Since when the cluster's HPA has sat at its min wanting no more (``recorded`` carried over from
    status, else now), or None while it wants more, is not ours, or its pods are not all ready. A
    restarted controller reads the same clock, so it zeroes the cluster when its predecessor would."""
    hpa = cluster.hpa
    if hpa is None or not hpa.owned or cluster.current_replicas <= 0:
        return None
    if cluster.ready_replicas < cluster.current_replicas or hpa.desired_replicas > hpa.min_replicas:
        return None
    if cluster.current_replicas > hpa.min_replicas:
        return None
    return recorded or now


def _calm_enough(fleet: Fleet, slot: Slot) -> bool:
    """Scaling to zero's hysteresis: the cluster's HPA has wanted fewer for a full scale-down
    stabilization window (a native HPA would not have scaled down sooner either), and it was not woken
    within the last hour."""
    if slot.idle_since is None:
        return False
    if (fleet.now - slot.idle_since).total_seconds() < scale_down_window(fleet):
        return False
    return _not_woken_lately(fleet, slot)


def _not_woken_lately(fleet: Fleet, slot: Slot) -> bool:
    return slot.woken_at is None or (fleet.now - slot.woken_at).total_seconds() >= WAKE_QUIET_SECONDS


def _zero_slots(fleet: Fleet) -> list[Slot]:
    return [s for s in fleet.ordered() if s.max_replicas > 0 and s.current == 0 and s.can_receive]


def _running(fleet: Fleet) -> list[Slot]:
    return [s for s in fleet.ordered() if s.max_replicas > 0 and s.current > 0 and not s.held]


def _recently_written(fleet: Fleet, settle_seconds: float) -> bool:
    return any(
        s.last_write is not None and (fleet.now - s.last_write).total_seconds() < settle_seconds
        for s in fleet.slots.values()
    )


def _calls_for_more(fleet: Fleet, slot: Slot) -> bool:
    """Does this running cluster call for a cluster at 0 to wake up?

    A tiered policy (Prioritized): not a Saturated cluster. Its spill has already gone down the order
    (``priority.scale_up``, which raises the receiving cluster to at least 1), so its capped HPA wanting
    more must not also wake the next cluster at 0; the receiving cluster calls once it is full itself.
    """
    if policy_of(fleet.fhpa).tiered and slot.saturated:
        return False
    if fleet.pending_past_delay(slot):
        return True
    # "at its max and wants more": an HPA whose max was just raised reports wanting its max while its
    # replicas still ramp up, and one whose max was just lowered (a drain) reports the old count; it
    # calls only once it runs its max and its load asks for more (DESIGN §4: one tier at a time)
    return fleet.presses_for_more(slot)


def _can_hold(slot: Slot) -> int:
    """How many replicas a running cluster can hold under its max: its max, or less if it is full.

    What it runs counts as held only where it is scheduled (observed), never a count just written to
    it: pods beyond its room would pend, and a cluster at 0 must start for them (promise 1).
    """
    room = slot.cluster.available_replicas
    scheduled = max(slot.cluster.current_replicas - slot.cluster.pending_replicas, 0)
    return slot.max_replicas if room is None else min(slot.max_replicas, max(room, scheduled))


def _has_room(slot: Slot) -> bool:
    room = slot.cluster.available_replicas
    return room is None or room > 0


def start_for_floor(fleet: Fleet, reason: str) -> list[Slot]:
    """Start clusters at 0, most preferred first, until the running ones can hold F.min (promise 1).

    A held cluster (unhealthy within its grace) still counts as running: a blip wakes nobody, and the
    floor allows the grace (DESIGN §4 promise 1). Not past the flag's grace, though: a flapper's grace
    grows, and the floor does not wait for it (as its min stops counting in ``normalize``). Each
    started cluster runs at least its min and, together with the others, F.min; a cluster known to
    hold nothing is not started.
    Returns the started slots (see :func:`settle_started` for their final count).
    """
    if not fleet.fhpa.spec.effective_scaling_to_zero:
        return []
    federated_min = fleet.fhpa.spec.effective_min
    holders = [
        s
        for s in fleet.slots.values()
        if s.max_replicas > 0 and ((s.current > 0 and not s.held) or (s.held and not s.held_long))
    ]
    holding = sum(_can_hold(s) for s in holders)
    short = federated_min - sum(s.current for s in holders)
    # a cluster with no room is never started for this: all it could add is a pod that never runs
    zeros = [s for s in _zero_slots(fleet) if s.cluster.workload_found and _has_room(s)]
    started: list[Slot] = []
    for name in preference_order(fleet.fhpa, [s.cluster for s in zeros]):
        if holding >= federated_min:
            break
        slot = fleet.slots[name]
        room = slot.cluster.available_replicas
        wanted = short if room is None else min(short, room)
        replicas = min(slot.max_replicas, max(slot.hpa_min, 1, wanted))
        fleet.write_replicas(slot, replicas, reason)
        started.append(slot)
        holding += _can_hold(slot)
        short -= replicas
    if started:
        fleet.event(
            "ScaledFromZero",
            f"the running clusters cannot hold minReplicas {federated_min}: "
            f"{', '.join(s.name for s in started)} started",
        )
    return started


def settle_started(started: list[Slot], reason: str) -> None:
    """After the mins are raised (min redistribution), each started cluster runs at least its min."""
    for slot in started:
        if slot.replicas is not None:
            slot.replicas = min(slot.max_replicas, max(slot.replicas, slot.hpa_min, 1))
            slot.replica_reason = reason


def start_idle(fleet: Fleet) -> bool:
    """Without scalingToZero no cluster idles at 0 under an HPA (a native HPA over 0 replicas never
    scales): one that got max after the assignment (an optimization, a trigger) starts at its min."""
    if fleet.fhpa.spec.effective_scaling_to_zero:
        return False
    idle = [s for s in _zero_slots(fleet) if s.cluster.workload_found]
    for slot in idle:
        fleet.write_replicas(slot, max(slot.hpa_min, 1), "an HPA over 0 replicas never scales: started")
    return bool(idle)


def scale_from_zero(fleet: Fleet) -> bool:
    """Raise clusters at 0 to their min when the running ones cannot take the load."""
    if not fleet.fhpa.spec.effective_scaling_to_zero:
        return False
    zeros = [s for s in _zero_slots(fleet) if s.cluster.workload_found]
    if not zeros or not any(_calls_for_more(fleet, s) for s in _running(fleet)):
        return False
    if policy_of(fleet.fhpa).tiered:  # one tier at a time: the most preferred cluster at 0 alone
        first = preference_order(fleet.fhpa, [s.cluster for s in zeros])[0]
        zeros = [fleet.slots[first]]
    # a cluster woken because pods pend elsewhere starts with as many as pend (up to its max), not one,
    # less those still starting in the clusters that do not call: started for the same load (a burst
    # assist's, which counts a quota's refused pods too), they would be started twice
    running = _running(fleet)
    calling = [s for s in running if fleet.pending_past_delay(s)]
    pending = sum(s.cluster.pending_replicas for s in calling)
    pending -= sum(max(0, s.current - s.cluster.ready_replicas) for s in running if s not in calling)
    for slot in zeros:  # a cluster that just received max has no min yet: at least 1
        start = max(slot.hpa_min, 1, min(pending, slot.max_replicas))
        fleet.write_replicas(slot, start, "scaling from zero")
    fleet.event(
        "ScaledFromZero",
        "the running clusters cannot take the load: "
        + ", ".join(f"{s.name} started with {count(s.current, 'replica')}" for s in zeros),
    )
    return True


def scale_to_zero(fleet: Fleet, periodic: bool = False, settle_seconds: float = 0) -> bool:
    """Send the least-preferred running cluster to 0 when the fleet idles above F.min.

    ``periodic``: this pass is the period optimization, where an HPA content at its min counts as
    wanting fewer (see :func:`_wants_fewer`). ``settle_seconds``: after any replica write of ours the
    member HPAs get this long to see the load move before the next cluster goes (one at a time).
    """
    if not fleet.fhpa.spec.effective_scaling_to_zero or _recently_written(fleet, settle_seconds):
        return False
    running = _running(fleet)
    if len(running) < 2 or any(fleet.wants_more(s) for s in running):
        return False
    victim_name = least_preferred(fleet.fhpa, [s.cluster for s in running])
    victim = fleet.slots[victim_name] if victim_name else None
    if victim is None or not victim.cluster.workload_found:
        return False
    federated_min = fleet.fhpa.spec.effective_min
    if sum(s.min_replicas for s in running) <= federated_min:  # assigned mins, not pins
        return False  # the mins do not exceed F.min: a zero would only push its min onto the others
    # every running cluster sits at its min and wants fewer, Prioritized too (DESIGN §4)
    if any(s.current != s.hpa_min or not _wants_fewer(s, periodic) for s in running):
        return False
    if sum(s.max_replicas for s in running if s is not victim) < federated_min:
        return False
    if not _calm_enough(fleet, victim):
        return False
    fleet.write_replicas(victim, 0, "scaling to zero")
    fleet.event(
        "ScaledToZero",
        f"every cluster idles at its min and the mins exceed {federated_min}: {victim.name} scaled to 0",
    )
    return True


def drain_lowest_tier(fleet: Fleet, window_seconds: float, settle_seconds: float = 0) -> bool:
    """After a burst, send the lowest running tier to 0 when the tiers above can hold what it runs.

    The zeroing above waits for every running cluster to sit at its min, which a cluster carrying the
    base load never does, so the lowest tier would keep its min, and on an elastic cloud the node under
    it, all day. Here the lowest tier goes to 0 when every replica it runs fits in the firm room (what
    fits now, no node to come) the tiers above have under their maxes, and its HPA has wanted no more
    than it runs for a full scale-down stabilization window (``window_seconds``): neither its HPA nor
    the controller changed its replicas or its max in that time. The others must still hold F.min by
    their maxes and firm room. Its load then lands on the tiers above, whose HPAs take it up; nothing
    pends, so nothing wakes it until they are full again.

    The tiers (:func:`_tiers`): under Prioritized, the lowest-priority running cluster below the
    others; under the policies that shed node groups first (``elastic_first``), the least preferred
    running cluster on a node group whose nodes would go (:func:`_beyond_standing_nodes`), below the
    clusters of fixed room or, in a fleet of node groups alone, below the other node groups (the nodes
    they run have room for its pods): their day began so before the first burst woke it.

    The lowest tier runs no more than the nodes its min keeps hold (``Slot.kept_pods``; its min where
    the node shape is unknown): a member HPA that a burst's fall leaves at 2 pods over a min of 1 holds
    them for good (two pods within the band of tolerance round up to two), so a rule that waited for
    its min never fired, and after the first burst the cloud kept its node every night (on the hybrid
    bench fleets run over two days, the second day cost half again the first). Pods beyond the kept
    nodes leave by the other rules first (the drain, the pins), whole nodes at a time.
    """
    if not fleet.fhpa.spec.effective_scaling_to_zero:
        return False
    if _recently_written(fleet, settle_seconds) or any(s.replicas is not None for s in fleet.slots.values()):
        return False  # a zeroing's load has not reached the clusters above yet: their room is not known
    running = _running(fleet)
    if len(running) < 2 or any(fleet.wants_more(s) or s.cluster.pending_replicas > 0 for s in running):
        return False
    tiers = _tiers(fleet, running)
    if tiers is None:
        return False
    lowest, above = tiers
    if not lowest.cluster.workload_found or not _quiet_on_kept_nodes(fleet, lowest, window_seconds):
        return False
    holds = sum(_firm_under_max(s) for s in above)
    # a pin (a take-back of this very pass, say) already spends the room up to it
    bound = sum(max(s.current, s.hpa_min) for s in above)
    if holds - bound < lowest.current or holds < fleet.fhpa.spec.effective_min:
        return False
    moved = lowest.current
    fleet.write_replicas(lowest, 0, "scaling to zero: the higher tiers have firm room for its replicas")
    fleet.event(
        "ScaledToZero",
        f"{lowest.name}: its {moved} replicas fit in the firm room of "
        f"{', '.join(s.name for s in above)} and its HPA has wanted no more than it runs for "
        f"{window_seconds:.0f}s: scaled to 0",
    )
    return True


def _tiers(fleet: Fleet, running: list[Slot]) -> tuple[Slot, list[Slot]] | None:
    """The running cluster that may go to 0 after a burst, and the clusters that would take its load
    (None: the policy has no such tiers, or the fleet no cluster above)."""
    policy = policy_of(fleet.fhpa)
    if policy.tiered:
        prefs = fleet.fhpa.spec.preferences
        name = least_preferred(fleet.fhpa, [s.cluster for s in running]) or running[-1].name
        lowest = fleet.slots[name]
        above = [s for s in running if priority(prefs, s.cluster) > priority(prefs, lowest.cluster)]
    elif policy.elastic_first:
        groups = [s for s in running if s.pays_per_node]
        group = least_preferred(fleet.fhpa, [s.cluster for s in groups if _beyond_standing_nodes(s)])
        if group is None:
            return None
        lowest = fleet.slots[group]
        # fixed room first (a fixed cluster that is held takes nothing, and stands for none); a fleet
        # of node groups alone packs onto the nodes the others run anyway
        if any(not s.pays_per_node and s.max_replicas > 0 for s in fleet.slots.values()):
            above = [s for s in running if not s.pays_per_node]
        else:
            above = [s for s in groups if s is not lowest]
    else:
        return None
    return (lowest, above) if above else None


def _beyond_standing_nodes(slot: Slot) -> bool:
    """Would the node group's cluster let a node go at 0? Not while every pod it runs sits on the
    nodes its group keeps at its minimum size (``standing_pods``): they stay, paid for, used or not."""
    room = slot.cluster.capacity
    return room is None or slot.current > room.standing_pods


def _firm_under_max(slot: Slot) -> int:
    """What a cluster can run without a node having to come, up to its max."""
    firm = firm_of(slot.cluster)
    return slot.max_replicas if firm is None else min(slot.max_replicas, max(firm, slot.current))


def _quiet_on_kept_nodes(fleet: Fleet, slot: Slot, window_seconds: float) -> bool:
    """The cluster runs no more than the nodes its min keeps hold (its min, where the node shape is
    unknown), every pod ready, its HPA asks for no more than it runs, and neither the HPA nor the
    controller changed its replicas or its max within the window; and the zeroing hysteresis holds
    (at its min: idle for a full window by the status clock; in any case not woken within the hour).
    """
    hpa = slot.cluster.hpa
    if hpa is None or not hpa.owned or slot.current > slot.kept_pods or hpa.desired_replicas > slot.current:
        return False
    if slot.cluster.ready_replicas < slot.current:
        return False
    calm = _calm_enough(fleet, slot) if slot.current <= slot.hpa_min else _not_woken_lately(fleet, slot)
    if not calm:
        return False
    return all(
        when is None or (fleet.now - when).total_seconds() >= window_seconds
        for when in (hpa.last_scale_time, slot.last_write, slot.trend_since, slot.drained_at)
    )
