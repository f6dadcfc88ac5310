"""The failover grace the simulator measures each cluster against, decided from what it saw itself.

The controller gives an unreachable **sole holder** (it last ran replicas while no reachable cluster
runs any, unschedulable pods not counted, and some reachable cluster has the workload) the shorter
blip tolerance, unless it was failed over within the hour. The promises are measured against that
grace, so the simulator must not take it from the controller's status row: a controller that wrongly
recorded a short grace would certify its own early failovers. The grown grace of a flapper still
comes from the row (``grace_now``); only the shortening is the simulator's to decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from controller.planning.failover import HealthPolicy, grace_now
from fhpa_api.models import ClusterStatus

HOUR_S = 3600.0


@dataclass(frozen=True)
class Seen:
    """One cluster at one step, as the simulator knows it."""

    down: bool
    selected: bool
    workload: bool
    replicas: int
    pending: int = 0  # of ``replicas``, the pods that cannot be scheduled: they run nothing


@dataclass
class GraceRecorder:
    """Per step, the grace each cluster has: the row's grown grace, shortened to the blip tolerance for
    a sole holder. Remembers what each cluster last ran while reachable, since when it is unreachable,
    the shortest grace its spell has had, and when its spells last outlasted that grace (a failover, as
    the simulator counts it)."""

    policy: HealthPolicy
    blip_tolerance_s: float | None
    ran: dict[str, int] = field(default_factory=dict)
    down_since: dict[str, float] = field(default_factory=dict)
    spell_grace: dict[str, float] = field(default_factory=dict)
    failed_over_at: dict[str, float] = field(default_factory=dict)

    def graces(
        self, t: float, now: datetime, seen: Mapping[str, Seen], rows: Mapping[str, ClusterStatus]
    ) -> dict[str, float]:
        holders = self._sole_holders(t, seen)
        out: dict[str, float] = {}
        for name, c in seen.items():
            grace = grace_now(rows.get(name), now, self.policy)
            if name in holders and self.blip_tolerance_s is not None:
                grace = min(grace, self.blip_tolerance_s)
            out[name] = grace
            self._follow(name, c, t, grace)
        return out

    def _sole_holders(self, t: float, seen: Mapping[str, Seen]) -> set[str]:
        reachable = [c for c in seen.values() if c.selected and not c.down]
        if any(c.replicas - c.pending > 0 for c in reachable) or not any(c.workload for c in reachable):
            return set()
        return {
            name
            for name, c in seen.items()
            if c.down
            and c.selected
            and self.ran.get(name, 0) > 0
            and t - self.failed_over_at.get(name, -HOUR_S) >= HOUR_S
        }

    def _follow(self, name: str, c: Seen, t: float, grace: float) -> None:
        """A spell is measured against the shortest grace it has had, as the promises measure it: the
        pass that fails a sole holder over starts replicas elsewhere, which ends its sole holding and
        lengthens its grace in that same step, and the failover must still count."""
        if not c.down:
            self.ran[name] = c.replicas
            self.down_since.pop(name, None)
            self.spell_grace.pop(name, None)
            return
        start = self.down_since.setdefault(name, t)
        held = min(self.spell_grace.get(name, grace), grace)
        self.spell_grace[name] = held
        if t - start >= held and self.failed_over_at.get(name, -HOUR_S) < start:
            self.failed_over_at[name] = t
