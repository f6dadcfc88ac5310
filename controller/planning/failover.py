"""Which registered clusters take part in the assignment, given health, taints and their history.

A cluster that stops answering keeps its bounds for a grace period (a blip must not reshuffle the
fleet); past it, or at once when tainted NoExecute, it is failed over: it leaves the candidates and its
share is reassigned. A failed-over cluster that answers again rejoins at once (DESIGN §4 promise 3: it
must not keep serving its stale bounds), and the assignment keeps what it runs. What keeps a flapping
cluster from being reassigned on every flap (promise 4) is its grace, which grows with each failover:
``grace + hysteresis * (4**n - 1)`` after n failovers within the last hour (60 s, 420 s, 1860 s, then
an hour with the default flags), back to the flag's value after an hour without one. While a cluster is
held past the flag's grace, the floor does not wait for it: the others' mins cover F.min. The
timestamps and the count that drive this live in the cluster's status row, so a restarted controller
keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from controller.planning.fleet import FAILED_OVER
from controller.planning.observation import ClusterObservation
from fhpa_api.models import ClusterStatus

FLAP_MEMORY = timedelta(hours=1)
"""How long a failover counts towards a longer grace."""
MAX_GRACE_SECONDS = 3600.0


class Role(Enum):
    ACTIVE = "active"  # a candidate that can be acted on
    HELD = "held"  # a candidate, unhealthy within the grace period: keeps its bounds, receives nothing
    FAILED_OVER = "failed-over"  # out of the candidates until it answers again
    EXCLUDED = "excluded"  # not a candidate last pass and not fit to be: unhealthy or tainted NoExecute


@dataclass(frozen=True)
class Health:
    role: Role
    unhealthy_since: datetime | None = None
    failovers: int = 0  # failovers within FLAP_MEMORY of the last one (its grace grows with them)
    last_failover: datetime | None = None
    grace_seconds: float = 0.0  # the grace this cluster gets now
    failed_now: bool = False  # this pass moved it out (an Event)
    rejoined_now: bool = False  # this pass brought it back (an Event)
    past_flag_grace: bool = False  # held longer than the flag's grace (its own grew with its flaps)

    @property
    def candidate(self) -> bool:
        return self.role in (Role.ACTIVE, Role.HELD)


@dataclass(frozen=True)
class HealthPolicy:
    grace_seconds: float
    hysteresis_seconds: float  # the grace's growth step: hysteresis * (4**n - 1) after n failovers
    enabled: bool  # scaleAssist: without it nothing is failed over after assignment
    blip_tolerance_seconds: float | None = None  # the sole holder's grace (assess); None: none shorter

    def grace_after(self, failovers: int) -> float:
        """The grace of a cluster failed over ``failovers`` times within the last hour."""
        if failovers <= 0:
            return self.grace_seconds
        grown = self.grace_seconds + self.hysteresis_seconds * (4 ** min(failovers, 8) - 1)
        return min(grown, max(MAX_GRACE_SECONDS, self.grace_seconds))


def _was_candidate(row: ClusterStatus | None) -> bool:
    """Did the last pass plan this cluster? Its row then has bounds (0/0 when the policy gave it no share).

    A candidate with no share gets the grace period too: dropping it from the candidates at once would
    re-run the assignment on every blip and undo what the fleet has moved since (spills, optimizations).
    """
    return row is not None and row.max_replicas is not None and row.state != FAILED_OVER


def _recent_failovers(row: ClusterStatus | None, now: datetime) -> tuple[int, datetime | None]:
    """The failovers that still count (the last one less than an hour ago), and when the last was."""
    last = row.last_failover_time if row is not None else None
    if last is None or now - last >= FLAP_MEMORY:
        return 0, None
    return (row.failovers or 0) if row is not None else 0, last


def counted_failovers(row: ClusterStatus | None, now: datetime) -> tuple[int, datetime | None]:
    """The failovers that lengthen this cluster's grace now, and when the last was: those of the last
    hour, and a cluster still failed over keeps counting its own however old it is."""
    count, last = _recent_failovers(row, now)
    if row is not None and row.state == FAILED_OVER and count == 0:
        count, last = row.failovers or 1, row.last_failover_time
    return count, last


def grace_now(row: ClusterStatus | None, now: datetime, policy: HealthPolicy) -> float:
    """The failover grace a cluster's status row gives it at ``now`` (before any shortening for a sole
    holder): what a simulator records to measure the floor against the grace a flapper really has."""
    return policy.grace_after(counted_failovers(row, now)[0])


def assess(
    cluster: ClusterObservation,
    row: ClusterStatus | None,
    now: datetime,
    policy: HealthPolicy,
    sole_holder: bool = False,
) -> Health:
    """The cluster's role in this pass, from what it looks like now and what its status row remembers.

    ``sole_holder``: it last ran replicas and no reachable cluster runs any. If its pods stopped
    serving, the whole fleet is down and the grace is an outage; so, unless it flapped within the hour,
    its grace is the shorter ``blip_tolerance_seconds`` (30 s by default: a blip, such as an API
    server restart, moves nothing). A flapper's grace grows as usual, so a blipping sole holder is
    failed over once an hour at most (promise 4).
    """
    failed_before = row is not None and row.state == FAILED_OVER
    count, last = counted_failovers(row, now)
    grace = policy.grace_after(count)
    if sole_holder and count == 0 and policy.blip_tolerance_seconds is not None:
        grace = min(grace, policy.blip_tolerance_seconds)
    sick = not cluster.healthy or cluster.no_execute
    if not sick:
        return Health(Role.ACTIVE, None, count, last, grace, rejoined_now=failed_before)
    since = (row.unhealthy_since if row is not None else None) or now
    if failed_before:
        return Health(Role.FAILED_OVER, since, count, last, grace)
    if not _was_candidate(row):
        return Health(Role.EXCLUDED, since, count, last, grace)
    if policy.enabled and (cluster.no_execute or (now - since).total_seconds() >= grace):
        return Health(Role.FAILED_OVER, since, count + 1, now, grace, failed_now=True)
    past_flag = policy.enabled and (now - since).total_seconds() >= policy.grace_seconds
    return Health(Role.HELD, since, count, last, grace, past_flag_grace=past_flag)


def due_at(health: Health, policy: HealthPolicy) -> datetime | None:
    """When this cluster's role changes by time alone (the end of its grace)."""
    if health.role == Role.HELD and policy.enabled and health.unhealthy_since is not None:
        return health.unhealthy_since + timedelta(seconds=health.grace_seconds)
    return None
