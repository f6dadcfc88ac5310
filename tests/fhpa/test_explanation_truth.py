"""explain tells what status holds: over planner-made statuses (a cluster that flaps, so its grace
grows), every failover figure explain prints is the status field it names, never a default."""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import given, note, settings
from hypothesis import strategies as st

from fhpa.explanation import explain
from tests.support.planning_builders import T0, fhpa, obs, run, settle, update

DUE = re.compile(
    r"fails over at (?P<at>\S+) \([^)]*\) if it stays unreachable "
    r"\(its grace (?P<grace>\d+)s(?:, grown by (?P<grown>\d+) failovers? within the hour)?\)"
)

# each step: how many seconds pass, and whether cluster b answers afterwards
steps = st.lists(st.tuples(st.integers(5, 400), st.booleans()), min_size=1, max_size=14)


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(0, 600))
def test_the_failover_figures_explain_prints_are_the_status_fields(
    path: list[tuple[int, bool]], later: int
) -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"a": 1, "b": 1})
    fleet = [obs("a", 2), obs("b", 2)]
    now = T0
    for seconds, answers in path:
        now += timedelta(seconds=seconds)
        fleet = update(fleet, "b", healthy=answers)
        p = run(f, fleet, now)
        f = f.model_copy(update={"status": p.status})
        row = next(r for r in p.status.clusters or [] if r.name == "b")
        asked = now + timedelta(seconds=later)
        b = next(c for c in explain(f, [], asked).clusters if c.name == "b")
        note(f"{now} answers={answers} state={b.state} next={b.next} row={row}")
        said = [m for m in (DUE.search(line) for line in b.next) if m]
        if row.failover_at is None:
            assert not said
            continue
        assert b.state == "Unreachable" and len(said) == 1
        said_at, grace, grown = said[0].group("at", "grace", "grown")
        assert said_at == row.failover_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert int(grace) == row.failover_grace_seconds
        assert (int(grown) if grown else 0) == (row.failovers or 0)


def test_explain_says_which_move_last_changed_a_max() -> None:
    """The row records the Event that last moved its max; explain names it rather than guessing."""
    f = fhpa("Prioritized", 2, 40, priorities={"a": 2, "b": 1})
    f, fleet, _ = settle(f, [obs("a", 10, 10), obs("b", 20, 100)])
    f, fleet, _ = settle(f, fleet, T0 + timedelta(seconds=120))
    fleet = update(fleet, "b", hpa_desired=15)
    fleet = [
        o.model_copy(update={"hpa": o.hpa.model_copy(update={"metric_ratio": 0.5})}) if o.hpa else o
        for o in fleet
    ]
    now = T0 + timedelta(seconds=240)
    p = run(f, fleet, now)
    row = next(r for r in p.status.clusters or [] if r.name == "b")
    assert (row.max_trend, row.max_moved_by) == (-1, "DrainedFirst")
    b = next(c for c in explain(f.model_copy(update={"status": p.status}), [], now).clusters if c.name == "b")
    assert any(line.endswith("(0s ago), by DrainedFirst") for line in b.why), b.why


def test_a_preference_picked_by_labels_is_read_from_status() -> None:
    """A labelSelector preference cannot be resolved from the spec (labels live in the Secret): the row
    records which entry matched, and explain gives the weights instead of a gap."""
    prefs = [
        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "big"}}}, "staticWeight": 3},
        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "small"}}}, "staticWeight": 1},
    ]
    f = fhpa(
        "StaticWeighted",
        2,
        8,
        federatedHPAAssignment={
            "federatedHPAAssignmentType": "StaticWeighted",
            "clusterAutoscalingPreference": prefs,
        },
    )
    p = run(f, [obs("a", 1, labels={"tier": "big"}), obs("b", 1, labels={"tier": "small"}), obs("c", 1)])
    assert {r.name: r.preference for r in p.status.clusters or []} == {"a": 0, "b": 1, "c": -1}
    e = explain(f.model_copy(update={"status": p.status}), [], T0)
    assert not [g for g in e.not_in_status if "labelSelector" in g]
