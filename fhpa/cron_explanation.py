"""What `fhpa explain --kind cronfhpa` says about a CronFederatedHPA, worked out from its spec and status
alone (pure, like ``fhpa.explanation``): per rule, when it fires next and what its last executions did,
and whether the object it scales exists, since a missing target is the usual reason every fire fails.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fhpa_api.models import CronFederatedHPA, CronFederatedHPARule, ExecutionHistory

TARGET_EXISTS = "exists"
TARGET_MISSING = "not found"


def explain_cron(cron: CronFederatedHPA, target_state: str | None, now: datetime) -> list[str]:
    """The lines of the explanation; ``target_state`` is TARGET_EXISTS, TARGET_MISSING or None (could
    not be read)."""
    ref = cron.spec.scale_target_ref
    where = f"{cron.metadata.namespace}/{ref.name}"
    state = target_state or "unknown (could not be read)"
    lines = [
        f"CronFederatedHPA {cron.metadata.namespace}/{cron.metadata.name}",
        f"target: {ref.kind} {where}: {state}",
    ]
    if target_state == TARGET_MISSING:
        lines.append("  every fire fails until the target exists")
    histories = {h.rule_name: h for h in (cron.status.execution_histories if cron.status else None) or []}
    for rule in cron.spec.rules:
        lines += _rule(rule, histories.get(rule.name), now)
    return lines


def _rule(rule: CronFederatedHPARule, history: ExecutionHistory | None, now: datetime) -> list[str]:
    zone = f" ({rule.time_zone})" if rule.time_zone else ""
    lines = [f"rule {rule.name}: {rule.schedule}{zone}, sets {_sets(rule)}"]
    if rule.suspend:
        lines.append("  suspended: it does not fire")
    elif history is None or history.next_execution_time is None:
        lines.append("  next fire: not scheduled yet (the controller has not seen this rule)")
    else:
        fire = history.next_execution_time
        lines.append(f"  next fire: {_stamp(fire)} ({_relative(fire, now)})")
    done = (history.successful_executions if history else None) or []
    failed = (history.failed_executions if history else None) or []
    if done:
        last = max(done, key=lambda e: e.execution_time)
        applied = _applied(last.applied_replicas, last.applied_min_replicas, last.applied_max_replicas)
        lines.append(f"  last success: {_stamp(last.execution_time)}, applied {applied}")
    if failed:
        last_failed = max(failed, key=lambda e: e.execution_time)
        lines.append(f"  last failure: {_stamp(last_failed.execution_time)}: {last_failed.message}")
    if not done and not failed:
        lines.append("  no execution recorded yet")
    return lines


def _sets(rule: CronFederatedHPARule) -> str:
    return _applied(rule.target_replicas, rule.target_min_replicas, rule.target_max_replicas)


def _applied(replicas: int | None, low: int | None, high: int | None) -> str:
    parts = [f"replicas {replicas}"] if replicas is not None else []
    parts += [f"minReplicas {low}"] if low is not None else []
    parts += [f"maxReplicas {high}"] if high is not None else []
    return ", ".join(parts) or "nothing"


def _stamp(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _relative(t: datetime, now: datetime) -> str:
    seconds = int((t - now).total_seconds())
    return f"in {seconds}s" if seconds >= 0 else f"{-seconds}s overdue"
