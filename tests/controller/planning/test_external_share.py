"""Per-member targets for External and Object AverageValue metrics (issue 16): shares, rounding, exact
quantities, the threshold, the opt-out, and the planner writing them into member HPA specs and status."""

from __future__ import annotations

import math
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.planning.external_share import (
    ANNOTATION_PER_CLUSTER_METRICS,
    SHARE_UNITS,
    Holder,
    decide,
    format_share,
    member_metrics,
    member_value,
    milli_value,
    moved,
    parse_share,
    split_shares,
)
from controller.planning.member_hpa import spec_digest, template_digest
from controller.planning.observation import ClusterObservation, MemberHPAObservation
from controller.planning.plan import Plan
from controller.planning.planner import plan
from fhpa_api.models import Condition, FederatedHPA
from fhpa_api.quantity import parse_quantity
from tests.support.planning_builders import CONFIG, T0, fhpa, obs

QUEUE = {
    "type": "External",
    "external": {
        "metric": {"name": "queue_messages"},
        "target": {"type": "AverageValue", "averageValue": "100"},
    },
}
QUEUE_VALUE = {
    "type": "External",
    "external": {"metric": {"name": "lag"}, "target": {"type": "Value", "value": "30"}},
}
OBJECT = {
    "type": "Object",
    "object": {
        "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "front"},
        "metric": {"name": "requests"},
        "target": {"type": "AverageValue", "averageValue": "1500m"},
    },
}
CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
}
PODS = {
    "type": "Pods",
    "pods": {"metric": {"name": "inflight"}, "target": {"type": "AverageValue", "averageValue": "10"}},
}


def queue_fhpa(policy: str = "StaticWeighted", opt_out: bool = False, **kw: Any) -> FederatedHPA:
    f = fhpa(policy, metrics=[QUEUE, CPU], **kw)
    if opt_out:
        f.metadata.annotations = {ANNOTATION_PER_CLUSTER_METRICS: "true"}
    return f


def holder(name: str, current: int, max_replicas: int, available: int | None = None, **kw: Any) -> Holder:
    cluster = ClusterObservation(name=name, current_replicas=current, available_replicas=available, **kw)
    return Holder(cluster=cluster, current=current, max_replicas=max_replicas)


def target(metrics: list[dict[str, Any]], index: int = 0) -> Any:
    metric = metrics[index]
    return metric[metric["type"].lower()]["target"]


# --- exact quantities ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("average", "share", "expected"),
    [
        ("100", 1000, "100"),
        ("100", 500, "200"),
        ("100", 333, "300300m"),  # 100000 * 1000 / 333 = 300300.3 -> 300300m
        ("100", 250, "400"),
        ("1500m", 600, "2500m"),
        ("1Ki", 500, "2048"),
        ("100", 0, "100000"),  # no share: the target of a 1/1000 share, finite
        ("1m", 1000, "1m"),
        ("0.5m", 1000, "1m"),  # rounded up to a milli-unit, as the HPA's MilliValue() reads it
    ],
)
def test_a_member_target_is_the_average_over_the_share_in_exact_milli_units(
    average: str, share: int, expected: str
) -> None:
    assert member_value(average, share) == expected


def test_the_rounding_is_half_up_to_a_milli_unit_and_never_below_one() -> None:
    assert member_value("1", 3) == "333333m"  # 1000 * 1000 / 3 = 333333.3
    assert member_value("2", 3) == "666667m"  # 666666.6 rounds up
    assert member_value("1m", 1000) == "1m"
    assert milli_value("2.0005") == 2001


@given(
    average_milli=st.integers(min_value=1, max_value=10**9),
    share=st.integers(min_value=0, max_value=SHARE_UNITS),
)
def test_a_member_target_is_an_exact_quantity_within_half_a_milli_unit(
    average_milli: int, share: int
) -> None:
    written = member_value(f"{average_milli}m", share)
    assert "." not in written and "e" not in written.lower()  # an integer of units or of milli-units
    exact = Decimal(average_milli) * SHARE_UNITS / max(share, 1)
    milli = parse_quantity(written) * 1000
    assert milli == milli.to_integral_value()
    assert abs(milli - exact) <= Decimal("0.5") or (exact < 1 and milli == 1)


def test_shares_print_and_parse_back_as_milli_quantities() -> None:
    assert [format_share(s) for s in (1000, 500, 333, 0)] == ["1", "500m", "333m", "0"]
    assert [parse_share(v) for v in ("1", "500m", "333m", "0", 1)] == [1000, 500, 333, 0, 1000]
    assert [parse_share(v) for v in (None, "2", "0.5m", "soon", "-1")] == [None] * 5


