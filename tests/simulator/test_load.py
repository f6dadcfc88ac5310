"""Load trace interpolation and equal sharing over ready pods."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.load import Trace, TraceError, share_load


def test_trace_interpolates_linearly_and_holds_flat_outside():
    trace = Trace.from_points([(0, 600), (600, 600), (1200, 5000)])
    assert trace.at(-5) == 600
    assert trace.at(300) == 600
    assert trace.at(900) == pytest.approx(2800)
    assert trace.at(1200) == 5000
    assert trace.at(99999) == 5000


def test_trace_rejects_unordered_points_and_negative_rps():
    with pytest.raises(TraceError, match="strictly increase"):
        Trace.from_points([(0, 1), (0, 2)])
    with pytest.raises(TraceError, match=">= 0"):
        Trace.from_points([(0, -1)])
    with pytest.raises(TraceError, match="at least one"):
        Trace.from_points([])


def test_share_is_equal_per_ready_pod_and_capped_by_capacity():
    share = share_load(3000, {"idc": 20, "cloud": 10}, pod_capacity=100)
    assert share.per_pod_rps == 100
    assert share.usage_per_pod_milli == 1000  # 100% of a one-CPU request
    assert share.served_by_cluster == {"idc": 2000, "cloud": 1000}
    over = share_load(6000, {"idc": 20, "cloud": 10}, pod_capacity=100)
    assert over.utilization_percent == 200
    assert over.served_rps == 3000 and over.unserved_rps == 3000


def test_no_ready_pod_serves_nothing():
    share = share_load(500, {"idc": 0}, pod_capacity=100)
    assert share.served_rps == 0 and share.unserved_rps == 500


@settings(max_examples=200, deadline=None)
@given(
    demand=st.floats(0, 1e6, allow_nan=False),
    ready=st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 500)),
    capacity=st.floats(1, 1000, allow_nan=False),
)
def test_served_never_exceeds_demand_or_capacity(demand, ready, capacity):
    share = share_load(demand, ready, capacity)
    assert share.served_rps <= demand * (1 + 1e-9) + 1e-6
    assert share.served_rps <= sum(ready.values()) * capacity * (1 + 1e-9) + 1e-6
    assert share.served_rps + share.unserved_rps == pytest.approx(demand, rel=1e-9, abs=1e-6)
