"""A cluster whose Secret is deleted while it holds our member HPA: held through the grace, then failed
over, with one Warning naming what was left behind."""

from __future__ import annotations

from datetime import timedelta

from tests.support.planning_builders import T0, bounds, fhpa, obs, reasons, row, settle


def test_a_removed_cluster_keeps_counting_for_the_ceiling_until_failed_over() -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"m1": 1, "m2": 1})
    f, fleet, first = settle(f, [obs("m1", 3), obs("m2", 3)])
    before = bounds(first)
    assert sum(hi for _, hi in before.values()) == 10
    only_m1 = [o for o in fleet if o.name == "m1"]
    # the Secret is gone: m2's HPA still scales there, so its max still counts and m1 gains nothing
    f, _, p = settle(f, only_m1, T0 + timedelta(seconds=1))
    assert bounds(p) == before
    [removed] = [e for e in p.events if e.reason == "ClusterRemoved"]
    assert removed.type == "Warning" and removed.message.startswith("m2: removed from the registry")
    assert f"min {before['m2'][0]} max {before['m2'][1]} over 3 replicas" in removed.message
    healthy = next(c for c in row(p, "m2").conditions if c.type == "Healthy")
    assert (healthy.status, healthy.reason) == ("False", "ClusterRemoved")
    # reported once
    f, _, p = settle(f, only_m1, T0 + timedelta(seconds=30))
    assert "ClusterRemoved" not in reasons(p) and bounds(p) == before
    # past the grace it is failed over: m1 takes the whole F.max, and the row goes on the next pass
    f, _, p = settle(f, only_m1, T0 + timedelta(seconds=70))
    assert "FailedOver" in reasons(p)
    assert bounds(p)["m1"][1] == 10
    _, _, p = settle(f, only_m1, T0 + timedelta(seconds=75))
    assert [r.name for r in p.status.clusters or []] == ["m1"]


def test_a_removed_cluster_that_held_no_hpa_is_dropped_at_once() -> None:
    f = fhpa("StaticWeighted", 2, 10, clusters=["m1"], weights={"m1": 1})
    f, fleet, _ = settle(f, [obs("m1", 3), obs("m2", 0)])  # m2 not selected: a row without bounds
    _, _, p = settle(f, [o for o in fleet if o.name == "m1"], T0 + timedelta(seconds=1))
    assert "ClusterRemoved" not in reasons(p)
    assert [r.name for r in p.status.clusters or []] == ["m1"]