# --- which metrics are shared ---------------------------------------------------------------------


def test_only_external_and_object_average_value_targets_are_divided() -> None:
    metrics = [QUEUE, QUEUE_VALUE, OBJECT, CPU, PODS]
    out = member_metrics(metrics, 250)
    assert target(out, 0) == {"type": "AverageValue", "averageValue": "400"}
    assert target(out, 2) == {"type": "AverageValue", "averageValue": "6"}  # 1500m / 0.25
    assert out[1] == QUEUE_VALUE and out[3] == CPU and out[4] == PODS  # Value, Resource, Pods: as written
    assert target([QUEUE], 0)["averageValue"] == "100"  # the input is not changed
    assert member_metrics(metrics, None) == metrics


def test_a_target_that_is_not_a_quantity_is_copied_as_written_rather_than_failing_the_pass() -> None:
    target = {"type": "AverageValue", "averageValue": "lots"}
    broken = {"type": "External", "external": {"metric": {"name": "queue_messages"}, "target": target}}
    assert member_metrics([broken], 500) == [broken]


def test_the_opt_out_annotation_copies_every_target_unchanged() -> None:
    f = queue_fhpa(opt_out=True)
    decision = decide(f, [holder("a", 2, 5), holder("b", 2, 5)], {}, review=True)
    assert decision.shares == {} and not decision.changed
    other = queue_fhpa()
    other.metadata.annotations = {ANNOTATION_PER_CLUSTER_METRICS: "false"}
    assert decide(other, [holder("a", 2, 5), holder("b", 2, 5)], {}, review=True).shares == {
        "a": 500,
        "b": 500,
    }


def test_nothing_is_shared_without_an_external_or_object_average_value_metric() -> None:
    for metrics in ([CPU], [QUEUE_VALUE, PODS], None):
        f = fhpa("StaticWeighted", metrics=metrics) if metrics else fhpa("StaticWeighted")
        assert decide(f, [holder("a", 2, 5)], {}, review=True).shares == {}


# --- the shares by policy -------------------------------------------------------------------------


def test_static_weighted_shares_by_weight() -> None:
    f = queue_fhpa("StaticWeighted", max_replicas=100, weights={"a": 1, "b": 3})
    shares = decide(f, [holder("a", 2, 25), holder("b", 2, 75)], {}, review=True).shares
    assert shares == {"a": 250, "b": 750}


def test_dynamic_weighted_and_aggregated_share_by_available() -> None:
    for policy in ("DynamicWeighted", "Aggregated"):
        f = queue_fhpa(policy, max_replicas=100)
        hs = [holder("a", 2, 20, available=20), holder("b", 2, 80, available=80)]
        assert decide(f, hs, {}, review=True).shares == {"a": 200, "b": 800}


def test_prioritized_shares_by_what_each_cluster_runs() -> None:
    f = queue_fhpa("Prioritized", max_replicas=100, priorities={"a": 2, "b": 1})
    hs = [holder("a", 30, 30, available=30), holder("b", 10, 70)]
    assert decide(f, hs, {}, review=True).shares == {"a": 750, "b": 250}


def test_duplicated_shares_equally_among_the_clusters_running_the_workload() -> None:
    f = queue_fhpa("Duplicated", max_replicas=10)
    hs = [
        holder("a", 3, 10),
        holder("b", 4, 10),
        holder("c", 5, 10),
        holder("d", 0, 10, workload_found=False),
    ]
    assert decide(f, hs, {}, review=True).shares == {"a": 334, "b": 333, "c": 333, "d": 0}


def test_a_cluster_at_zero_takes_no_share_until_it_runs() -> None:
    f = queue_fhpa("DynamicWeighted", max_replicas=40)
    hs = [holder("a", 4, 20, available=50), holder("b", 0, 20, available=50)]
    assert decide(f, hs, {}, review=True).shares == {"a": 1000, "b": 0}


def test_a_share_is_capped_at_the_clusters_part_of_what_the_holders_can_run() -> None:
    """StaticWeighted 1:1, but a holds 10 of the 110 pods the two can run: asked for half the queue it
    would pend beyond 10 while b runs half; so its share is its part of the room and b takes the rest."""
    f = queue_fhpa("StaticWeighted", max_replicas=110, weights={"a": 1, "b": 1})
    hs = [holder("a", 5, 50, available=10), holder("b", 5, 100, available=200)]
    assert decide(f, hs, {}, review=True).shares == {"a": 90, "b": 910}


# --- properties -----------------------------------------------------------------------------------

