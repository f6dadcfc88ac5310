"""Keeping member maxes where the load is (DESIGN §4): period and trigger optimization, min redistribution.

Period optimization gathers the slack (max above what a cluster runs) and hands it out again by the
policy's weights, so the member HPAs can absorb the next burst where the policy prefers it even while
the control plane is down. Trigger optimization reacts sooner: a cluster whose pods cannot be
scheduled keeps only what it holds (ready or starting) and its freed max goes to the others. The
period optimization never drops a max below what runs, and the maxes keep summing to F.max.
"""

from __future__ import annotations

from datetime import timedelta

from controller.planning.fleet import Fleet, Slot
from controller.planning.policies import policy_of
from controller.planning.policy import available, capped_split, excess_home, preference_order

DEFAULT_SCALE_DOWN_WINDOW = 300
"""The native HPA's scale-down stabilization window when behavior does not set one."""
TREND_MEMORY = timedelta(hours=1)
"""How long a max's last direction holds small reversals back (the calm promise counts an hour)."""


def floor_of(slot: Slot) -> int:
    """What a cluster keeps through an optimization: what it runs, and at least its HPA's min."""
    return min(slot.max_replicas, max(slot.current, slot.hpa_min))


def capped_shares(
    fleet: Fleet, recipients: list[Slot], amount: int, base: dict[str, int]
) -> tuple[dict[str, int], int]:
    """Share ``amount`` among ``recipients`` by the policy's capped split (DESIGN §3 Capacity cap), each
    up to the room its known available leaves above ``base`` (what it keeps). Returns the shares and the
    excess nobody has room for: a full cluster is not handed max its pods would pend against (the
    trigger would take it straight back: churn)."""
    capacity: dict[str, int | None] = {}
    for slot in recipients:
        room = available(slot.cluster)
        capacity[slot.name] = None if room is None else max(0, room - base[slot.name])
    return capped_split(fleet.fhpa, amount, [s.cluster for s in recipients], capacity)


def redistribute_slack(fleet: Fleet, recipients: list[Slot], amount: int) -> dict[str, int]:
    """Add ``amount`` of max to ``recipients`` by the capped split, each up to its room above its max;
    what none has room for goes where §3 puts the excess (:func:`excess_home`)."""
    shares, excess = capped_shares(fleet, recipients, amount, {s.name: s.max_replicas for s in recipients})
    if excess and recipients:
        first = excess_home(fleet.fhpa, [s.cluster for s in recipients])
        shares[first] = shares.get(first, 0) + excess
    return shares


def excess_of(slot: Slot) -> int:
    """The max a cluster holds above both what it keeps and its known room: the excess it carries."""
    room = available(slot.cluster)
    return 0 if room is None else max(0, slot.max_replicas - max(floor_of(slot), room))


def leave_excess_in_place(
    fleet: Fleet, movable: list[Slot], recipients: list[Slot], excess: int
) -> dict[str, int]:
    """Where the max that fits nowhere goes: back to the clusters that carry it now, the most preferred
    first, each up to what it carries; only what they did not carry (room shrank) goes where §3 puts
    the excess (:func:`excess_home`). Pods that fit nowhere are not shuffled from cluster to cluster
    (DESIGN §4 Period optimization, promise 4)."""
    kept: dict[str, int] = {}
    order = preference_order(fleet.fhpa, [s.cluster for s in movable])
    receiving = {s.name for s in recipients}
    for name in order:
        take = min(excess, _carried(fleet.slots[name], name in receiving))
        if take > 0:
            kept[name] = take
            excess -= take
    if excess > 0:
        first = excess_home(fleet.fhpa, [s.cluster for s in recipients])
        kept[first] = kept.get(first, 0) + excess
    return kept


def _carried(slot: Slot, receives: bool) -> int:
    """What a cluster put into the slack that nobody else has room for, and so keeps.

    A cluster that takes shares gets its room back through them and keeps only the excess above it. A
    full one (Saturated) takes none, so it keeps all it gave: its max above what it runs, excess or
    not. Read as its excess alone, the part between what it runs and its room went to the excess's
    home, above that cluster's room too, every period: 2 of max a minute from a quota-bound on-prem
    to a cloud already at its room, 100 to 132 (found by a user-level review)."""
    return excess_of(slot) if receives else max(0, slot.max_replicas - floor_of(slot))


