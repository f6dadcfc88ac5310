"""CronFederatedHPA decisions: which scheduled executions are due, and the status that guards them.

The decisions (``decide_rule``, ``bounds_change``, ``record_outcome``, ``build_status``) are pure functions
over the API models. ``controller.cron_controller.CronController`` is the thin part with side effects: it
reads the object through the ControlPlane port, runs what these decisions say, writes status and emits
Events.

State lives only in the object's status (DESIGN §1, stateless controller). The recorded
``nextExecutionTime`` says from which fire on executions are owed; the schedule times recorded in the
histories make sure a schedule time never runs twice, also across restarts and leader hand-overs. After
downtime only the latest owed fire may run, and only if it is at most ``maxDelaySeconds`` late (DESIGN §5);
otherwise it is recorded as failed with how late it was and how many earlier fires were skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from fhpa_api import API_VERSION
from fhpa_api.exclusions import ExclusionError, Fires, calendar_source, excluding
from fhpa_api.limits import HISTORY_MESSAGE_MAX_CHARS, cut
from fhpa_api.models import (
    CronFederatedHPA,
    CronFederatedHPARule,
    CronFederatedHPAStatus,
    CrossVersionObjectReference,
    ExecutionHistory,
    FailedExecution,
    FederatedHPA,
    SuccessfulExecution,
)
from fhpa_api.pause import PAUSED_ANNOTATION, is_paused
from fhpa_api.schedule import ScheduleError, load_time_zone, parse_schedule

SCALE_SUCCEEDED = "ScaleSucceeded"
SCALE_FAILED = "ScaleFailed"
SCALE_SKIPPED = "ScaleSkipped"
SKIPPED_PAUSED = "skipped: "
"""How a failure message starts when the fire was skipped on purpose (its target is paused)."""
INVALID_RULE = "InvalidRule"

DEFAULT_MAX_DELAY_SECONDS = 60.0
"""Unset maxDelaySeconds: enough to ride out a leader hand-over, capped at half the shortest interval."""

SKIPPED_COUNT_CAP = 10_000
"""Counting the missed fires of a long outage is bounded; beyond the cap the message says 'at least'."""


@dataclass(frozen=True)
class Due:
    """A fire that is owed now: run it when ``runnable``, else record it as missed."""

    schedule_time: datetime
    late_seconds: float
    max_delay_seconds: float
    max_delay_set: bool
    skipped: int
    skipped_since: datetime | None

    @property
    def runnable(self) -> bool:
        return self.late_seconds <= self.max_delay_seconds


@dataclass(frozen=True)
class RuleDecision:
    rule_name: str
    due: Due | None
    next_execution_time: datetime | None
    invalid: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What one execution did: a success with the applied values, or a failure with its message."""

    schedule_time: datetime
    execution_time: datetime
    succeeded: bool
    message: str = ""
    applied_replicas: int | None = None
    applied_min_replicas: int | None = None
    applied_max_replicas: int | None = None


@dataclass(frozen=True)
class BoundsChange:
    """The FederatedHPA fields to patch (None: leave as is) and the values the rule applies."""

    min_replicas: int | None
    max_replicas: int | None
    applied_min: int | None
    applied_max: int | None

    @property
    def changes_something(self) -> bool:
        return self.min_replicas is not None or self.max_replicas is not None


def rule_zone(rule: CronFederatedHPARule, default_zone: ZoneInfo) -> ZoneInfo:
    """The rule's own zone, else the controller's (a flag, UTC unless set)."""
    return load_time_zone(rule.time_zone) if rule.time_zone else default_zone


def max_delay_seconds(rule: CronFederatedHPARule, schedule: Fires, zone: ZoneInfo) -> float:
    """The rule's maxDelaySeconds, or min(60 s, half the shortest interval) when unset (DESIGN §5)."""
    if rule.max_delay_seconds is not None:
        return float(rule.max_delay_seconds)
    return min(DEFAULT_MAX_DELAY_SECONDS, schedule.shortest_interval_seconds(zone) / 2)


