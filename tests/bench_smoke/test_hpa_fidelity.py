"""bench/hpa_fidelity.py's comparison and its simulator side (no member cluster needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hpa_fidelity", REPO / "bench" / "hpa_fidelity.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("hpa_fidelity", module)
    spec.loader.exec_module(module)
    return module


fid = _bench()


def test_settled_values_are_read_at_the_end_of_each_step() -> None:
    trajectory = [(0.0, 1), (30.0, 3), (60.0, 5), (150.0, 2)]
    assert fid.settled(trajectory, 3, 60) == [3, 5, 2]


def test_mismatches_count_settled_steps_and_lags_pair_the_nth_events() -> None:
    sim = [(0.0, 1), (15.0, 4), (75.0, 8), (400.0, 2)]
    real = [(0.0, 1), (21.0, 4), (95.0, 8), (130.0, 7)]
    cmp = fid.compare("x", sim, real, 4, 120, sync_s=15)
    assert cmp.settled_sim == [8, 8, 8, 2]
    assert cmp.settled_real == [8, 7, 7, 7]
    assert cmp.step_end_mismatches == 3
    assert cmp.unsettled_steps == []
    assert cmp.settled_step_mismatches == 3
    assert cmp.event_lags_s == [6.0, 20.0, 270.0]
    assert cmp.max_event_lag_s == 270.0
    assert cmp.event_count_difference == 0


def test_an_event_on_the_step_boundary_leaves_the_step_unsettled() -> None:
    sim = [(0.0, 8), (720.0, 4)]  # the emulation's grid puts the event on the boundary: step 12's
    real = [(0.0, 8), (709.7, 4)]  # the real controller's sync fell 10 s earlier
    cmp = fid.compare("x", sim, real, 13, 60, sync_s=15)
    assert cmp.step_end_mismatches == 1 and cmp.unsettled_steps == [11]
    assert cmp.settled_step_mismatches == 0
    late = fid.compare("x", [(0.0, 8), (800.0, 4)], real, 14, 60, sync_s=15)
    assert late.settled_step_mismatches == 1  # step 12 ends settled on both sides, 8 against 4


def test_a_scale_up_answering_the_next_steps_load_leaves_the_step_settled() -> None:
    cmp = fid.compare("x", [(0.0, 1), (120.0, 4)], [(0.0, 1), (121.3, 4)], 3, 60, sync_s=15)
    assert cmp.unsettled_steps == [] and cmp.settled_step_mismatches == 0


def test_identical_trajectories_agree() -> None:
    sim = [(0.0, 1), (15.0, 4)]
    cmp = fid.compare("x", sim, list(sim), 2, 60)
    assert cmp.settled_step_mismatches == 0 and cmp.max_event_lag_s == 0.0


def test_the_compressed_behavior_keeps_its_shape() -> None:
    spec = fid.hpa_spec(fid.BEHAVIOR, scale=5)
    assert spec["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 24
    assert spec["behavior"]["scaleUp"]["policies"][0] == {"type": "Pods", "value": 2, "periodSeconds": 6}
    assert fid.BEHAVIOR["scaleDown"]["stabilizationWindowSeconds"] == 120  # the original is untouched


def test_the_simulated_side_follows_the_trace() -> None:
    trajectory = fid.run_simulated(fid.TRACE, None)
    steps = fid.settled(trajectory, len(fid.TRACE), fid.STEP_S)
    # 3600m at a 50% target of 1000m pods wants 8 pods at the plateau; 600m wants 2, and the 3-minute
    # tail at 300m (1 pod) is shorter than the 5-minute downscale stabilization, so 2 stay
    assert max(steps) == 8
    assert steps[-4:] == [2, 2, 2, 2]
    with_behavior = fid.settled(fid.run_simulated(fid.TRACE, fid.BEHAVIOR), len(fid.TRACE), fid.STEP_S)
    assert with_behavior != steps  # the policies slow the scale-up
