"""The replica calculator against the algorithm's documented cases (research/hpa_and_peers.md §1.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.replica_calculator import (
    MetricsUnavailableError,
    PodReadings,
    Tolerances,
    average_value_replicas,
    utilization_replicas,
)

TOL = Tolerances()


def test_scale_up_from_utilization_over_target():
    # 3 ready pods using 300m, 500m, 700m of 1 CPU each, target 30%: utilization 50%, ratio 5/3
    replicas, utilization = utilization_replicas(3, 30, PodReadings(ready=3, usage_total=1500), TOL)
    assert (replicas, utilization) == (5, 50)


def test_scale_down_from_utilization_under_target():
    # 5 pods at 100m+300m+500m+250m+250m, target 50%: utilization 28%, ceil(0.56 * 5) = 3
    assert utilization_replicas(5, 50, PodReadings(ready=5, usage_total=1400), TOL) == (3, 28)


def test_within_tolerance_keeps_replicas():
    # 105% of the target is inside the 10% band: no change, however many pods
    assert utilization_replicas(4, 80, PodReadings(ready=4, usage_total=4 * 840), TOL) == (4, 84)


def test_utilization_is_truncated_to_an_integer_percent():
    # 3 pods at 333m: 33.3% -> 33%; target 30 -> ratio 1.1 exactly, the band's edge is inside
    assert utilization_replicas(3, 30, PodReadings(ready=3, usage_total=999), TOL) == (3, 33)


def test_unready_pods_count_as_idle_on_a_scale_up():
    # 2 ready pods at 500m and 700m (60% against 30%), 1 unready: 1200m over 3 pods = 40%, ceil(4/3 * 3) = 4
    replicas, utilization = utilization_replicas(
        3, 30, PodReadings(ready=2, unready=1, usage_total=1200), TOL
    )
    assert (replicas, utilization) == (4, 60)


def test_unready_pods_that_flip_the_direction_stop_the_scale_up():
    # 1 ready pod at 500m (ratio 5/3), 2 unready: 500m over 3 pods is 16%, below target: no scale at all
    assert utilization_replicas(3, 30, PodReadings(ready=1, unready=2, usage_total=500), TOL)[0] == 3


def test_unready_pods_are_ignored_on_a_scale_down():
    # ratio < 1: unready pods do not enter the computation: ceil(0.25 * 2 ready) = 1
    assert utilization_replicas(4, 80, PodReadings(ready=2, unready=2, usage_total=400), TOL)[0] == 1


def test_pending_pods_keep_a_starved_cluster_asking_for_more():
    # 30 ready pods at 200%, 10 pending, target 80: 6000m over 40 pods = 150% -> ceil(1.875 * 40) = 75
    readings = PodReadings(ready=30, unready=10, usage_total=30 * 2000)
    assert utilization_replicas(40, 80, readings, TOL)[0] == 75


def test_missing_pods_assumed_busy_on_a_scale_down_can_cancel_it():
    # 2 ready pods at 10%, 2 without samples assumed at 100%: 55% against 50%, direction flips -> keep 4
    assert utilization_replicas(4, 50, PodReadings(ready=2, missing=2, usage_total=200), TOL)[0] == 4


def test_missing_pods_assumed_idle_on_a_scale_up():
    # 2 ready at 150% (target 50), 2 missing at 0: 3000m over 4 = 75%, ceil(1.5 * 4) = 6
    assert utilization_replicas(4, 50, PodReadings(ready=2, missing=2, usage_total=3000), TOL)[0] == 6


def test_no_ready_pod_means_no_metrics():
    with pytest.raises(MetricsUnavailableError, match="might be unready"):
        utilization_replicas(3, 50, PodReadings(ready=0, unready=3), TOL)
    with pytest.raises(MetricsUnavailableError, match="no pods"):
        utilization_replicas(0, 50, PodReadings(ready=0), TOL)


def test_average_value_target():
    # 4 pods averaging 900m against a 600m average target: ceil(1.5 * 4) = 6
    assert average_value_replicas(4, 600, PodReadings(ready=4, usage_total=3600), TOL) == (6, 900)


def test_asymmetric_tolerances():
    wide_down = Tolerances(scale_down=0.5, scale_up=0.0)
    # 60% of target: inside a 50% down band, but 101% is outside a 0% up band
    assert utilization_replicas(10, 100, PodReadings(ready=10, usage_total=6000), wide_down)[0] == 10
    assert utilization_replicas(10, 100, PodReadings(ready=10, usage_total=10100), wide_down)[0] == 11


@settings(max_examples=200, deadline=None)
@given(
    current=st.integers(1, 200),
    ready=st.integers(1, 200),
    unready=st.integers(0, 50),
    util=st.integers(0, 500),
    target=st.integers(1, 100),
)
def test_unready_pods_never_reverse_the_direction(current, ready, unready, util, target):
    """Whatever the pods, a scale-up never proposes fewer replicas and a scale-down never more."""
    readings = PodReadings(ready=ready, unready=unready, usage_total=ready * util * 10)
    replicas, utilization = utilization_replicas(current, target, readings, TOL)
    ratio = utilization / target
    if ratio > 1 and unready:
        assert replicas >= current
    if ratio < 1:
        assert replicas <= max(current, ready)
