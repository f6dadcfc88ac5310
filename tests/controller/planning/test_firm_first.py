"""Firm room before elastic room (DESIGN §3): the parts of a cluster's room, and fills and divides that
use firm room first."""

from __future__ import annotations

from controller.planning.firm_first import divide_firm_first, elastic_of, fill_firm_first, firm_of
from controller.planning.observation import CapacityObservation
from tests.support.planning_builders import obs


def cloud(available: int, firm: int, elastic: int):
    return obs("cloud", 0, available, capacity=CapacityObservation(firm=firm, elastic=elastic))


def test_the_parts_of_a_clusters_room() -> None:
    assert (firm_of(cloud(30, 10, 20)), elastic_of(cloud(30, 10, 20))) == (10, 20)
    assert (firm_of(obs("onprem", 0, 40)), elastic_of(obs("onprem", 0, 40))) == (40, 0)  # no signals
    assert firm_of(obs("unknown", 0, None)) is None  # unknown room is unlimited, not elastic


def test_a_fill_uses_every_firm_room_before_any_elastic_room() -> None:
    clusters = [cloud(100, 0, 100), obs("onprem", 0, 40)]
    capacity = {"cloud": 100, "onprem": 40}
    # the cloud comes first in the order, yet on-prem's firm room is filled before a cloud node comes
    shares, left = fill_firm_first(50, ["cloud", "onprem"], ["cloud", "onprem"], clusters, capacity)
    assert shares == {"cloud": 10, "onprem": 40} and left == 0


def test_a_divide_by_firm_room_then_elastic_room_keeps_the_excess_apart() -> None:
    clusters = [cloud(20, 0, 20), obs("onprem", 0, 10)]
    shares, excess = divide_firm_first(40, clusters, {"cloud": 20, "onprem": 10}, unknown_weight=40)
    assert shares == {"cloud": 20, "onprem": 10} and excess == 10
    # without elastic room it is a plain divide by available
    fixed = [obs("a", 0, 30), obs("b", 0, 10)]
    assert divide_firm_first(8, fixed, {"a": 30, "b": 10}, unknown_weight=8) == ({"a": 6, "b": 2}, 0)