def decide_rule(
    rule: CronFederatedHPARule,
    history: ExecutionHistory | None,
    *,
    now: datetime,
    default_zone: ZoneInfo,
    created_at: datetime | None,
    calendar: str | None = None,
    calendar_problem: str | None = None,
) -> RuleDecision:
    """What a rule owes at ``now``: at most one due fire, and the next execution time to advertise.

    ``created_at`` is the object's creationTimestamp when the object has no status yet (a brand-new object
    whose first fires may have passed before the controller saw it), else None. ``calendar``: the text of
    the rule's calendar ConfigMap key; ``calendar_problem``: why it could not be read. A rule whose
    exclusions cannot be known does not fire (it is reported as invalid until fixed): firing on a day
    its author meant to exclude cannot be undone, a late start can.
    """
    try:
        zone = rule_zone(rule, default_zone)
        schedule = excluding(
            parse_schedule(rule.schedule), rule.exclude_dates, calendar, _calendar_name(rule)
        )
    except (ScheduleError, ExclusionError) as exc:
        return RuleDecision(rule.name, None, None, invalid=str(exc))
    if rule.suspend:
        return RuleDecision(rule.name, None, None)
    if calendar_problem is not None:
        return RuleDecision(rule.name, None, None, invalid=calendar_problem)
    since = owed_since(schedule, zone, history, now, created_at)
    latest = schedule.latest_at_or_before(now, zone)
    due = None
    if latest is not None and as_utc(latest) > since:
        limit = max_delay_seconds(rule, schedule, zone)
        counted = schedule.count_fires_between(since, latest, zone, cap=SKIPPED_COUNT_CAP)
        due = Due(
            schedule_time=as_utc(latest),
            late_seconds=(now - latest).total_seconds(),
            max_delay_seconds=limit,
            max_delay_set=rule.max_delay_seconds is not None,
            skipped=max(counted - 1, 0),
            skipped_since=_recorded_next(history),
        )
    return RuleDecision(rule.name, due, as_utc(schedule.next_after(now, zone)))


def _calendar_name(rule: CronFederatedHPARule) -> str:
    ref = rule.exclude_calendar_ref
    return calendar_source(ref.name, ref.effective_key) if ref is not None else "calendar"


def owed_since(
    schedule: Fires,
    zone: ZoneInfo,
    history: ExecutionHistory | None,
    now: datetime,
    created_at: datetime | None,
) -> datetime:
    """The instant after which fires are owed (exclusive), never before the newest recorded schedule time.

    - A recorded nextExecutionTime that is still a fire of this schedule: from it, inclusive (the
      controller promised it; a restart or hand-over must not lose it).
    - A brand-new object: from its creationTimestamp, so a fire that passed before the object existed never
      counts as missed, while one that passed just before the controller noticed the object still runs.
    - Otherwise (new or renamed rule, resumed after suspend, changed schedule): from now, a fresh start.
    """
    recorded = _recorded_next(history)
    if recorded is not None and _is_fire(schedule, zone, recorded):
        since = recorded - timedelta(microseconds=1)
    elif history is None and created_at is not None:
        since = min(created_at, now)
    else:
        since = now
    guard = last_recorded_schedule_time(history)
    if guard is not None and guard > since:
        since = guard
    return as_utc(since)


def last_recorded_schedule_time(history: ExecutionHistory | None) -> datetime | None:
    """The newest schedule time in the histories: it and everything before it has been handled."""
    if history is None:
        return None
    times = [e.schedule_time for e in history.successful_executions or []]
    times += [e.schedule_time for e in history.failed_executions or []]
    return max((as_utc(t) for t in times), default=None)


def bounds_change(fhpa: FederatedHPA, rule: CronFederatedHPARule) -> BoundsChange | str:
    """The min/max patch a rule makes to a FederatedHPA, or why it must change nothing.

    The result is checked as a whole: a rule that would leave minReplicas above maxReplicas (its own min
    against the current max, or its own max against the current min) fails and names both numbers.
    A paused FederatedHPA is not written at all: the operator froze it, and a scheduled change landing
    mid-incident would be applied the moment it is resumed, which is the surprise a pause exists to
    prevent. The fire is recorded as a failed execution whose message starts with ``skipped:``.
    """
    if is_paused(fhpa.metadata.annotations):
        return (
            f"{SKIPPED_PAUSED}FederatedHPA {fhpa.metadata.namespace}/{fhpa.metadata.name} is paused "
            f'({PAUSED_ANNOTATION}: "true"); minReplicas and maxReplicas left unchanged'
        )
    if rule.target_min_replicas is None and rule.target_max_replicas is None:
        return (
            "the rule sets neither targetMinReplicas nor targetMaxReplicas; a FederatedHPA target needs one"
        )
    current_min = fhpa.spec.effective_min
    current_max = fhpa.spec.max_replicas
    new_min = current_min if rule.target_min_replicas is None else rule.target_min_replicas
    new_max = current_max if rule.target_max_replicas is None else rule.target_max_replicas
    ref = f"FederatedHPA {fhpa.metadata.namespace}/{fhpa.metadata.name}"
    if new_min < 1:
        return f"targetMinReplicas {new_min} is below 1; {ref} unchanged"
    if new_min > new_max:
        return _min_above_max(rule, ref, new_min, new_max)
    return BoundsChange(
        min_replicas=new_min if new_min != current_min else None,
        max_replicas=new_max if new_max != current_max else None,
        applied_min=rule.target_min_replicas,
        applied_max=rule.target_max_replicas,
    )


