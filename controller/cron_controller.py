"""The CronFederatedHPA controller: runs the rules that are due through the ControlPlane port.

``controller.planning.cron`` decides what is due and what status records it; this is the part with side
effects: it reads the object, scales the target (a FederatedHPA's bounds or a workload's /scale), writes
the status and emits Events. The caller owns the timers and the clock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from controller.errors import ConflictError, NotFoundError, PortError
from controller.planning.cron import (
    INVALID_RULE,
    SCALE_FAILED,
    SCALE_SUCCEEDED,
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
    targets_federated_hpa,
)
from controller.ports import ControlPlane
from fhpa_api import API_VERSION, FEDERATED_HPA
from fhpa_api.models import CronFederatedHPA, CronFederatedHPARule, CrossVersionObjectReference
from fhpa_api.schedule import load_time_zone

log = logging.getLogger(__name__)

CONFLICT_ATTEMPTS = 5
RETRY_AFTER = timedelta(seconds=5)


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


class CronController:
    """Runs CronFederatedHPA rules through the ControlPlane port; the caller owns timers and the clock."""

    def __init__(self, control_plane: ControlPlane, default_time_zone: str = "UTC") -> None:
        self.control_plane = control_plane
        self.default_zone = load_time_zone(default_time_zone)
        # executions done but not yet in status (every status write failed): recorded, never re-run
        self._unrecorded: dict[tuple[str, str], dict[str, Outcome]] = {}

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
                    return None
                decisions = self._decide(cron, now)
                self._run_due(cron, decisions, now, work)
                status = build_status(cron, decisions, work.outcomes)
                wake = next_wakeup(decisions)
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

    def _decide(self, cron: CronFederatedHPA, now: datetime) -> list[RuleDecision]:
        created = creation_time(cron) if is_new_object(cron) else None
        old = {h.rule_name: h for h in (cron.status.execution_histories if cron.status else None) or []}
        return [
            decide_rule(rule, old.get(rule.name), now=now, default_zone=self.default_zone, created_at=created)
            for rule in cron.spec.rules
        ]

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
            outcome = self._execute(cron, rule, due, now)
            work.outcomes[rule.name] = outcome
            self._report(cron, rule, due, outcome)

    def _execute(
        self, cron: CronFederatedHPA, rule: CronFederatedHPARule, due: Due, now: datetime
    ) -> Outcome:
        target = cron.spec.scale_target_ref
        run = _Run(cron.metadata.namespace or "default", target, rule, due, now.replace(microsecond=0))
        if not due.runnable:
            return run.failed(missed_message(due))
        try:
            if targets_federated_hpa(target):
                return self._scale_federated_hpa(run)
            return self._scale_workload(run)
        except PortError as exc:
            return run.failed(f"scaling {_describe(target)} failed: {exc}")

    def _scale_federated_hpa(self, run: _Run) -> Outcome:
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
            try:
                if change.changes_something:
                    self.control_plane.patch_federated_hpa_bounds(
                        namespace, target.name, change.min_replicas, change.max_replicas
                    )
            except ConflictError:
                continue  # someone changed it: read again and re-check min <= max
            return run.succeeded(min_replicas=change.applied_min, max_replicas=change.applied_max)
        return run.failed(
            f"FederatedHPA {namespace}/{target.name} kept changing (conflict {CONFLICT_ATTEMPTS} times)"
        )

    def _scale_workload(self, run: _Run) -> Outcome:
        target = run.target
        replicas = run.rule.target_replicas
        if replicas is None or replicas < 0:
            return run.failed(f"targetReplicas must be set to 0 or more to scale {_describe(target)}")
        for _ in range(CONFLICT_ATTEMPTS):
            try:
                self.control_plane.scale_workload(run.namespace, target, replicas)
            except ConflictError:
                continue
            except NotFoundError:
                return run.failed(
                    f"{_describe(target)} not found in namespace {run.namespace} (scale subresource)"
                )
            return run.succeeded(replicas=replicas)
        return run.failed(f"{_describe(target)} kept changing (conflict {CONFLICT_ATTEMPTS} times)")

    def _report(self, cron: CronFederatedHPA, rule: CronFederatedHPARule, due: Due, outcome: Outcome) -> None:
        when = stamp(outcome.schedule_time)
        if outcome.succeeded:
            applied = _applied_text(outcome)
            message = f"rule {rule.name} (scheduled {when}): {applied}{skipped_note(due)}"
            self._event(cron, "Normal", SCALE_SUCCEEDED, message)
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