weights_st = st.dictionaries(
    st.sampled_from([f"c{i}" for i in range(8)]), st.integers(min_value=0, max_value=500), min_size=1
)


@given(weights=weights_st, rooms=st.lists(st.integers(min_value=0, max_value=300), min_size=8, max_size=8))
def test_shares_always_sum_to_the_whole_and_respect_the_caps(
    weights: dict[str, int], rooms: list[int]
) -> None:
    room = {n: rooms[int(n[1:])] for n in weights}
    shares = split_shares(weights, room)
    assert sum(shares.values()) == SHARE_UNITS and all(s >= 0 for s in shares.values())
    running = {n for n, w in weights.items() if w > 0}
    if running:
        assert all(shares[n] == 0 for n in weights if n not in running)
    caps = split_shares(dict.fromkeys(weights, 0), room) if any(room.values()) else None
    if running and caps is not None and sum(caps[n] for n in running) >= SHARE_UNITS:
        assert all(shares[n] <= caps[n] for n in running)
    assert split_shares(dict(reversed(list(weights.items()))), room) == shares  # order does not matter


@given(
    shares=weights_st.filter(lambda w: any(w.values())),
    value=st.integers(min_value=0, max_value=10**6),
    average=st.integers(min_value=1, max_value=10**4),
)
def test_the_members_want_what_one_hpa_would_within_rounding(
    shares: dict[str, int], value: int, average: int
) -> None:
    """Each member HPA wants ceil(value / its target) (the HPA's External AverageValue rule, in
    milli-units); summed over the members that is what one HPA over the fleet wants, value / average,
    give or take one replica per member (each rounds up on its own) and the targets' own rounding to
    half a milli-unit (relative 0.5 / target in milli-units: nothing for targets of whole units)."""
    split = split_shares(shares, None)
    members = [n for n, s in split.items() if s > 0]
    targets = {n: milli_value(member_value(str(average), split[n])) for n in members}
    wanted = sum(math.ceil(value * 1000 / targets[n]) for n in members)
    one_hpa = Decimal(value) / average
    slack = one_hpa * Decimal("0.5") / min(targets.values())
    assert one_hpa - slack - 1 <= wanted <= one_hpa + slack + len(members)
    naive = len(members) * math.ceil(one_hpa)
    assert wanted <= naive or len(members) == 1 or value == 0


@given(
    currents=st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=5),
    policy=st.sampled_from(["Duplicated", "StaticWeighted", "DynamicWeighted", "Aggregated", "Prioritized"]),
    review=st.booleans(),
)
def test_the_decision_is_a_fixed_point_and_does_not_depend_on_listing_order(
    currents: list[int], policy: str, review: bool
) -> None:
    f = queue_fhpa(policy, max_replicas=200, weights={"c0": 2, "c1": 1})
    hs = [holder(f"c{i}", c, 40, available=10 * (i + 1)) for i, c in enumerate(currents)]
    first = decide(f, hs, {}, review)
    assert sum(first.shares.values()) == SHARE_UNITS
    again = decide(f, hs, first.shares, review)
    assert again.shares == first.shares and not again.changed
    assert decide(f, list(reversed(hs)), {}, review).shares == first.shares


# --- the threshold --------------------------------------------------------------------------------


def test_a_share_moved_by_ten_percent_or_two_points_or_less_is_not_rewritten_on_review() -> None:
    assert not moved(500, 550) and moved(500, 551) and not moved(500, 450) and moved(500, 449)
    assert not moved(100, 120) and moved(100, 121)  # and by more than 2% of the fleet: a sliver holds
    assert not moved(35, 50) and moved(35, 56)
    f = queue_fhpa("DynamicWeighted", max_replicas=100)
    hs = [holder("a", 2, 100, available=52), holder("b", 2, 100, available=48)]  # fresh: 520 / 480
    kept = decide(f, hs, {"a": 500, "b": 500}, review=True)
    assert kept.shares == {"a": 500, "b": 500} and not kept.changed
    hs = [holder("a", 2, 100, available=60), holder("b", 2, 100, available=40)]  # fresh: 600 / 400
    assert decide(f, hs, {"a": 500, "b": 500}, review=False).shares == {"a": 500, "b": 500}
    rewritten = decide(f, hs, {"a": 500, "b": 500}, review=True)
    assert rewritten.shares == {"a": 600, "b": 400} and rewritten.changed
    assert "a 600m (was 500m)" in rewritten.message()