def optimize(fleet: Fleet, reason: str) -> bool:
    """Each max becomes floor + its share of the fleet's slack. True when any max changed.

    The slack is shared by the capped split, each share up to the cluster's room; the excess stays
    where it is (:func:`leave_excess_in_place`). A deadband: a max that would turn back against the way
    it last moved holds the whole optimization back (:func:`_within_band` says when), unless a cluster
    at its max presses for more. The shares follow the replicas, and replicas wander at a steady load
    (a scale-down stabilization here, a neighbour's outage there): without the band each period would
    nudge the maxes back and forth (DESIGN §4 promise 4). A first move, or one that keeps its
    direction, is never held back.
    """
    movable = [s for s in fleet.ordered() if not s.held]
    recipients = [s for s in movable if s.can_receive and not s.saturated]
    if not recipients:
        return False
    slack = sum(s.max_replicas - floor_of(s) for s in movable)
    shares, excess = capped_shares(fleet, recipients, slack, {s.name: floor_of(s) for s in recipients})
    kept = leave_excess_in_place(fleet, movable, recipients, excess)
    before = {s.name: s.max_replicas for s in movable}
    target = {s.name: floor_of(s) + shares.get(s.name, 0) + kept.get(s.name, 0) for s in movable}
    if _within_band(fleet, movable, target) and not _floor_needs_it(fleet, movable, target):
        return False
    for slot in movable:
        slot.max_replicas = target[slot.name]
    changed = {
        n: (m, fleet.slots[n].max_replicas) for n, m in before.items() if m != fleet.slots[n].max_replicas
    }
    if changed:
        moves = ", ".join(f"{n} {a}->{b}" for n, (a, b) in sorted(changed.items()))
        fleet.event("Optimized", f"{reason}: slack {slack} redistributed, max {moves}")
    return bool(changed)


def _floor_needs_it(fleet: Fleet, slots: list[Slot], target: dict[str, int]) -> bool:
    """Do the maxes as they stand hold less of the floor than the new ones would? Then calm gives way:
    a min never passes its max, so while max sits where there is no room (a cluster lost capacity) the
    mins cannot hold F.min, and the floor outranks a small reversal (DESIGN §4 promise 1)."""
    rooms = {s.name: available(s.cluster) for s in slots}
    if any(r is None for r in rooms.values()):
        return False
    floor = min(fleet.fhpa.spec.effective_min, sum(r or 0 for r in rooms.values()))

    def holds(maxes: dict[str, int]) -> int:
        return sum(min(m, rooms[n] or 0) for n, m in maxes.items())

    now = holds({s.name: s.max_replicas for s in slots})
    return now < floor and holds(target) > now


