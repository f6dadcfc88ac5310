"""The assignment records its split per cluster in status: what it read (room, weight, priority, rank)
and what it gave (capped shares, the excess), kept by later passes until the next assignment."""

from __future__ import annotations

from datetime import timedelta

from fhpa_api.models import SplitStatus
from tests.support.planning_builders import T0, fhpa, obs, run, settle, update


def splits(status: object) -> dict[str, SplitStatus | None]:
    return {r.name: r.split for r in getattr(status, "clusters", None) or []}


def test_prioritized_records_order_rooms_and_the_excess_on_the_first() -> None:
    f = fhpa("Prioritized", 2, 20, priorities={"a": 3, "b": 2, "c": 1})
    p = run(f, [obs("a", 1, 4), obs("b", 1, 5), obs("c", 0, 6)])
    assert splits(p.status) == {
        "a": SplitStatus(room=4, priority=3, rank=1, max_share=9, min_share=2, excess=5),
        "b": SplitStatus(room=5, priority=2, rank=2, max_share=5, min_share=0),
        "c": SplitStatus(room=6, priority=1, rank=3, max_share=6, min_share=0),
    }


def test_weighted_policies_record_the_weight_they_divided_by() -> None:
    static = run(fhpa("StaticWeighted", 2, 10, weights={"a": 3, "b": 1}), [obs("a", 1), obs("b", 1, 2)])
    assert {n: (s.weight, s.room) for n, s in splits(static.status).items() if s} == {
        "a": (3, None),
        "b": (1, 2),
    }
    dynamic = run(fhpa("DynamicWeighted", 2, 10), [obs("a", 1), obs("b", 1, 2)])
    assert {n: s.weight for n, s in splits(dynamic.status).items() if s} == {"a": 10, "b": 2}


def test_the_record_is_kept_until_the_next_assignment_and_dropped_with_the_cluster() -> None:
    f = fhpa("DynamicWeighted", 2, 8)
    f, fleet, first = settle(f, [obs("a", 1, 6), obs("b", 1, 2)])
    fleet = update(fleet, "a", available_replicas=1)
    f, fleet, later = settle(f, fleet, T0 + timedelta(seconds=10))
    assert splits(later.status) == splits(first.status)
    narrowed = fhpa("DynamicWeighted", 2, 8, clusters=["a"], generation=2)  # a spec change: reassigned
    p = run(narrowed.model_copy(update={"status": f.status}), fleet, T0 + timedelta(seconds=20))
    assert splits(p.status)["a"] == SplitStatus(room=1, weight=1, rank=1, max_share=8, min_share=2, excess=7)
    assert splits(p.status).get("b") is None


def test_duplicated_records_no_split() -> None:
    p = run(fhpa("Duplicated", 1, 5), [obs("a", 1), obs("b", 1)])
    assert splits(p.status) == {"a": None, "b": None}
