"""The CronFederatedHPA controller: runs the rules that are due through the ControlPlane port.

``controller.planning.cron`` decides what is due and what status records it; this is the part with side
effects: it reads the object, scales the target (a FederatedHPA's bounds or a workload's /scale), writes
the status and emits Events. ``CronFederatedHPAReconciler`` puts it on a clock and answers the next
wake-up as a ``Result`` (a requeue-after), so the work queue is the only timer.

Once, across a leader hand-over (issue 12, M1). When the control plane offers conditional writes
(controller.ports.ConditionalControlPlane, as the real adapter does), a fire is run in three steps:

1. read the target's resourceVersion (the Scale's, or the FederatedHPA's);
2. write an ``Executing`` marker condition into status, with that version, as a compare-and-swap on the
   CronFederatedHPA's resourceVersion; two leaders that read the same status cannot both write it;
3. write the target with that version as a precondition (PUT of the Scale; a merge patch carrying
   metadata.resourceVersion for a FederatedHPA), then record the outcome and drop the marker.

A leader that finds another process's marker for the fire it owes uses the marker's version as its own
precondition, so at most one of the two writes (its own, and one the old leader may still have in
flight) is applied. When that write conflicts, the target moved since the old leader read it: a target
that shows the rule's value counts as done; a workload that does not is recorded as failed (at most once:
it may have been applied and changed since); a FederatedHPA is planned again from a fresh read, since the
old leader's write can no longer land.

A fire whose write the API server or an admission webhook refused is retried every RETRY_AFTER while its
catch-up window is open (status keeps advertising it as the next execution), then recorded as failed.

Namespaces (security review M5): with a ``NamespacePolicy``, an object in a namespace it refuses runs no
rule and reads no target; its status gets Ready=False (NamespaceNotAllowed) and a Warning Event, once.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from controller.errors import ConflictError, NotFoundError, PortError
from controller.planning.cron import (
    INVALID_RULE,
    SCALE_FAILED,
    SCALE_SKIPPED,
    SCALE_SUCCEEDED,
    SKIPPED_PAUSED,
    Due,
    Outcome,
    RuleDecision,
    as_utc,
    bounds_change,
    build_status,
    creation_time,
    decide_rule,
    is_new_object,
    missed_message,
    next_wakeup,
    skipped_note,
    stamp,
    summary,
    targets_federated_hpa,
)
from controller.planning.kstatus import with_kstatus
from controller.planning.namespaces import (
    REASON_NAMESPACE_NOT_ALLOWED,
    NamespacePolicy,
    is_refused,
    refused_conditions,
    without_refusal,
)
from controller.ports import Clock, ConditionalControlPlane, ControlPlane
from controller.result import Result
from fhpa_api import API_VERSION, FEDERATED_HPA
from fhpa_api.models import (
    Condition,
    CronFederatedHPA,
    CronFederatedHPARule,
    CronFederatedHPAStatus,
    CrossVersionObjectReference,
)
from fhpa_api.schedule import load_time_zone

log = logging.getLogger(__name__)

CONFLICT_ATTEMPTS = 5
RETRY_AFTER = timedelta(seconds=5)
RETRY_AFTER_MAX = timedelta(seconds=60)


def retry_delay(refusals: int) -> timedelta:
    """How long after its ``refusals``-th refusal a fire is tried again: 5 s, doubling to a minute. A
    pass that runs sooner (a watch event, another rule's wake-up, the fire's own status write) must not
    try again: the refusing webhook or API server would see one write per pass."""
    return min(RETRY_AFTER * 2 ** max(0, refusals - 1), RETRY_AFTER_MAX)


def parse_stamp(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


FireHook = Callable[[str, str], None]
"""Called once per rule execution with (namespace, result): "succeeded", "failed", or "missed" (past
its catch-up window, never run). Metrics; a refused fire that is retried is not an execution yet."""

MARKER_TYPE = "Executing"  # the status condition that says "a fire is being applied" (see the docstring)
MARKER_REASON = "ScheduledFire"
SCALE_RETRYING = "ScaleRetrying"


@dataclass(frozen=True)
class _Marker:
    """The in-flight fire recorded in status before its side effect."""

    rule: str
    schedule_time: str  # stamp() of the fire's scheduleTime
    resource_version: str  # the target's version the write is conditional on
    holder: str  # the CronController that wrote it (one per process)

    def condition(self, now: datetime) -> Condition:
        message = json.dumps(
            {
                "rule": self.rule,
                "scheduleTime": self.schedule_time,
                "resourceVersion": self.resource_version,
                "holder": self.holder,
            },
            separators=(",", ":"),
        )
        return Condition(
            type=MARKER_TYPE, status="True", reason=MARKER_REASON, message=message, last_transition_time=now
        )

    @staticmethod
    def read(cron: CronFederatedHPA) -> _Marker | None:
        for condition in (cron.status.conditions if cron.status else None) or []:
            if condition.type == MARKER_TYPE:
                return _Marker.read_condition(condition)
        return None

    @staticmethod
    def read_condition(condition: Condition) -> _Marker | None:
        try:
            data = json.loads(condition.message or "")
            return _Marker(
                str(data["rule"]),
                str(data["scheduleTime"]),
                str(data["resourceVersion"]),
                str(data["holder"]),
            )
        except (ValueError, KeyError, TypeError):
            return None


class _StatusMoved(Exception):
    """The marker's compare-and-swap lost: the CronFederatedHPA changed; read it again."""


