"""format_table: the runs of --compare side by side, the best on each row marked and named."""

from __future__ import annotations

from typing import Any

from simulator.report import ALL_EQUAL, BEST_MARK, format_table

LABELS = ("scenario", "static-split", "duplicated", "single-hpa")


def summary(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "policy": "Prioritized",
        "scale_assist": True,
        "replica_seconds": {"a": 1.0, "b": 1.0},
        "served_fraction": 0.95,
        "oracle_served_fraction": 1.0,
        "served_vs_oracle": 0.95,
        "unserved_rps_seconds": 1000.0,
        "replica_seconds_total": 5000.0,
        "cost_total": 12.5,
        "peak_replicas_total": 40,
        "time_to_absorb_s": 300.0,
        "longest_shortfall_vs_oracle_s": 120.0,
        "controller_actions": 4,
        "api_writes_total": 9,
        "violation_count": 0,
    }
    return base | overrides


def row(table: str, name: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(name))


def four_runs() -> str:
    return format_table(
        [
            ("scenario", summary(served_fraction=0.97, replica_seconds_total=4000.0)),
            ("static-split", summary(served_fraction=0.90, scale_assist=False, api_writes_total=3)),
            ("duplicated", summary(served_fraction=0.97, api_writes_total=3, time_to_absorb_s=None)),
            (
                "single-hpa",
                summary(
                    served_fraction=0.96, api_writes_total=1, replica_seconds_total=4500.0, cost_total=3.25
                ),
            ),
        ]
    )


def test_four_columns_and_a_best_column():
    header = four_runs().splitlines()[0].split()
    assert header == [*LABELS, "best"]


def test_the_best_is_marked_and_named_on_each_row_ties_included():
    table = four_runs()
    served = row(table, "served (of demand)")
    assert served.count(BEST_MARK) == 2 and served.endswith("scenario, duplicated")
    assert "97.0%*" in served and "90.0% " in served
    replica = row(table, "replica-seconds")
    assert replica.count(BEST_MARK) == 1 and "4,000*" in replica and replica.endswith("scenario")
    writes = row(table, "member API writes")
    assert writes.endswith("single-hpa") and " 1*" in writes


def test_never_short_is_the_best_time_to_absorb():
    absorb = row(four_runs(), "time to absorb")
    assert absorb.endswith("duplicated") and "-*" in absorb


def test_a_row_where_every_run_is_equal_marks_none():
    violations = row(four_runs(), "violations")
    assert BEST_MARK not in violations and violations.endswith(ALL_EQUAL)


def test_most_runs_tied_names_the_one_that_is_not():
    table = format_table([(label, summary(violation_count=int(label == "scenario"))) for label in LABELS])
    assert row(table, "violations").endswith("all but scenario")


def test_rows_without_a_direction_name_no_best():
    assert row(four_runs(), "peak replicas").rstrip().endswith("40")


def test_the_cheapest_run_is_marked_on_the_cost_row():
    cost = row(four_runs(), "cost")
    assert "3.25*" in cost and "12.50 " in cost and cost.endswith("single-hpa")


def test_a_single_run_has_no_best_column_and_no_legend():
    """One run has nothing to be best against: an empty column headed best read as a missing figure."""
    table = format_table([("scenario", summary())]).splitlines()
    assert table[0].split() == ["scenario"]
    assert not any("best" in line for line in table)
    assert row("\n".join(table), "served (of demand)").split() == ["served", "(of", "demand)", "95.0%"]


def test_a_peak_above_f_max_is_marked_and_explained():
    table = format_table(
        [
            ("scenario", summary(max_replicas=100, peak_replicas_total=90)),
            ("duplicated", summary(policy="Duplicated", max_replicas=100, peak_replicas_total=170)),
        ]
    )
    assert row(table, "peak replicas").split() == ["peak", "replicas", "90", "170+"]
    assert table.splitlines()[-1] == (
        "+ duplicated: peak 170 above F.max 100: Duplicated gives every cluster's HPA the whole F.max"
    )