def _tolerance(max_replicas: int) -> int:
    """How far a max may be from its share before a period optimization moves it: 10%, at least 2."""
    return max(2, -(-max_replicas // 10))


def _within_band(fleet: Fleet, slots: list[Slot], target: dict[str, int]) -> bool:
    """Would some max turn back soon after its last move? Then the optimization skips, unless a cluster
    at its max presses for more: it may need the room for a burst now.

    A max that went up is not lowered again by a small step (:func:`_tolerance`) within the hour. A
    cluster drained lately (its max put below what it ran) gets no max back at all while its HPA's
    scale-down window still remembers the higher count: with the room, the HPA would climb straight back
    to it (its recommendation is the highest of the window), and the next drain would follow."""
    if any(target[s.name] > s.max_replicas and fleet.presses_for_more(s) for s in slots):
        return False
    window = scale_down_window(fleet)
    for slot in slots:
        change = target[slot.name] - slot.max_replicas
        drained = slot.drained_at is not None and (fleet.now - slot.drained_at).total_seconds() < window
        if change > 0 and drained:
            return True
        recent = slot.trend_since is not None and fleet.now - slot.trend_since < TREND_MEMORY
        if change == 0 or not recent or slot.trend == 0 or change * slot.trend > 0:
            continue
        if abs(change) <= _tolerance(slot.max_replicas):
            return True
    return False


def scale_down_window(fleet: Fleet) -> float:
    """The member HPAs' scale-down stabilization window (the FederatedHPA's behavior; 300 s unset)."""
    behavior = fleet.fhpa.spec.behavior
    rules = behavior.scale_down if behavior is not None else None
    seconds = rules.stabilization_window_seconds if rules is not None else None
    return float(DEFAULT_SCALE_DOWN_WINDOW if seconds is None else seconds)


def trigger(fleet: Fleet) -> bool:
    """Trigger optimization (the policies that are not tiered): cap clusters that cannot schedule.

    A cluster with unschedulable pods past the delay keeps max = what it holds (``Slot.scheduled_cap``:
    ready at least, as DESIGN says; pods already scheduled and starting are not killed) and is marked
    Saturated; its freed max goes to the others by the policy's weights.
    """
    if policy_of(fleet.fhpa).tiered:  # a tiered policy spills down its order instead (priority.py)
        return False
    capped = []
    for slot in fleet.ordered():
        if not fleet.pending_past_delay(slot):
            continue
        slot.saturated = True
        capped.append(slot)
    return _cap(fleet, capped, "unschedulable pods in {names}", only_to_room=True)


def keep_full_capped(fleet: Fleet) -> bool:
    """After a new assignment, a cluster still marked Saturated keeps max = what it holds (any policy that
    divides the bounds: under Duplicated each cluster's max is F.max, and nothing moves between them)."""
    if not policy_of(fleet.fhpa).divides_bounds:
        return False
    full = [s for s in fleet.ordered() if s.saturated]
    return _cap(fleet, full, "{names} still full after the assignment")


def _cap(fleet: Fleet, slots: list[Slot], why: str, only_to_room: bool = False) -> bool:
    """Cap each slot's max at what it holds and give the freed max to the clusters that can take it.

    ``why`` names the capped clusters where it says ``{names}``.

    ``only_to_room`` (the trigger): only as much moves as the others have room for (a capacity unknown
    counts as room for all); max that no cluster can hold stays where it is, and so do its pending
    pods. Handing it on would only make them pend in the next full cluster, which the trigger caps in
    turn, and the max would go round the fleet (calm, promise 4: pods that cannot be scheduled anywhere
    are not bounced). After an assignment (``keep_full_capped``) everything moves as the period
    optimization would move it, so that the next period finds nothing to undo.
    """
    capped = [(s, s.scheduled_cap) for s in slots if s.scheduled_cap < s.max_replicas]
    others = [s for s in fleet.ordered() if s.can_receive and not s.saturated]
    if not capped or not others:
        return False
    freed = sum(slot.max_replicas - new_max for slot, new_max in capped)
    rooms = [available(s.cluster) for s in others]
    if only_to_room and all(r is not None for r in rooms):
        freed = min(
            freed,
            sum(max(0, r - s.max_replicas) for r, s in zip(rooms, others, strict=True) if r is not None),
        )
    if freed <= 0:
        return False
    left = freed
    for slot, new_max in capped:
        take = min(slot.max_replicas - new_max, left)
        slot.max_replicas -= take
        left -= take
    shares = redistribute_slack(fleet, others, freed)
    for slot in others:
        slot.max_replicas += shares.get(slot.name, 0)
    names = ", ".join(slot.name for slot, _ in capped)
    fleet.event("ScaledAcrossClusters", f"{why.format(names=names)}: {freed} max moved to the other clusters")
    return True


def release_saturation(fleet: Fleet) -> bool:
    """A saturated cluster whose capacity grew past its max (e.g. a cluster-autoscaler added nodes) may
    receive max again. Unknown capacity keeps the mark until the next assignment."""
    released = False
    for slot in fleet.ordered():
        amount = available(slot.cluster)
        if (
            slot.saturated
            and amount is not None
            and amount > slot.max_replicas
            and not fleet.pending_past_delay(slot)
        ):
            slot.saturated = False
            released = True
    return released


def redistribute_min(fleet: Fleet) -> bool:
    """Min redistribution: clusters at 0 replicas leave their min share to the running clusters.

    The running clusters' mins are raised, most room first, until they alone hold F.min. A min counts
    and rises only as far as its cluster has room (its max, and what it can hold): a min above that is
    a pod that pends while the floor looks kept. The idle clusters' HPAs keep their min (an HPA over 0
    replicas stays idle), ready for a scale from zero.
    """
    holders = [s for s in fleet.ordered() if s.max_replicas > 0]
    running = [s for s in holders if s.current > 0 or s.held]
    idle = [s for s in holders if s.current == 0 and not s.held]
    if not idle or not running:
        return False
    short = fleet.fhpa.spec.effective_min - sum(
        s.hpa_min if s.held else min(s.hpa_min, _room(s)) for s in running
    )
    raised = False
    while short > 0:
        room = [s for s in running if not s.held and _room(s) > s.min_replicas]
        if not room:
            break
        slot = min(room, key=lambda s: (-(_room(s) - s.min_replicas), s.name))
        take = min(short, _room(slot) - slot.min_replicas)
        slot.min_replicas += take
        short -= take
        raised = True
    if raised:
        fleet.event(
            "MinRedistributed",
            f"clusters at 0 replicas ({', '.join(s.name for s in idle)}) left their min share to the running "
            "clusters",
        )
    return raised


def _room(slot: Slot) -> int:
    """What a cluster can hold under its max: its max, or its available when that is smaller."""
    amount = available(slot.cluster)
    return slot.max_replicas if amount is None else min(slot.max_replicas, max(amount, 0))


def lends(fleet: Fleet, slot: Slot, blip_seconds: float) -> bool:
    """Held (unreachable within its grace) for at least ``blip_seconds``: what it cannot use now, its
    unused max and its part of a shared External metric, goes to the others until it answers."""
    if not slot.held or slot.held_since is None:
        return False
    return (fleet.now - slot.held_since).total_seconds() >= blip_seconds


def lend_held_slack(fleet: Fleet, blip_seconds: float = 0.0) -> bool:
    """A held cluster's max above what it ran goes to the clusters that press for more (any policy).

    A cluster unhealthy within its grace keeps max for what it last ran (keep-what-runs when it comes
    back), but its unused max is of no use to anyone while it does not answer: when its pods stopped
    serving, the load they carried presses on the others, which would wait for the failover to get
    room. Only as much moves as the pressing clusters have room for (capacity known, or unknown as
    unlimited), so nothing pends for it. The maxes keep summing to F.max, so its rejoin, at once,
    breaks no ceiling; and nothing moves on a blip where its pods keep serving (nobody presses). A
    Saturated cluster takes nothing: its pods would pend.

    Calm (promise 4): a cluster held for less than ``blip_seconds`` lends nothing (its pods would
    hardly start before it is back), and a cluster whose max was lowered within the hour takes no
    loan (a cluster that blips again and again would otherwise turn the others' maxes up and down).
    The ceiling counts reachable maxes: a cluster cut off from the controller only, whose pods keep
    serving under its live HPA, may run up to its old max meanwhile (keep_what_returns on its return).
    """
    pressing = [
        s
        for s in fleet.ordered()
        if s.can_receive and not s.saturated and not _lowered_lately(fleet, s) and fleet.presses_for_more(s)
    ]
    lenders = [s for s in fleet.ordered() if lends(fleet, s, blip_seconds) and s.max_replicas > floor_of(s)]
    if not pressing or not lenders:
        return False
    rooms = [available(s.cluster) for s in pressing]
    room = sum(max(0, r - s.max_replicas) for r, s in zip(rooms, pressing, strict=True) if r is not None)
    if any(r is None for r in rooms):
        room = sum(s.max_replicas - floor_of(s) for s in lenders)
    freed = 0
    for slot in lenders:
        take = min(slot.max_replicas - floor_of(slot), room - freed)
        slot.max_replicas -= take
        freed += take
    if freed <= 0:
        return False
    shares = redistribute_slack(fleet, pressing, freed)
    for slot in pressing:
        slot.max_replicas += shares.get(slot.name, 0)
    names = ", ".join(s.name for s in lenders)
    takers = ", ".join(f"{s.name} +{shares[s.name]}" for s in pressing if shares.get(s.name))
    fleet.event(
        "ScaledAcrossClusters",
        f"{names} unreachable within the failover grace: its {freed} unused max moved to the clusters "
        f"pressing for more ({takers})",
    )
    return True


def keep_what_returns(fleet: Fleet) -> bool:
    """A cluster that answers again within its grace keeps max for what it runs (keep-what-runs).

    Its max may have been lowered while it was held (``lend_held_slack`` kept it at what it last
    ran), but a cluster cut off from the controller only, whose pods kept serving, may have grown
    under its live HPA meanwhile. Writing the lowered max would stop serving pods: the difference
    comes back from the others' surplus (max above what they keep), most surplus first. What no
    surplus covers stays short, as F.max demands (the ceiling).
    """
    moved = []
    for slot in fleet.ordered():
        need = slot.current - slot.max_replicas
        if not slot.returned or need <= 0:
            continue
        donors = [
            s for s in fleet.ordered() if s is not slot and s.can_receive and s.max_replicas > floor_of(s)
        ]
        for donor in sorted(donors, key=lambda s: (floor_of(s) - s.max_replicas, s.name)):
            take = min(need, donor.max_replicas - floor_of(donor))
            donor.max_replicas -= take
            slot.max_replicas += take
            need -= take
            if need <= 0:
                break
        moved.append(slot.name)
    if moved:
        fleet.event(
            "ScaledAcrossClusters",
            f"{', '.join(moved)} answers again running more than its max: it keeps what it runs, "
            "from the others' surplus",
        )
    return bool(moved)


def _lowered_lately(fleet: Fleet, slot: Slot) -> bool:
    """Was this cluster's max last moved down within the hour (the calm promise's window)?"""
    return slot.trend < 0 and slot.trend_since is not None and fleet.now - slot.trend_since < TREND_MEMORY


def move_max_for_the_floor(fleet: Fleet) -> bool:
    """Step 5a of the assignment, after it: while the reachable maxes cannot let the mins hold the floor,
    one replica of max at a time moves from the cluster with the most max above its room to the first
    cluster in order of preference with room under its max.

    A cluster whose room went away after the assignment (its nodes lost, its quota cut) keeps max its
    pods pend against, down to the trigger's cap of one; the floor, F.min over the room that remains,
    needs that max where pods can run (DESIGN §4 promise 1). A donor left at max 0 loses its HPA and its
    pending replicas are set to 0, as in §3 step 5a.

    A cluster unreachable within the flag's grace still holds the Ready replicas it last reported, under
    its kept max (its last-known counts carry no pending pods, so what was not Ready is not counted): a
    fault may leave the floor short for the grace, and a blip that moved max for it would move it back
    on the cluster's return (promise 4). Past the flag's grace ``lend_for_the_floor`` takes over.
    """
    slots = [s for s in fleet.ordered() if s.can_receive]
    rooms = {s.name: available(s.cluster) for s in slots}
    if not slots or any(r is None for r in rooms.values()):
        return False
    held = sum(
        min(s.max_replicas, s.cluster.ready_replicas) for s in fleet.ordered() if s.held and not s.held_long
    )
    floor = min(fleet.fhpa.spec.effective_min, held + sum(r or 0 for r in rooms.values()))
    short = floor - held - sum(min(s.max_replicas, rooms[s.name] or 0) for s in slots)
    order = preference_order(fleet.fhpa, [s.cluster for s in slots])
    moved: list[str] = []
    for _ in range(max(short, 0)):
        gaps = {s.name: s.max_replicas - (rooms[s.name] or 0) for s in slots}
        donors = [n for n, g in gaps.items() if g > 0]
        taker = next((n for n in order if gaps[n] < 0 and not fleet.slots[n].saturated), None)
        if not donors or taker is None:
            break
        donor = min(donors, key=lambda n: (-gaps[n], n))
        fleet.slots[donor].max_replicas -= 1
        fleet.slots[taker].max_replicas += 1
        moved.append(f"{donor}->{taker}")
    for slot in slots:
        if slot.max_replicas == 0 and slot.current > 0:
            fleet.write_replicas(slot, 0, "drained: it has no room, and the floor needs its max elsewhere")
    if moved:
        fleet.event(
            "ScaledAcrossClusters",
            f"the maxes could not hold minReplicas {fleet.fhpa.spec.effective_min}: "
            f"{len(moved)} max moved to room ({', '.join(sorted(set(moved)))})",
        )
    return bool(moved)


def lend_for_the_floor(fleet: Fleet) -> bool:
    """A cluster held past the flag's grace lends the max the reachable clusters need for the floor.

    Past the flag's grace the reachable clusters' mins cover F.min on their own (``normalize``), but
    a min never passes its max: when the period optimization had left a reachable cluster's max below
    what it can hold (the held cluster's weight took the slack), the floor stayed short for the whole
    grown grace of a flapping cluster. The held cluster's max above what it ran moves to reachable
    clusters with room, only as far as the floor needs (promise 1; the maxes keep summing to F.max).
    """
    lenders = [s for s in fleet.ordered() if s.held_long and s.max_replicas > floor_of(s)]
    takers = [s for s in fleet.ordered() if s.can_receive and not s.saturated]
    if not lenders or not takers:
        return False
    holds = [
        min(s.max_replicas, r) if (r := available(s.cluster)) is not None else s.max_replicas for s in takers
    ]
    short = fleet.fhpa.spec.effective_min - sum(holds)
    rooms = {s.name: r - s.max_replicas for s in takers if (r := available(s.cluster)) is not None}
    rooms = {n: r for n, r in rooms.items() if r > 0}
    moved = 0
    for slot in lenders:
        while short > 0 and rooms and slot.max_replicas > floor_of(slot):
            name = min(rooms, key=lambda n: (-rooms[n], n))
            slot.max_replicas -= 1
            fleet.slots[name].max_replicas += 1
            short, moved = short - 1, moved + 1
            rooms[name] -= 1
            if rooms[name] <= 0:
                del rooms[name]
    if moved:
        fleet.event(
            "ScaledAcrossClusters",
            f"{', '.join(s.name for s in lenders)} unreachable past the failover grace: {moved} of its "
            "unused max moved to the reachable clusters so that their mins can hold the floor",
        )
    return moved > 0