@dataclass(frozen=True)
class _Run:
    """One rule's execution in progress: what it scales, and the two times every Outcome of it carries."""

    namespace: str
    target: CrossVersionObjectReference
    rule: CronFederatedHPARule
    due: Due
    executed: datetime

    def failed(self, message: str) -> Outcome:
        return Outcome(self.due.schedule_time, self.executed, False, message)

    def succeeded(
        self, *, replicas: int | None = None, min_replicas: int | None = None, max_replicas: int | None = None
    ) -> Outcome:
        return Outcome(
            self.due.schedule_time,
            self.executed,
            True,
            applied_replicas=replicas,
            applied_min_replicas=min_replicas,
            applied_max_replicas=max_replicas,
        )


@dataclass
class _Pass:
    """Executions done during one reconcile, kept across status-conflict retries so none is repeated."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    reported_invalid: set[str] = field(default_factory=set)
    refused: dict[str, datetime] = field(default_factory=dict)  # rule -> scheduleTime retried later
    retry_at: datetime | None = None  # the earliest moment a refused fire may be tried again
    cron: CronFederatedHPA | None = None  # the newest version read or written (marker writes move it)
    decisions: list[RuleDecision] = field(default_factory=list)


class CronController:
    """Runs CronFederatedHPA rules through the ControlPlane port; the caller owns timers and the clock."""

    def __init__(
        self,
        control_plane: ControlPlane,
        default_time_zone: str = "UTC",
        identity: str | None = None,
        namespaces: NamespacePolicy | None = None,
        on_fire: FireHook | None = None,
    ) -> None:
        self.control_plane = control_plane
        self.on_fire = on_fire
        self.default_zone = load_time_zone(default_time_zone)
        self.namespaces = namespaces  # None: every namespace (the simulator's)
        self.identity = identity or uuid.uuid4().hex[:12]  # whose markers are whose
        # executions done but not yet in status (every status write failed): recorded, never re-run
        self._unrecorded: dict[tuple[str, str], dict[str, Outcome]] = {}
        # refused fires: (namespace, name, rule, scheduleTime) -> (refusals so far, not to be tried before)
        self._refusals: dict[tuple[str, str, str, datetime], tuple[int, datetime]] = {}

    def reconcile(self, namespace: str, name: str, now: datetime) -> datetime | None:
        """Run what is due for one CronFederatedHPA, write its status; return when to call again (or None)."""
        now = as_utc(now)
        key = (namespace, name)
        work = _Pass(outcomes=self._unrecorded.pop(key, {}))
        try:
            for _ in range(CONFLICT_ATTEMPTS):
                cron = self.control_plane.get_cron_federated_hpa(namespace, name)
                if cron is None or cron.metadata.deletion_timestamp:
                    work.outcomes.clear()
                    self._refusals = {k: v for k, v in self._refusals.items() if k[:2] != key}
                    return None
                refusal = self.namespaces.refusal(namespace) if self.namespaces else None
                if refusal is not None:
                    work.outcomes.clear()
                    try:
                        self._refuse(cron, refusal, now)
                    except ConflictError:
                        continue
                    return None
                decisions = self._decide(cron, now)
                work.cron, work.decisions = cron, decisions
                try:
                    self._run_due(cron, decisions, now, work)
                except _StatusMoved:
                    continue  # someone else's marker or status write won: read again
                cron = work.cron
                status = self._status(cron, decisions, work)
                wake = next_wakeup(decisions)
                if work.retry_at is not None:
                    wake = work.retry_at if wake is None else min(wake, work.retry_at)
                if cron.status is None or status != cron.status:
                    try:
                        self.control_plane.update_cron_federated_hpa_status(cron, status)
                    except ConflictError:
                        continue  # re-read; executions already done are recorded, not repeated
                work.outcomes.clear()
                return wake
            log.warning("cron %s/%s: status write conflicts; retry in %s", namespace, name, RETRY_AFTER)
            return now + RETRY_AFTER
        finally:
            if work.outcomes:
                self._unrecorded[key] = work.outcomes

    def _status(
        self,
        cron: CronFederatedHPA,
        decisions: list[RuleDecision],
        work: _Pass,
        marker: Condition | None = None,
    ) -> CronFederatedHPAStatus:
        """build_status, plus: a refused fire, or the one being applied, stays advertised (and so owed)
        as the next execution, and the Executing marker is dropped (or replaced by ``marker``)."""
        status = build_status(cron, decisions, work.outcomes)
        owed = dict(work.refused)
        in_flight = _Marker.read_condition(marker) if marker is not None else None
        if in_flight is not None:
            owed[in_flight.rule] = parse_stamp(in_flight.schedule_time)
        histories = [
            h.model_copy(update={"next_execution_time": owed[h.rule_name]}) if h.rule_name in owed else h
            for h in status.execution_histories or []
        ]
        conditions = [c for c in without_refusal(status.conditions) or [] if c.type != MARKER_TYPE]
        if marker is not None:
            conditions.append(marker)
        conditions = with_kstatus(conditions)
        return status.model_copy(
            update={
                "execution_histories": histories or None,
                "conditions": conditions or None,
                **summary(histories),
            }
        )

    def _refuse(self, cron: CronFederatedHPA, message: str, now: datetime) -> None:
        """A namespace the controller may not act in: no rule runs; status and a Warning Event say why."""
        previous = cron.status.conditions if cron.status else None
        if is_refused(previous, message):
            return
        base = cron.status or CronFederatedHPAStatus()
        status = base.model_copy(
            update={
                "conditions": refused_conditions(previous, message, now.replace(microsecond=0)),
                "observed_generation": cron.metadata.generation,
            }
        )
        self.control_plane.update_cron_federated_hpa_status(cron, status)
        self._event(cron, "Warning", REASON_NAMESPACE_NOT_ALLOWED, message)

    def _conditional(self) -> ConditionalControlPlane | None:
        """The control plane's conditional writes, when it has them (the simulator's has not)."""
        cp = self.control_plane
        needed = ("get_scale", "scale_workload_if_unchanged", "patch_federated_hpa_bounds_if_unchanged")
        return cp if all(callable(getattr(cp, n, None)) for n in needed) else None  # type: ignore[return-value]

    def _mark(self, work: _Pass, run: _Run, resource_version: str) -> None:
        """Record "executing this fire, conditional on this version" before the side effect (CAS)."""
        assert work.cron is not None
        marker = _Marker(run.rule.name, stamp(run.due.schedule_time), resource_version, self.identity)
        status = self._status(work.cron, work.decisions, work, marker.condition(run.executed))
        try:
            work.cron = self.control_plane.update_cron_federated_hpa_status(work.cron, status)
        except ConflictError:
            raise _StatusMoved from None

    def _decide(self, cron: CronFederatedHPA, now: datetime) -> list[RuleDecision]:
        created = creation_time(cron) if is_new_object(cron) else None
        old = {h.rule_name: h for h in (cron.status.execution_histories if cron.status else None) or []}
        read: dict[str, dict[str, str] | str] = {}  # one read per ConfigMap per pass
        decisions = []
        for rule in cron.spec.rules:
            calendar, problem = self._calendar(cron, rule, read)
            decisions.append(
                decide_rule(
                    rule,
                    old.get(rule.name),
                    now=now,
                    default_zone=self.default_zone,
                    created_at=created,
                    calendar=calendar,
                    calendar_problem=problem,
                )
            )
        return decisions

    def _calendar(
        self, cron: CronFederatedHPA, rule: CronFederatedHPARule, read: dict[str, dict[str, str] | str]
    ) -> tuple[str | None, str | None]:
        """The text of the rule's calendar key, or why it cannot be read (the rule then does not fire)."""
        ref = rule.exclude_calendar_ref
        if ref is None:
            return None, None
        namespace = cron.metadata.namespace or "default"
        if ref.name not in read:
            try:
                found = self.control_plane.get_config_map_data(namespace, ref.name)
                read[ref.name] = found if found is not None else f"ConfigMap {namespace}/{ref.name} not found"
            except PortError as exc:
                read[ref.name] = f"ConfigMap {namespace}/{ref.name} could not be read: {exc}"
        data = read[ref.name]
        if isinstance(data, str):
            return None, f"excludeCalendarRef: {data}; the rule does not fire until its calendar can be read"
        if ref.effective_key not in data:
            return None, (
                f"excludeCalendarRef: ConfigMap {namespace}/{ref.name} has no key {ref.effective_key!r}; "
                "the rule does not fire until it has"
            )
        return data[ref.effective_key], None

    def _run_due(
        self, cron: CronFederatedHPA, decisions: list[RuleDecision], now: datetime, work: _Pass
    ) -> None:
        rules = {rule.name: rule for rule in reversed(cron.spec.rules)}
        history_next = {
            h.rule_name: h.next_execution_time
            for h in (cron.status.execution_histories if cron.status else None) or []
        }
        for decision in decisions:
            rule = rules[decision.rule_name]
            if decision.invalid is not None:
                if decision.rule_name not in work.reported_invalid and (
                    decision.rule_name not in history_next or history_next[decision.rule_name] is not None
                ):
                    work.reported_invalid.add(decision.rule_name)
                    self._event(cron, "Warning", INVALID_RULE, f"rule {rule.name}: {decision.invalid}")
                continue
            due = decision.due
            if due is None:
                continue
            done = work.outcomes.get(rule.name)
            if done is not None and done.schedule_time == due.schedule_time:
                continue
            if work.refused.get(rule.name) == due.schedule_time:
                continue  # refused in this pass already: retried on the next one
            outcome = self._execute(cron, rule, due, now, work)
            if outcome is None:
                continue
            self._forget_refusals(cron, rule.name)
            work.outcomes[rule.name] = outcome
            self._report(cron, rule, due, outcome)
            if self.on_fire is not None:
                result = "missed" if not due.runnable else "succeeded" if outcome.succeeded else "failed"
                self.on_fire(cron.metadata.namespace or "default", result)

    def _execute(
        self, cron: CronFederatedHPA, rule: CronFederatedHPARule, due: Due, now: datetime, work: _Pass
    ) -> Outcome | None:
        """The fire's outcome, or None when its write was refused and will be retried (window open)."""
        target = cron.spec.scale_target_ref
        run = _Run(cron.metadata.namespace or "default", target, rule, due, now.replace(microsecond=0))
        if not due.runnable:
            return run.failed(missed_message(due))
        refusal_key = (run.namespace, cron.metadata.name or "", rule.name, due.schedule_time)
        refusals, not_before = self._refusals.get(refusal_key, (0, now))
        if now < not_before:  # refused a moment ago: wait for the paced retry
            return self._owe(work, rule.name, due.schedule_time, not_before)
        marker = _Marker.read(work.cron or cron)
        inherited = (
            marker
            if marker is not None
            and marker.holder != self.identity
            and marker.rule == rule.name
            and marker.schedule_time == stamp(due.schedule_time)
            else None
        )
        try:
            if targets_federated_hpa(target):
                return self._scale_federated_hpa(run, work, inherited)
            return self._scale_workload(run, work, inherited)
        except PortError as exc:  # the API server or a webhook refused the write, or did not answer
            message = f"scaling {_describe(target)} failed: {exc}"
            delay = retry_delay(refusals + 1)
            if due.late_seconds + delay.total_seconds() <= due.max_delay_seconds:
                self._refusals[refusal_key] = (refusals + 1, now + delay)
                when, wait = stamp(due.schedule_time), delay.total_seconds()
                self._event(
                    cron,
                    "Warning",
                    SCALE_RETRYING,
                    f"rule {rule.name} (scheduled {when}): {message}; retrying in {wait:g} s",
                )
                return self._owe(work, rule.name, due.schedule_time, now + delay)
            return run.failed(message)

    @staticmethod
    def _owe(work: _Pass, rule_name: str, schedule_time: datetime, retry_at: datetime) -> None:
        """Keep a refused fire owed (advertised as the next execution) until ``retry_at``."""
        work.refused[rule_name] = schedule_time
        work.retry_at = retry_at if work.retry_at is None else min(work.retry_at, retry_at)

    def _forget_refusals(self, cron: CronFederatedHPA, rule_name: str) -> None:
        namespace = cron.metadata.namespace or "default"
        for key in [k for k in self._refusals if k[:3] == (namespace, cron.metadata.name or "", rule_name)]:
            del self._refusals[key]

    def _scale_federated_hpa(self, run: _Run, work: _Pass, inherited: _Marker | None) -> Outcome:
        namespace, target = run.namespace, run.target
        if target.kind != FEDERATED_HPA:
            return run.failed(
                f"scaleTargetRef kind {target.kind!r} is not supported in {API_VERSION}; only FederatedHPA"
            )
        for _ in range(CONFLICT_ATTEMPTS):
            fhpa = self.control_plane.get_federated_hpa(namespace, target.name)
            if fhpa is None:
                return run.failed(f"FederatedHPA {namespace}/{target.name} not found")
            change = bounds_change(fhpa, run.rule)
            if isinstance(change, str):
                return run.failed(change)
            conditional = self._conditional()
            try:
                if change.changes_something and conditional is not None:
                    # the old leader's version first: at most one of its write and ours is applied
                    version = (
                        inherited.resource_version if inherited else (fhpa.metadata.resource_version or "")
                    )
                    if inherited is None:
                        self._mark(work, run, version)
                    conditional.patch_federated_hpa_bounds_if_unchanged(
                        namespace, target.name, change.min_replicas, change.max_replicas, version
                    )
                elif change.changes_something:
                    self.control_plane.patch_federated_hpa_bounds(
                        namespace, target.name, change.min_replicas, change.max_replicas
                    )
            except ConflictError:
                # someone changed it: read again and re-check min <= max. An old leader's write with the
                # inherited version can no longer land, so from here the fire is ours to apply.
                inherited = None
                continue
            return run.succeeded(min_replicas=change.applied_min, max_replicas=change.applied_max)
        return run.failed(
            f"FederatedHPA {namespace}/{target.name} kept changing (conflict {CONFLICT_ATTEMPTS} times)"
        )

    def _scale_workload(self, run: _Run, work: _Pass, inherited: _Marker | None) -> Outcome:
        target = run.target
        replicas = run.rule.target_replicas
        if replicas is None or replicas < 0:
            return run.failed(f"targetReplicas must be set to 0 or more to scale {_describe(target)}")
        not_found = f"{_describe(target)} not found in namespace {run.namespace} (scale subresource)"
        conditional = self._conditional()
        for _ in range(CONFLICT_ATTEMPTS):
            try:
                if conditional is None:
                    self.control_plane.scale_workload(run.namespace, target, replicas)
                    return run.succeeded(replicas=replicas)
                if inherited is not None:
                    version = inherited.resource_version  # the old leader's: at most one write lands
                else:
                    _, version = conditional.get_scale(run.namespace, target)
                    self._mark(work, run, version)
                conditional.scale_workload_if_unchanged(run.namespace, target, replicas, version)
            except ConflictError:
                if inherited is not None and conditional is not None:
                    return self._after_inherited_conflict(run, conditional, replicas)
                continue
            except NotFoundError:
                return run.failed(not_found)
            return run.succeeded(replicas=replicas)
        return run.failed(f"{_describe(target)} kept changing (conflict {CONFLICT_ATTEMPTS} times)")

    def _after_inherited_conflict(
        self, run: _Run, conditional: ConditionalControlPlane, replicas: int
    ) -> Outcome:
        """The target moved since the old leader read it: its write can no longer land, and may have."""
        try:
            current, _ = conditional.get_scale(run.namespace, run.target)
        except NotFoundError:
            return run.failed(
                f"{_describe(run.target)} not found in namespace {run.namespace} (scale subresource)"
            )
        if current == replicas:
            log.info("cron fire applied by the previous leader", extra={"rule": run.rule.name})
            return run.succeeded(replicas=replicas)
        return run.failed(
            f"not applied: {_describe(run.target)} changed while leadership moved "
            "(the previous leader may have applied this fire before it changed); not applied twice"
        )

    def _report(self, cron: CronFederatedHPA, rule: CronFederatedHPARule, due: Due, outcome: Outcome) -> None:
        when = stamp(outcome.schedule_time)
        if outcome.succeeded:
            applied = _applied_text(outcome)
            message = f"rule {rule.name} (scheduled {when}): {applied}{skipped_note(due)}"
            self._event(cron, "Normal", SCALE_SUCCEEDED, message)
        elif outcome.message.startswith(SKIPPED_PAUSED):  # on purpose: not a Warning
            self._event(
                cron, "Normal", SCALE_SKIPPED, f"rule {rule.name} (scheduled {when}): {outcome.message}"
            )
        else:
            self._event(
                cron, "Warning", SCALE_FAILED, f"rule {rule.name} (scheduled {when}): {outcome.message}"
            )

    def _event(
        self, cron: CronFederatedHPA, type_: Literal["Normal", "Warning"], reason: str, message: str
    ) -> None:
        try:
            self.control_plane.emit_event(cron, type_, reason, message)
        except PortError as exc:  # an Event is best effort; status is the record
            log.warning(
                "cron %s/%s: event %s not recorded: %s",
                cron.metadata.namespace,
                cron.metadata.name,
                reason,
                exc,
            )


class CronFederatedHPAReconciler:
    """The CronFederatedHPA reconciler: ``CronController`` on a clock, its next wake-up as a requeue-after.

    The runtime's work queue (or the simulator's virtual clock) holds the wake-up, so there is no timer
    of the cron controller's own: a rule is due again when its key comes back from the queue.
    """

    def __init__(self, cron: CronController, clock: Clock) -> None:
        self.cron = cron
        self.clock = clock

    def reconcile(self, namespace: str, name: str) -> Result:
        now = self.clock.now()
        wake = self.cron.reconcile(namespace, name, now)
        return Result() if wake is None else Result.after((wake - as_utc(now)).total_seconds())


def _applied_text(outcome: Outcome) -> str:
    parts = []
    if outcome.applied_replicas is not None:
        parts.append(f"replicas={outcome.applied_replicas}")
    if outcome.applied_min_replicas is not None:
        parts.append(f"minReplicas={outcome.applied_min_replicas}")
    if outcome.applied_max_replicas is not None:
        parts.append(f"maxReplicas={outcome.applied_max_replicas}")
    return "set " + ", ".join(parts)


def _describe(target: CrossVersionObjectReference) -> str:
    return f"{target.kind} {target.name}"