def test_who_shares_changing_rewrites_at_once_without_review() -> None:
    f = queue_fhpa("DynamicWeighted", max_replicas=100)
    recorded = {"a": 500, "b": 500}
    woken = [
        holder("a", 2, 40, available=50),
        holder("b", 2, 40, available=50),
        holder("c", 1, 40, available=50),
    ]
    assert decide(f, woken, recorded, review=False).shares == {"a": 334, "b": 333, "c": 333}
    zeroed = [holder("a", 2, 50, available=50), holder("b", 0, 50, available=50)]
    assert decide(f, zeroed, recorded, review=False).shares == {"a": 1000, "b": 0}


# --- the planner: specs, status, fixed point ------------------------------------------------------


def observed_after(p: Plan, observations: list[ClusterObservation]) -> list[ClusterObservation]:
    """The fleet once the plan's member HPAs are written, stamped with the digest of the spec written."""
    actions = {a.cluster: a for a in p.hpa_actions}
    out = []
    for o in observations:
        action = actions.get(o.name)
        if action is None or action.spec is None:
            out.append(o)
            continue
        hpa = MemberHPAObservation(
            name="web",
            owned=True,
            min_replicas=action.min_replicas or 0,
            max_replicas=action.max_replicas or 0,
            template_digest=spec_digest(dict(action.spec)),
        )
        out.append(o.model_copy(update={"hpa": hpa}))
    return out


def metrics_of(p: Plan, cluster: str) -> list[dict[str, Any]]:
    spec = next(a.spec for a in p.hpa_actions if a.cluster == cluster)
    assert spec is not None
    return spec["metrics"]  # type: ignore[return-value]


def rows(p: Plan) -> dict[str, Any]:
    return {r.name: r for r in p.status.clusters or []}


def test_the_planner_writes_each_member_its_target_and_shows_it_in_status() -> None:
    f = queue_fhpa("StaticWeighted", max_replicas=40, weights={"a": 1, "b": 3})
    o = [obs("a", 2, available=100), obs("b", 2, available=100)]
    p = plan(f, o, T0, CONFIG)
    assert target(metrics_of(p, "a"))["averageValue"] == "400"
    assert target(metrics_of(p, "b"))["averageValue"] == "133333m"
    assert metrics_of(p, "a")[1] == CPU
    status = rows(p)
    assert (status["a"].metric_share, status["b"].metric_share) == ("250m", "750m")
    assert [t.to_json() for t in status["b"].metric_targets] == [
        {"type": "External", "name": "queue_messages", "averageValue": "133333m"}
    ]
    assert "MetricSharesUpdated" in [e.reason for e in p.events]
    # the next pass finds the member HPAs as written: nothing to do, the shares stand
    f2 = f.model_copy(update={"status": p.status})
    p2 = plan(f2, observed_after(p, o), T0 + timedelta(seconds=15), CONFIG)
    assert p2.hpa_actions == [] and rows(p2)["a"].metric_share == "250m"
    assert "MetricSharesUpdated" not in [e.reason for e in p2.events]


def test_the_opt_out_writes_the_template_unchanged_and_no_share() -> None:
    f = queue_fhpa("StaticWeighted", opt_out=True, max_replicas=40, weights={"a": 1, "b": 3})
    o = [obs("a", 2, available=100), obs("b", 2, available=100)]
    p = plan(f, o, T0, CONFIG)
    assert target(metrics_of(p, "a"))["averageValue"] == "100" == target(metrics_of(p, "b"))["averageValue"]
    assert all(r.metric_share is None and r.metric_targets is None for r in rows(p).values())
    hpa = MemberHPAObservation(name="web", owned=True, min_replicas=1, max_replicas=10)
    assert spec_digest(dict(p.hpa_actions[0].spec or {})) == template_digest(f) != hpa.template_digest


def test_a_share_moved_past_the_threshold_is_written_at_the_period_optimization_only() -> None:
    f = queue_fhpa("DynamicWeighted", max_replicas=40)
    o = [obs("a", 4, available=50), obs("b", 4, available=50)]
    p = plan(f, o, T0, CONFIG)
    assert {n: r.metric_share for n, r in rows(p).items()} == {"a": "500m", "b": "500m"}
    f, o = f.model_copy(update={"status": p.status}), observed_after(p, o)
    o = [o[0].model_copy(update={"available_replicas": 80}), o[1]]  # a's room grew: 615 / 385 now
    between = plan(f, o, T0 + timedelta(seconds=30), CONFIG)
    assert {n: r.metric_share for n, r in rows(between).items()} == {"a": "500m", "b": "500m"}
    assert not any(a.op == "update" and a.cluster == "b" for a in between.hpa_actions)
    f = f.model_copy(update={"status": between.status})
    due = plan(f, observed_after(between, o), T0 + timedelta(seconds=60), CONFIG)
    shares = {n: r.metric_share for n, r in rows(due).items()}
    assert shares["a"] != "500m" and parse_share(shares["a"]) + parse_share(shares["b"]) == SHARE_UNITS  # type: ignore[operator]
    assert {a.cluster for a in due.hpa_actions if a.op == "update"} >= {"a", "b"}


