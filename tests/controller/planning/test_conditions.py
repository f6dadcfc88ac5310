"""Conditions keep their lastTransitionTime until their status flips; reasons already reported are known."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controller.planning.conditions import condition, had_reason

T0 = datetime(2026, 11, 23, tzinfo=UTC)
LATER = T0 + timedelta(minutes=5)


def test_an_unchanged_status_keeps_its_transition_time_and_takes_the_new_words() -> None:
    first = condition(None, "Ready", "True", "Planned", "all good", T0)
    again = condition([first], "Ready", "True", "StillPlanned", "still good", LATER)
    assert first.last_transition_time == T0
    assert again.last_transition_time == T0
    assert (again.reason, again.message) == ("StillPlanned", "still good")


def test_a_flip_takes_the_new_time_and_other_types_do_not_count() -> None:
    ready = condition(None, "Ready", "True", "Planned", "all good", T0)
    other = condition(None, "Healthy", "False", "Unhealthy", "down", T0)
    assert condition([ready, other], "Ready", "False", "Blocked", "no", LATER).last_transition_time == LATER
    assert condition([other], "Ready", "False", "Blocked", "no", LATER).last_transition_time == LATER


def test_had_reason_looks_at_the_previous_conditions_only() -> None:
    previous = [condition(None, "Ready", "False", "NamespaceNotAllowed", "refused", T0)]
    assert had_reason(previous, "NamespaceNotAllowed")
    assert not had_reason(previous, "Planned")
    assert not had_reason(None, "NamespaceNotAllowed")
