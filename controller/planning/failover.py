"""Which registered clusters take part in the assignment, given health, taints and their history.

A cluster that stops answering keeps its bounds for a grace period (a blip must not reshuffle the
fleet); past it, or at once when tainted NoExecute, it is failed over: it leaves the candidates and its
share is reassigned. A failed-over cluster that answers again must stay healthy for the rejoin
hysteresis before it rejoins, so a flapping cluster does not move capacity back and forth. The
timestamps that drive this live in the cluster's status row, so a restarted controller keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from controller.planning.fleet import FAILED_OVER
from controller.planning.observation import ClusterObservation
from fhpa_api.models import ClusterStatus


class Role(Enum):
    ACTIVE = "active"  # a candidate that can be acted on
    HELD = "held"  # a candidate, unhealthy within the grace period: keeps its bounds, receives nothing
    FAILED_OVER = "failed-over"  # out of the candidates until it rejoins
    REJOINING = "rejoining"  # failed over, healthy again, waiting out the hysteresis
    EXCLUDED = "excluded"  # not a candidate last pass and not fit to be: unhealthy or tainted NoExecute


@dataclass(frozen=True)
class Health:
    role: Role
    unhealthy_since: datetime | None = None
    healthy_since: datetime | None = None
    failed_now: bool = False  # this pass moved it out (an Event)
    rejoined_now: bool = False  # this pass brought it back (an Event)

    @property
    def candidate(self) -> bool:
        return self.role in (Role.ACTIVE, Role.HELD)


@dataclass(frozen=True)
class HealthPolicy:
    grace_seconds: float
    hysteresis_seconds: float
    enabled: bool  # scaleAssist: without it nothing is failed over after assignment


def _was_candidate(row: ClusterStatus | None) -> bool:
    """Did the last pass plan this cluster? Its row then has bounds (0/0 when the policy gave it no share).

    A candidate with no share gets the grace period too: dropping it from the candidates at once would
    re-run the assignment on every blip and undo what the fleet has moved since (spills, optimizations).
    """
    return row is not None and row.max_replicas is not None and row.state != FAILED_OVER


def assess(
    cluster: ClusterObservation, row: ClusterStatus | None, now: datetime, policy: HealthPolicy
) -> Health:
    """The cluster's role in this pass, from what it looks like now and what its status row remembers."""
    failed_before = row is not None and row.state == FAILED_OVER
    sick = not cluster.healthy or cluster.no_execute
    if not sick:
        if not failed_before:
            return Health(Role.ACTIVE)
        since = (row.healthy_since if row is not None else None) or now
        if (now - since).total_seconds() >= policy.hysteresis_seconds:
            return Health(Role.ACTIVE, rejoined_now=True)
        return Health(Role.REJOINING, healthy_since=since)
    since = (row.unhealthy_since if row is not None else None) or now
    if failed_before:
        return Health(Role.FAILED_OVER, unhealthy_since=since)
    if not _was_candidate(row):
        return Health(Role.EXCLUDED, unhealthy_since=since)
    if not policy.enabled:
        return Health(Role.HELD, unhealthy_since=since)
    if cluster.no_execute or (now - since).total_seconds() >= policy.grace_seconds:
        return Health(Role.FAILED_OVER, unhealthy_since=since, failed_now=True)
    return Health(Role.HELD, unhealthy_since=since)


def due_at(health: Health, policy: HealthPolicy) -> datetime | None:
    """When this cluster's role changes by time alone (end of grace or of hysteresis)."""
    if health.role == Role.HELD and policy.enabled and health.unhealthy_since is not None:
        return health.unhealthy_since + timedelta(seconds=policy.grace_seconds)
    if health.role == Role.REJOINING and health.healthy_since is not None:
        return health.healthy_since + timedelta(seconds=policy.hysteresis_seconds)
    return None