def _min_above_max(rule: CronFederatedHPARule, ref: str, new_min: int, new_max: int) -> str:
    if rule.target_min_replicas is not None and rule.target_max_replicas is not None:
        what = f"targetMinReplicas {new_min} is above targetMaxReplicas {new_max}"
    elif rule.target_min_replicas is not None:
        what = f"targetMinReplicas {new_min} would be above the maxReplicas {new_max} of {ref}"
    else:
        what = f"targetMaxReplicas {new_max} would be below the minReplicas {new_min} of {ref}"
    return f"{what}; minReplicas must not exceed maxReplicas, nothing was changed"


def format_delay(seconds: float) -> str:
    """A human duration: 45s, 2m14s, 2h14m, 3d4h."""
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def missed_message(due: Due) -> str:
    """Why an owed fire was not run: how late it is, the limit, and what else was skipped."""
    if due.max_delay_set:
        limit = f"maxDelaySeconds is {int(due.max_delay_seconds)}"
    else:
        limit = f"maxDelaySeconds is unset, so the limit is {format_delay(due.max_delay_seconds)}"
    return f"missed by {format_delay(due.late_seconds)}; {limit}{skipped_note(due)}"


def skipped_note(due: Due) -> str:
    if due.skipped == 0:
        return ""
    count = f"at least {due.skipped}" if due.skipped >= SKIPPED_COUNT_CAP - 1 else str(due.skipped)
    plural = "s were" if due.skipped != 1 else " was"
    since = f" since {stamp(due.skipped_since)}" if due.skipped_since else ""
    return f"; {count} earlier scheduled execution{plural} skipped{since}"


def record_outcome(
    history: ExecutionHistory, outcome: Outcome, rule: CronFederatedHPARule
) -> ExecutionHistory:
    """Prepend an execution to the rule's history (newest first) and trim both lists to the rule's limits."""
    successes = list(history.successful_executions or [])
    failures = list(history.failed_executions or [])
    if outcome.succeeded:
        successes.insert(
            0,
            SuccessfulExecution(
                schedule_time=outcome.schedule_time,
                execution_time=outcome.execution_time,
                applied_replicas=outcome.applied_replicas,
                applied_min_replicas=outcome.applied_min_replicas,
                applied_max_replicas=outcome.applied_max_replicas,
            ),
        )
    else:
        failures.insert(
            0,
            FailedExecution(
                schedule_time=outcome.schedule_time,
                execution_time=outcome.execution_time,
                message=history_message(outcome.message),
            ),
        )
    return trim_history(
        history.model_copy(update={"successful_executions": successes, "failed_executions": failures}), rule
    )


def history_message(message: str) -> str:
    """A failure message as stored in status: one printable line of at most HISTORY_MESSAGE_MAX_CHARS
    (the Event keeps the longer text), so that histories stay within the status budget (limits.py)."""
    head = message[: 2 * HISTORY_MESSAGE_MAX_CHARS]  # never scan a huge message as a whole
    line = " ".join("".join(c if c.isprintable() else " " for c in head).split())
    return cut(line, HISTORY_MESSAGE_MAX_CHARS)


