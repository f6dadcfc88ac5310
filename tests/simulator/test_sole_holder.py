"""The simulator's own reading of a sole holder's shorter grace."""

from __future__ import annotations

from datetime import UTC, datetime

from controller.planning.failover import HealthPolicy
from simulator.sole_holder import GraceRecorder, Seen

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def recorder() -> GraceRecorder:
    return GraceRecorder(HealthPolicy(grace_seconds=60, hysteresis_seconds=0, enabled=True), 30)


def run(r: GraceRecorder, fleets: list[dict[str, Seen]], dt: float = 15) -> list[dict[str, float]]:
    return [r.graces(i * dt, NOW, seen, {}) for i, seen in enumerate(fleets)]


def up(replicas: int) -> Seen:
    return Seen(down=False, selected=True, workload=True, replicas=replicas)


DOWN = Seen(down=True, selected=True, workload=True, replicas=0)


def test_the_last_holder_unreachable_while_another_has_the_workload_gets_the_blip_tolerance():
    graces = run(recorder(), [{"a": up(2), "b": up(0)}, {"a": DOWN, "b": up(0)}])
    assert [g["a"] for g in graces] == [60, 30]


def test_no_shorter_grace_while_another_cluster_runs_replicas_or_none_has_the_workload():
    assert run(recorder(), [{"a": up(2), "b": up(1)}, {"a": DOWN, "b": up(1)}])[-1]["a"] == 60
    empty = Seen(down=False, selected=True, workload=False, replicas=0)
    assert run(recorder(), [{"a": up(2), "b": empty}, {"a": DOWN, "b": empty}])[-1]["a"] == 60


def test_a_sole_holder_failed_over_within_the_hour_keeps_the_full_grace():
    """Down long enough to be failed over (30 s), back, then down again 10 minutes later."""
    spell = [{"a": DOWN, "b": up(0)}] * 4
    back = [{"a": up(2), "b": up(0)}] * 40
    graces = run(recorder(), [{"a": up(2), "b": up(0)}, *spell, *back, *spell])
    assert graces[1]["a"] == 30 and graces[45]["a"] == 60


def test_a_failover_counts_though_the_stand_in_it_starts_ends_the_sole_holding():
    """The pass that fails a sole holder over starts replicas elsewhere, so from that step on it is no
    sole holder and its grace is the longer one again; it was failed over all the same, and within the
    hour its next spell gets the full grace."""
    spell = [{"a": DOWN, "b": up(0)}] * 2 + [{"a": DOWN, "b": up(2)}] * 2
    back = [{"a": up(2), "b": up(0)}] * 40
    graces = run(recorder(), [{"a": up(2), "b": up(0)}, *spell, *back, *spell])
    assert graces[1]["a"] == 30 and graces[3]["a"] == 60 and graces[45]["a"] == 60


def test_pods_that_cannot_be_scheduled_do_not_end_the_sole_holding():
    """As the controller reads it: a reachable cluster whose only pods pend unschedulable runs nothing."""
    stuck = Seen(down=False, selected=True, workload=True, replicas=3, pending=3)
    assert run(recorder(), [{"a": up(2), "b": up(0)}, {"a": DOWN, "b": stuck}])[-1]["a"] == 30
    starting = Seen(down=False, selected=True, workload=True, replicas=3, pending=2)  # one scheduled
    assert run(recorder(), [{"a": up(2), "b": up(0)}, {"a": DOWN, "b": starting}])[-1]["a"] == 60
