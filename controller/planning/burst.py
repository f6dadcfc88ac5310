"""Burst assist: when a cluster runs its max and its HPA wants more, start the rest elsewhere now.

A native HPA over a cluster that has just been given room (its max raised by a spill, a cluster
with surplus max but few replicas) ramps up by its own rate limits, from what it runs: from 1 replica
that is several doublings while requests go unserved. The controller knows more: the member HPAs'
metrics (``status.currentMetrics``, :mod:`controller.planning.metric_ratio`) say how many replicas
the fleet's load asks for, and the clusters at their max cannot run them. So the deficit (what the
load asks for, minus every replica running or starting) is started at once in the clusters that have
room under their max, in the policy's order of preference, one tier at a time: a cluster further down
gets replicas only when the ones above it are at their max (DESIGN §4, as the Prioritized spill). The
member HPA's minReplicas holds the written count for its scale-down window (:func:`_hold`), then the
member HPAs take over.

Only while some cluster is held at its max and wants more: below that, every member HPA can still
scale on its own and nothing is written.
"""

from __future__ import annotations

import math
from datetime import timedelta
from decimal import Decimal

from controller.planning.fleet import Fleet, Slot
from controller.planning.optimization import scale_down_window
from controller.planning.policy import preference_order
from controller.planning.tolerance import tolerance_of
from fhpa_api.models import FederatedHPA


def _need(fleet: Fleet) -> tuple[Decimal, int, int] | None:
    """(replicas the load asks for, ready, running or starting) over the reachable clusters.

    Each cluster's ready pods serve its share of the load at its HPA's ratio to target, so the fleet
    needs sum(ratio * ready) pods (a cluster whose HPA reports no metric counts as at its target).
    None when no member HPA reports a metric.
    """
    needed = Decimal(0)
    ready = have = 0
    measured = False
    for slot in fleet.slots.values():
        if not slot.can_receive or slot.max_replicas <= 0:
            continue
        have += _on_their_way(slot)
        ready += slot.cluster.ready_replicas
        hpa = slot.cluster.hpa
        ratio = hpa.metric_ratio if hpa is not None and hpa.owned else None
        measured = measured or ratio is not None
        needed += Decimal(str(ratio if ratio is not None else 1.0)) * slot.cluster.ready_replicas
    return (needed, ready, have) if measured and ready > 0 else None


def _on_their_way(slot: Slot) -> int:
    """The replicas of a cluster that run or will: not those its quota refused (never created) nor those
    nothing in the cluster will place (no node group fits), which a cluster's replica count still
    holds. A count this pass wrote is taken as written."""
    if slot.replicas is not None:
        return slot.current
    cluster = slot.cluster
    return max(0, slot.current - cluster.refused_replicas - cluster.pending_stuck_replicas)


def asked_for(fleet: Fleet) -> int | None:
    """The replicas the fleet's load asks for at target, from the member HPAs' metrics (None: no
    member HPA reports a metric)."""
    need = _need(fleet)
    return None if need is None else math.ceil(need[0])


def deficit(fleet: Fleet) -> int:
    """Replicas the load asks for beyond what runs or starts (0 within the HPA's tolerance, or unknown).
    The pods still starting are already on their way."""
    need = _need(fleet)
    if need is None or need[0] <= (1 + tolerance_of(fleet.fhpa).up) * need[1]:
        return 0
    return max(0, math.ceil(need[0]) - need[2])


def surplus(fleet: Fleet) -> int:
    """Replicas that run beyond what the load asks for, and beyond F.min (0 within the tolerance)."""
    need = _need(fleet)
    if need is None or need[0] >= (1 - tolerance_of(fleet.fhpa).down) * need[1]:
        return 0
    keep = max(math.ceil(need[0]), fleet.fhpa.spec.effective_min)
    return max(0, need[2] - keep)


def _held_at_max(fleet: Fleet, slot: Slot) -> bool:
    """The cluster can run no more than it does and its load asks for more: at its max, or full below
    it (its quota refuses pods, or they pend where nothing will place them, past the delay). A full
    cluster is as held as one at its max: under a max above its room (the excess no cluster has room
    for stays there, DESIGN §4) it is never at its max, and without this the pods it cannot run were
    started nowhere while the others had room."""
    if not slot.can_receive or slot.max_replicas <= 0:
        return False
    return fleet.presses_for_more(slot) or fleet.pending_past_delay(slot)


def _takes_the_load(fleet: Fleet, slot: Slot) -> bool:
    """Does load reach this cluster as it reaches the capped one? Only then do more pods here help.

    Where its HPA reports metrics, they must be above target too: traffic routed by geography (its own
    users, its own load) leaves it at target while another cluster is overloaded, and pods started
    there would idle until its HPA removed them again. No metrics (at 0, just started): yes."""
    hpa = slot.cluster.hpa
    ratio = hpa.metric_ratio if hpa is not None and hpa.owned else None
    return ratio is None or slot.cluster.ready_replicas == 0 or tolerance_of(fleet.fhpa).asks_more(ratio)