def trim_history(history: ExecutionHistory, rule: CronFederatedHPARule) -> ExecutionHistory:
    """Keep the newest successfulHistoryLimit / failedHistoryLimit entries (a limit of 0 keeps none);
    a failure message written by an older controller is cut to the stored length as well."""
    keep_ok = max(rule.effective_successful_history_limit, 0)
    keep_failed = max(rule.effective_failed_history_limit, 0)
    successes = (history.successful_executions or [])[:keep_ok]
    failures = [
        entry
        if len(entry.message) <= HISTORY_MESSAGE_MAX_CHARS
        else entry.model_copy(update={"message": history_message(entry.message)})
        for entry in (history.failed_executions or [])[:keep_failed]
    ]
    return history.model_copy(
        update={"successful_executions": successes or None, "failed_executions": failures or None}
    )


def build_status(
    cron: CronFederatedHPA,
    decisions: list[RuleDecision],
    outcomes: dict[str, Outcome],
) -> CronFederatedHPAStatus:
    """The new status: one history per rule in spec order; removed or renamed rules' histories dropped."""
    old = {h.rule_name: h for h in (cron.status.execution_histories if cron.status else None) or []}
    by_name = {d.rule_name: d for d in decisions}
    histories: list[ExecutionHistory] = []
    seen: set[str] = set()
    for rule in cron.spec.rules:
        if rule.name in seen or rule.name not in by_name:
            continue
        seen.add(rule.name)
        history = old.get(rule.name) or ExecutionHistory(rule_name=rule.name)
        outcome = outcomes.get(rule.name)
        if outcome is not None and _not_recorded(history, outcome.schedule_time):
            history = record_outcome(history, outcome, rule)
        history = trim_history(history, rule)
        histories.append(
            history.model_copy(update={"next_execution_time": by_name[rule.name].next_execution_time})
        )
    base = cron.status or CronFederatedHPAStatus()
    return base.model_copy(
        update={
            "execution_histories": histories or None,
            "observed_generation": cron.metadata.generation,
            **summary(histories),
        }
    )


def summary(histories: list[ExecutionHistory]) -> dict[str, Any]:
    """status.nextExecutionTime and status.lastResult from the histories: the earliest next execution
    of any rule, and the outcome and rule of the latest execution (a success and a failure of the same
    instant: the failure, which is the one to act on)."""
    nexts = [h.next_execution_time for h in histories if h.next_execution_time is not None]
    latest: tuple[datetime, int, str] | None = None
    for history in histories:
        runs = [(e.execution_time, 0, "Succeeded") for e in history.successful_executions or []]
        runs += [(e.execution_time, 1, "Failed") for e in history.failed_executions or []]
        for when, weight, outcome in runs:
            if latest is None or (when, weight) > latest[:2]:
                latest = (when, weight, f"{outcome} ({history.rule_name})")
    return {
        "next_execution_time": min(nexts) if nexts else None,
        "last_result": latest[2] if latest is not None else None,
    }


def next_wakeup(decisions: list[RuleDecision]) -> datetime | None:
    """When the controller must look at this object again: the earliest next execution of any rule."""
    times = [d.next_execution_time for d in decisions if d.next_execution_time is not None]
    return min(times) if times else None


def creation_time(cron: CronFederatedHPA) -> datetime | None:
    """metadata.creationTimestamp as an aware datetime; None when absent or unreadable."""
    text = cron.metadata.creation_timestamp
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def is_new_object(cron: CronFederatedHPA) -> bool:
    """No rule has a history yet: the controller has never written this object's status."""
    return not (cron.status and cron.status.execution_histories)


def targets_federated_hpa(target: CrossVersionObjectReference) -> bool:
    """FederatedHPA mode is chosen by the exact apiVersion, as in the reference implementation."""
    return target.api_version == API_VERSION


def _not_recorded(history: ExecutionHistory, schedule_time: datetime) -> bool:
    last = last_recorded_schedule_time(history)
    return last is None or as_utc(schedule_time) > last


def _recorded_next(history: ExecutionHistory | None) -> datetime | None:
    if history is None or history.next_execution_time is None:
        return None
    return as_utc(history.next_execution_time)


def _is_fire(schedule: Fires, zone: ZoneInfo, instant: datetime) -> bool:
    latest = schedule.latest_at_or_before(instant, zone)
    return latest is not None and as_utc(latest) == as_utc(instant)


def as_utc(instant: datetime) -> datetime:
    if instant.tzinfo is None:
        return instant.replace(tzinfo=UTC)
    return instant.astimezone(UTC)


def stamp(instant: datetime | None) -> str:
    return as_utc(instant).strftime("%Y-%m-%dT%H:%M:%SZ") if instant else ""
