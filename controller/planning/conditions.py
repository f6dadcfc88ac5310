"""Status conditions with stable lastTransitionTime: a condition only gets a new time when it flips."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fhpa_api.models import Condition

Status = Literal["True", "False", "Unknown"]


def condition(
    previous: list[Condition] | None,
    type_: str,
    status: Status,
    reason: str,
    message: str,
    now: datetime,
) -> Condition:
    """A condition of ``type_``, keeping the previous lastTransitionTime when its status is unchanged."""
    old = next((c for c in previous or [] if c.type == type_), None)
    since = old.last_transition_time if old is not None and old.status == status else now
    return Condition(type=type_, status=status, reason=reason, message=message, last_transition_time=since)


def had_reason(previous: list[Condition] | None, reason: str) -> bool:
    """Was ``reason`` already reported? Events are emitted on transitions only, not on every pass."""
    return any(c.reason == reason for c in previous or [])