def _hold(fleet: Fleet, slot: Slot) -> None:
    """Raise the member HPA's minReplicas to the replicas just written, for its scale-down window.

    A member HPA scales down to the highest of its own recommendations over that window, and none of
    them asked for replicas it did not start: left alone it takes the assisted replicas away as soon as
    the window allows, while the load that called for them is still there, and the next pass starts
    them again (measured on v1.20 members, docs/simulator.md). Held at the written count, it computes
    its recommendations from the assisted pods once they are ready; when the hold ends, its window
    remembers what the load asked for then, so it keeps what is needed and removes only an excess."""
    if slot.replicas is None or slot.replicas <= slot.min_replicas:
        return
    slot.pin = max(slot.pin or 0, slot.replicas)
    slot.assist_until = fleet.now + timedelta(seconds=scale_down_window(fleet))


def release_holds(fleet: Fleet) -> None:
    """End the holds whose window is over: minReplicas back to the assigned min (or the pin of a
    tier that still drains, :func:`controller.planning.priority.pin_and_release`, from the next pass)."""
    released = []
    for slot in fleet.ordered():
        if slot.assist_until is not None and fleet.now >= slot.assist_until:
            slot.assist_until = None
            slot.pin = None
            released.append(slot)
    if released:
        fleet.event(
            "BurstReleased",
            "the member HPAs scale the assisted replicas again: "
            + ", ".join(f"{s.name} minReplicas {s.min_replicas}" for s in released),
        )


def paced_by_user(fhpa: FederatedHPA) -> bool:
    """Did the user set how fast the member HPAs may scale up (``behavior.scaleUp`` policies, a window,
    or ``selectPolicy: Disabled``)? Then the assist writes nothing.

    A member HPA counts only its own scale events against its policies, never a write of ours: any
    replicas started next to it come on top of the rate the user chose, and a write past a scale-up
    window skips the wait the user asked for. Their ramp is the member HPAs' alone. A tolerance is
    not a pace: the assist reads it as the member HPAs do."""
    behavior = fhpa.spec.behavior
    rules = behavior.scale_up if behavior is not None else None
    if rules is None:
        return False
    return (
        bool(rules.policies) or bool(rules.stabilization_window_seconds) or rules.select_policy == "Disabled"
    )


def _written_lately(fleet: Fleet, slot: Slot, settle_seconds: float) -> bool:
    """The pods of our last write to this cluster get time to start and show in its HPA's metrics."""
    return slot.last_write is not None and (fleet.now - slot.last_write).total_seconds() < settle_seconds


def assist(fleet: Fleet, settle_seconds: float, replacing: int = 0, for_capped: bool = True) -> list[Slot]:
    """Start the fleet's deficit in the clusters with room, preferred first. Returns the raised slots.

    ``replacing``: the ready replicas of clusters failed over in this pass. Their load moves to the
    others at once; where no member HPA reports metrics (the clusters taking over were at 0), that many
    start there now, less what this pass already started (the floor's mins), as a spill starts the pods
    that pend: a cluster taking over from 0 would otherwise ramp up from its min. Where HPAs report
    metrics they scale on them themselves. A cluster whose replicas the controller wrote less than
    ``settle_seconds`` ago (the optimization period) is skipped this pass, and so is everything below
    it: its pods are still starting. Nothing where the user paced scale-up (:func:`paced_by_user`)."""
    if paced_by_user(fleet.fhpa):
        return []
    if for_capped and any(_held_at_max(fleet, s) for s in fleet.slots.values()):
        missing = deficit(fleet)
    elif replacing > 0 and _need(fleet) is None:
        started = sum(max(0, s.current - s.cluster.current_replicas) for s in fleet.slots.values())
        missing = replacing - started
    else:
        return []
    if missing <= 0:
        return []
    raised = []
    for name in preference_order(fleet.fhpa, [s.cluster for s in fleet.slots.values()]):
        slot = fleet.slots[name]
        room = slot.max_replicas - slot.current
        capacity = slot.cluster.available_replicas
        if capacity is not None:  # pods started beyond what the cluster can hold only pend there
            room = min(room, capacity - slot.current)
        if not slot.can_receive or slot.saturated or room <= 0 or not slot.cluster.workload_found:
            continue
        if _written_lately(fleet, slot, settle_seconds):
            break
        if not _takes_the_load(fleet, slot):
            continue
        if slot.current == 0 and not fleet.fhpa.spec.effective_scaling_to_zero:
            continue  # a cluster at 0 without scalingToZero is the initial assignment's business
        take = min(room, missing)
        fleet.write_replicas(
            slot,
            slot.current + take,
            f"burst: starts {take} of the {missing} replicas "
            "the load asks for beyond what the clusters at their max can run",
        )
        _hold(fleet, slot)
        raised.append(slot)
        missing -= take
        if missing <= 0 or slot.current < slot.max_replicas:
            break  # one tier at a time: the next cluster only once this one is at its max
    if raised:
        fleet.event(
            "BurstAssisted",
            "clusters at their max want more: " + ", ".join(f"{s.name} -> {s.current}" for s in raised),
        )
    return raised
