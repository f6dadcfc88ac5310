"""summary.json's time_to_absorb_s (the first shortfall lasts until served is back at 99% of demand), and
timeline.csv's documented columns."""

from __future__ import annotations

import csv
from functools import cache

from simulator.builtin import builtin_document, builtin_scenario
from simulator.engine import RunResult, simulate
from simulator.report import (
    ABSORB_SUSTAIN_S,
    CSV_COLUMNS,
    replica_seconds_split,
    time_to_absorb,
    write_csv,
)
from simulator.samples import ClusterSample, StepSample
from simulator.scenario import parse_scenario

STEP = 15.0


def run(served_fractions: list[float], demand: float = 1000.0) -> list[StepSample]:
    """Steps 15 s apart with constant demand and served at the given fractions of it."""
    return [
        StepSample(
            t=i * STEP,
            demand_rps=demand,
            served_rps=fraction * demand,
            oracle_rps=demand,
            controller_up=True,
            fhpa_min=1,
            fhpa_max=10,
            clusters={},
        )
        for i, fraction in enumerate(served_fractions)
    ]


def test_always_served_has_nothing_to_absorb() -> None:
    assert time_to_absorb(run([1.0] * 40)) is None


def test_a_lag_under_one_percent_is_not_a_shortfall() -> None:
    assert time_to_absorb(run([1.0, 0.995, 1.0] + [1.0] * 40)) is None


def test_one_good_step_between_a_blip_and_the_real_climb_does_not_end_the_episode() -> None:
    # 15 s short at t=15, back at t=30 for one step, then short from t=45 to t=435, back for good at t=450
    fractions = [1.0, 0.9, 1.0] + [0.7] * 27 + [1.0] * 40
    assert time_to_absorb(run(fractions)) == 450 - 15


def test_a_good_stretch_shorter_than_the_sustain_period_does_not_end_the_episode() -> None:
    good_steps = int(ABSORB_SUSTAIN_S / STEP) - 1  # 4 min 45 s back, then short again
    fractions = [0.5] + [1.0] * good_steps + [0.5] + [1.0] * 40
    assert time_to_absorb(run(fractions)) == (good_steps + 2) * STEP


def test_back_for_the_rest_of_a_run_that_ends_sooner_than_the_sustain_period_counts() -> None:
    assert time_to_absorb(run([0.5] * 10 + [1.0] * 3)) == 10 * STEP


def test_never_back_lasts_to_the_end_of_the_run() -> None:
    assert time_to_absorb(run([1.0] * 4 + [0.5] * 10)) == 10 * STEP


@cache
def builtin_run() -> RunResult:
    return simulate(builtin_scenario())


def test_builtin_scenario_covers_the_climb_not_just_the_first_blip() -> None:
    steps = builtin_run().steps
    short = [s.t for s in steps if s.served_rps < 0.99 * s.demand_rps]
    start = short[0]
    # the climb's last short step before the cluster outage: the episode must reach past it
    climb_end = max(t for t in short if t < steps[-1].t / 2)
    absorbed = time_to_absorb(steps)
    assert absorbed is not None
    assert absorbed > climb_end - start
    assert absorbed > 10 * STEP  # not the one-step lag the literal reading reported


TIMELINE_CONTRACT = (
    "t_s",
    "time",
    "cluster",
    "demand_rps",
    "replicas",
    "ready",
    "starting",
    "pending",
    "capacity",
    "down",
    "hpa_min",
    "hpa_max",
    "hpa_desired",
    "utilization_pct",
    "served_rps",
    "controller_up",
    "fhpa_min",
    "fhpa_max",
)  # docs/simulator.md: these columns, in this order; new columns are only appended


def test_timeline_csv_keeps_its_documented_columns_and_appends_the_promise_facts(tmp_path) -> None:
    assert CSV_COLUMNS[: len(TIMELINE_CONTRACT)] == TIMELINE_CONTRACT
    assert CSV_COLUMNS[len(TIMELINE_CONTRACT) :] == (
        "selected",
        "workload",
        "foreign_hpa",
        "drained",
        "nodes",
        "quota_refused",
    )
    data = builtin_document()
    data["duration"] = "1m"
    path = tmp_path / "timeline.csv"
    write_csv(simulate(parse_scenario(data)), path)
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 4
    assert {(r["cluster"], r["selected"], r["workload"], r["foreign_hpa"]) for r in rows} == {
        ("idc", "1", "1", "0"),
        ("cloud", "1", "1", "0"),
    }


def test_replica_seconds_split_into_scheduled_pending_and_unreachable() -> None:
    def sample(replicas: int, ready: int, starting: int, pending: int, down: bool = False) -> ClusterSample:
        return ClusterSample(
            replicas=replicas,
            ready=ready,
            starting=starting,
            pending=pending,
            capacity=10,
            down=down,
            hpa_min=1,
            hpa_max=10,
            hpa_desired=replicas,
            utilization=50.0,
            served_rps=0.0,
        )

    steps = run([1.0, 1.0])
    for s in steps:
        s.clusters = {"up": sample(6, 3, 1, 2), "down": sample(4, 4, 0, 0, down=True)}
    split = replica_seconds_split(steps, STEP, ["up", "down"])
    assert split["replica_seconds_split"] == {
        "up": {"scheduled": 8 * STEP, "pending": 4 * STEP, "unreachable": 0.0},
        "down": {"scheduled": 0.0, "pending": 0.0, "unreachable": 8 * STEP},
    }
    totals = [split[f"replica_seconds_{k}"] for k in ("scheduled", "pending", "unreachable")]
    assert totals == [8 * STEP, 4 * STEP, 8 * STEP] and sum(totals) == 20 * STEP  # = replica_seconds
