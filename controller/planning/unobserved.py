"""What status says when the controller cannot observe a member it needs.

A member the controller cannot observe this pass (unreachable, its cache not synced or listing again,
over its budget, trickling its answers) is unknown: the planner keeps its bounds as they were and never
plans from what it held before. Status must not read as if all were well meanwhile: the condition
``MembersObserved`` names each selected cluster that could not be observed and why, and ``Ready`` is
``Unknown`` (never ``True``) while one of them still holds part of the bounds, since the controller
cannot tell whether the FederatedHPA is in the state it wants. A cluster failed over no longer holds
any: Ready follows the clusters that took its share, and ``MembersObserved`` still names it.

``MembersObserved`` is absent on an object whose clusters were always observed, False while one is
not, and True (reason ``AllObserved``) once every one is again, as ``Paused`` is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from controller.planning.conditions import condition
from controller.planning.failover import Health
from controller.planning.observation import ClusterObservation
from fhpa_api.limits import HISTORY_MESSAGE_MAX_CHARS as DETAIL_MAX
from fhpa_api.models import Condition

CONDITION = "MembersObserved"
UNOBSERVED = "MemberUnobserved"
NAMED = 10
"""The most clusters a message names (each with its reason): status stays small on a large fleet."""


def unobserved(selected: list[ClusterObservation]) -> list[ClusterObservation]:
    """The selected, registered clusters this pass could not observe."""
    return [o for o in selected if o.registered and not o.healthy]


def why(cluster: ClusterObservation) -> str:
    """One cluster and the reason it could not be observed, as a message names it."""
    detail = (cluster.unobserved or "it does not answer")[:DETAIL_MAX]
    return f"{cluster.name} ({detail})"


def observed_conditions(
    conditions: list[Condition] | None,
    previous: list[Condition] | None,
    selected: list[ClusterObservation],
    health: Mapping[str, Health],
    now: datetime,
) -> list[Condition]:
    """``conditions`` with ``MembersObserved`` set, and ``Ready=True`` turned ``Unknown`` while a
    cluster that still holds part of the bounds cannot be observed."""
    blind = unobserved(selected)
    own = [c for c in conditions or [] if c.type != CONDITION]
    had = any(c.type == CONDITION for c in previous or [])
    if not blind:
        if not had:
            return own
        seen = condition(previous, CONDITION, "True", "AllObserved", "every selected cluster observed", now)
        return [*own, seen]
    names = _listed([why(o) for o in blind], "; ")
    observed = condition(previous, CONDITION, "False", UNOBSERVED, f"cannot observe {names}", now)
    needed = [o for o in blind if (h := health.get(o.name)) is not None and h.candidate]
    return [*(_unknown(c, needed, previous, now) for c in own), observed]


def _unknown(
    ready: Condition, needed: list[ClusterObservation], previous: list[Condition] | None, now: datetime
) -> Condition:
    if ready.type != "Ready" or ready.status != "True" or not needed:
        return ready
    names = _listed([o.name for o in needed], ", ")
    hold = "which holds" if len(needed) == 1 else "which hold"
    return condition(
        previous,
        "Ready",
        "Unknown",
        UNOBSERVED,
        f"cannot observe {names}, {hold} part of the bounds (kept as they were until observed again or "
        f"failed over); {ready.message}",
        now,
    )


def _listed(items: list[str], sep: str) -> str:
    more = len(items) - NAMED
    return sep.join(items[:NAMED]) + (f"{sep}and {more} more" if more > 0 else "")