def test_a_replica_write_by_the_controller_reviews_prioritized_shares_in_the_same_pass() -> None:
    """A burst assist starts replicas in the next cluster: its share follows in the same pass, or its
    HPA, reading the queue with its old target, would take the started replicas straight back."""
    f = queue_fhpa("Prioritized", max_replicas=100, priorities={"a": 2, "b": 1})
    o = [obs("a", 30, available=30), obs("b", 1, available=200)]
    p = plan(f, o, T0, CONFIG)
    before = {n: parse_share(r.metric_share) for n, r in rows(p).items()}
    assert before == {"a": 968, "b": 32}
    f, o = f.model_copy(update={"status": p.status}), observed_after(p, o)
    limited = Condition(type="ScalingLimited", status="True", reason="TooManyReplicas")
    a_hpa = o[0].hpa.model_copy(update={"desired_replicas": 30, "metric_ratio": 2.0, "conditions": [limited]})  # type: ignore[union-attr]
    o = [o[0].model_copy(update={"hpa": a_hpa}), o[1]]
    later = plan(f, o, T0 + timedelta(seconds=15), CONFIG)
    writes = {w.cluster: w.replicas for w in later.replica_writes}
    assert writes == {"b": 31}  # the deficit: 30 ready at twice the target, plus b's 1
    after = {n: parse_share(r.metric_share) for n, r in rows(later).items()}
    assert after == {"a": 491, "b": 509}  # 30 and 31 of the 61 running after the write
    assert target(metrics_of(later, "b"))["averageValue"] == "196464m"  # 100 / 0.509


def test_a_pass_that_moves_a_max_reviews_the_shares_before_the_period() -> None:
    """The trigger optimization caps a cluster whose pods pend: what it can run shrank, and so does its
    share at once (a full cluster keeping half the queue would leave it pending there)."""
    f = queue_fhpa("DynamicWeighted", max_replicas=40)
    o = [obs("a", 20, available=100), obs("b", 20, available=100)]
    p = plan(f, o, T0, CONFIG)
    assert {n: r.metric_share for n, r in rows(p).items()} == {"a": "500m", "b": "500m"}
    f, o = f.model_copy(update={"status": p.status}), observed_after(p, o)
    full = o[0].model_copy(update={"available_replicas": 10, "ready_replicas": 10, "pending_replicas": 10})
    later = plan(f, [full, o[1]], T0 + timedelta(seconds=15), CONFIG)
    assert rows(later)["a"].max_replicas == 10  # capped at what it holds
    shares = {n: parse_share(r.metric_share) for n, r in rows(later).items()}
    assert shares["a"] is not None and shares["a"] < 300
    assert sum(s or 0 for s in shares.values()) == SHARE_UNITS


def test_a_cluster_held_past_the_blip_tolerance_lends_its_share_and_takes_it_back_when_it_answers() -> None:
    f = queue_fhpa("StaticWeighted", max_replicas=60, weights={"a": 1, "b": 1, "c": 1})
    o = [obs("a", 10, available=60), obs("b", 10, available=60), obs("c", 10, available=60)]
    p = plan(f, o, T0, CONFIG)
    f = f.model_copy(update={"status": p.status})
    o = observed_after(p, o)
    assert rows(p)["c"].metric_share == "333m"
    gone = [x if x.name != "c" else x.model_copy(update={"healthy": False}) for x in o]
    blip = CONFIG.blip_tolerance_seconds / 2
    p = plan(f, gone, T0 + timedelta(seconds=15), CONFIG)  # unreachable since now: a blip so far
    assert rows(p)["c"].metric_share == "333m"
    f = f.model_copy(update={"status": p.status})
    p = plan(f, gone, T0 + timedelta(seconds=15 + blip), CONFIG)
    lent = {n: parse_share(rows(p)[n].metric_share) for n in "abc"}
    assert lent["c"] == 0 and lent["a"] + lent["b"] == 1000 and min(lent["a"], lent["b"]) >= 499
    assert {a.cluster for a in p.hpa_actions} == {"a", "b"}  # c cannot be written while it is away
    f = f.model_copy(update={"status": p.status})
    p = plan(f, observed_after(p, o), T0 + timedelta(seconds=30 + blip), CONFIG)  # c answers
    assert 333 <= (parse_share(rows(p)["c"].metric_share) or 0) <= 334  # its third back at once
