"""What a paused FederatedHPA's pass decides: the recorded bounds, frozen, and nothing else.

An operator pauses during an incident or a rollout to stop the controller from moving capacity between
clusters while people act. So a paused pass moves no max or min, writes no replicas, fails nothing over
and runs no optimization; the member HPAs keep scaling within the bounds they hold, because stopping
them too would turn a pause into an outage under load. A member HPA that drifted from its frozen bounds
(edited by hand, deleted) is put back to them; no HPA is created for a cluster that had no bounds and
none is deleted, so a pause never changes which clusters serve.

A cluster that fails while paused keeps its bounds and is not failed over: its grace does not run out
while paused. On resume the grace is measured from when it stopped answering, so one that is still
down past the grace is failed over on the first pass after the resume.
"""

from __future__ import annotations

from datetime import datetime

from controller.planning.conditions import condition
from controller.planning.fleet import Fleet
from controller.planning.plan import EventRecord
from fhpa_api.models import Condition
from fhpa_api.pause import PAUSED_ANNOTATION

CONDITION = "Paused"
REASON_PAUSED = "PausedByAnnotation"
REASON_RESUMED = "Resumed"


def _was_paused(previous: list[Condition] | None) -> bool:
    return any(c.type == CONDITION and c.status == "True" for c in previous or [])


def frozen_bounds(fleet: Fleet) -> str:
    """The frozen bounds in one line, for the condition and the Event."""
    held = [f"{s.name} {s.hpa_min}..{s.max_replicas}" for s in fleet.ordered() if s.max_replicas > 0]
    return ", ".join(held) or "none (no member HPA was assigned before the pause)"


def paused_conditions(
    conditions: list[Condition] | None,
    previous: list[Condition] | None,
    paused: bool,
    fleet: Fleet,
) -> list[Condition]:
    """``conditions`` with Paused set: True while paused; False once resumed (absent if never paused)."""
    rest = [c for c in conditions or [] if c.type != CONDITION]
    now: datetime = fleet.now
    if paused:
        message = (
            f'{PAUSED_ANNOTATION} is "true": member bounds frozen at {frozen_bounds(fleet)}; member HPAs '
            "scale within them; no spill, failover, reassignment or optimization until it is removed"
        )
        return [*rest, condition(previous, CONDITION, "True", REASON_PAUSED, message, now)]
    if any(c.type == CONDITION for c in previous or []):
        message = f'{PAUSED_ANNOTATION} is not "true": the controller acts across clusters'
        return [*rest, condition(previous, CONDITION, "False", REASON_RESUMED, message, now)]
    return rest


def pause_events(previous: list[Condition] | None, paused: bool, fleet: Fleet) -> list[EventRecord]:
    """One Event when the object is paused and one when it is resumed, not one per pass."""
    was = _was_paused(previous)
    if paused and not was:
        return [
            EventRecord(reason="Paused", message=f"paused: member bounds frozen at {frozen_bounds(fleet)}")
        ]
    if was and not paused:
        return [EventRecord(reason="Resumed", message="resumed: the controller acts across clusters again")]
    return []
