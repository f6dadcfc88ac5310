"""The emulated HPA controller against the algorithm's documented behaviour (research §1.2-1.8)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fhpa_api.models import HorizontalPodAutoscalerBehavior
from simulator.native_hpa import NativeHPA, default_behavior
from simulator.replica_calculator import PodReadings

T0 = datetime(2026, 11, 23, tzinfo=UTC)
CPU_80 = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
]


def hpa(min_: int = 1, max_: int = 100, behavior: dict[str, Any] | None = None) -> NativeHPA:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "minReplicas": min_,
        "maxReplicas": max_,
        "metrics": CPU_80,
    }
    if behavior is not None:
        spec["behavior"] = behavior
    return NativeHPA("web", spec)


def at_util(pods: int, percent: int, unready: int = 0) -> PodReadings:
    return PodReadings(ready=pods, unready=unready, usage_total=pods * percent * 10)


def cond(h: NativeHPA, type_: str) -> tuple[str, str | None]:
    c = h.status.conditions[type_]
    return c.status, c.reason


def test_no_behavior_scale_up_is_limited_to_double_or_four_per_sync():
    h = hpa()
    result = h.sync(T0, 2, at_util(2, 400))  # wants ceil(5 * 2) = 10
    assert result.replicas == 4  # max(2 * 2, 4)
    assert cond(h, "ScalingLimited") == ("True", "ScaleUpLimit")
    result = h.sync(T0 + timedelta(seconds=15), 10, at_util(10, 400))  # wants 50
    assert result.replicas == 20


def test_no_behavior_max_clamps_and_reports_too_many_replicas():
    h = hpa(max_=15)
    result = h.sync(T0, 10, at_util(10, 240))  # wants 30; limit 20 > max 15
    assert result.replicas == 15
    assert cond(h, "ScalingLimited") == ("True", "TooManyReplicas")
    assert h.status.desired_replicas == 15
    again = h.sync(T0 + timedelta(seconds=15), 15, at_util(15, 160))
    assert again.replicas == 15 and not again.rescaled
    assert cond(h, "ScalingLimited") == ("True", "TooManyReplicas")
    assert h.status.desired_replicas == 15  # at max and wanting more: what the planner reads


def test_no_behavior_scale_down_waits_for_five_minutes_of_lower_recommendations():
    h = hpa()
    assert h.sync(T0, 10, at_util(10, 80)).replicas == 10  # the initial recommendation is 10
    for i in range(1, 20):  # load halves: raw recommendation 5, but 10 is within the 5-minute window
        now = T0 + timedelta(seconds=15 * i)
        result = h.sync(now, 10, at_util(10, 40))
        assert result.replicas == 10, f"scaled down after {15 * i}s"
        assert cond(h, "AbleToScale") == ("True", "ScaleDownStabilized")
    result = h.sync(T0 + timedelta(seconds=301), 10, at_util(10, 40))
    assert result.replicas == 5 and result.rescaled
    assert cond(h, "AbleToScale") == ("True", "SucceededRescale")
    assert h.status.last_scale_time == T0 + timedelta(seconds=301)


def test_min_and_max_are_enforced_without_metrics():
    h = hpa(min_=3, max_=6)
    assert h.sync(T0, 1, PodReadings(ready=0)).replicas == 3  # below min: min, no metrics needed
    assert h.sync(T0 + timedelta(seconds=15), 9, PodReadings(ready=0)).replicas == 6  # above max: max


def test_a_target_at_zero_replicas_stays_idle():
    h = hpa(min_=1)
    result = h.sync(T0, 0, PodReadings(ready=0))
    assert result.replicas == 0 and not result.rescaled
    assert cond(h, "ScalingActive") == ("False", "ScalingDisabled")


def test_no_ready_pods_is_a_metrics_failure_and_nothing_moves():
    h = hpa()
    result = h.sync(T0, 3, PodReadings(ready=0, unready=3))
    assert result.replicas == 3 and not result.rescaled
    assert cond(h, "ScalingActive") == ("False", "FailedGetResourceMetric")


def test_unsupported_metric_alone_fails_with_its_type():
    h = NativeHPA(
        "web",
        {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "External",
                    "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "10"}},
                }
            ],
        },
    )
    h.sync(T0, 2, at_util(2, 90))
    assert cond(h, "ScalingActive") == ("False", "FailedGetExternalMetric")


def test_defaulted_behavior_allows_four_pods_or_double_per_15s():
    h = hpa(behavior={})
    assert h.sync(T0, 10, at_util(10, 800)).replicas == 20  # max(10 + 4, 10 * 2)
    h2 = hpa(behavior={"scaleUp": {"selectPolicy": "Min"}})
    assert h2.sync(T0, 10, at_util(10, 800)).replicas == 14  # min(10 + 4, 20)


def test_behavior_scale_up_limit_counts_what_was_added_within_the_period():
    h = hpa(behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}})
    assert h.sync(T0, 4, at_util(4, 400)).replicas == 6  # period start 4, +2
    # 15 s later: 2 were added within the last 60 s, so the period started at 4: limit stays 6
    result = h.sync(T0 + timedelta(seconds=15), 6, at_util(6, 400))
    assert result.replicas == 6 and not result.rescaled
    assert cond(h, "ScalingLimited") == ("True", "ScaleUpLimit")
    assert h.sync(T0 + timedelta(seconds=61), 6, at_util(6, 400)).replicas == 8  # the event aged out


def test_behavior_percent_scale_down_truncates_and_respects_the_period():
    behavior = {
        "scaleDown": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
        }
    }
    h = hpa(behavior=behavior)
    assert h.sync(T0, 9, at_util(9, 8)).replicas == 4  # int(9 * 0.5) = 4
    assert cond(h, "ScalingLimited") == ("True", "ScaleDownLimit")
    # 15 s later the period still starts at 9 (4 + 5 deleted): int(4.5) = 4, no further step
    assert not h.sync(T0 + timedelta(seconds=15), 4, at_util(4, 8)).rescaled
    assert h.sync(T0 + timedelta(seconds=75), 4, at_util(4, 8)).replicas == 2


def test_behavior_disabled_scale_down_never_scales_down():
    h = hpa(behavior={"scaleDown": {"selectPolicy": "Disabled", "stabilizationWindowSeconds": 0}})
    assert not h.sync(T0, 10, at_util(10, 10)).rescaled


def test_behavior_scale_up_stabilization_takes_the_lowest_recent_recommendation():
    h = hpa(behavior={"scaleUp": {"stabilizationWindowSeconds": 60}})
    h.sync(T0, 4, at_util(4, 80))  # records 4
    result = h.sync(T0 + timedelta(seconds=15), 4, at_util(4, 200))  # raw 10, but 4 was seen within 60 s
    assert not result.rescaled
    assert cond(h, "AbleToScale") == ("True", "ScaleUpStabilized")


def test_behavior_without_scale_down_window_gets_the_controller_default():
    filled = default_behavior(HorizontalPodAutoscalerBehavior.model_validate({"scaleUp": {}}))
    assert filled.scale_down is not None and filled.scale_down.stabilization_window_seconds == 300
    assert filled.scale_up is not None and filled.scale_up.stabilization_window_seconds == 0


def test_forgetting_history_restarts_the_scale_down_window():
    """A restarted controller-manager records the current count afresh: the 5-minute wait starts over."""
    h = hpa()
    for i in range(20):  # 0..285 s: raw recommendation 5 while 10 run
        h.sync(T0 + timedelta(seconds=15 * i), 10, at_util(10, 40))
    h.forget_history()
    assert not h.sync(T0 + timedelta(seconds=301), 10, at_util(10, 40)).rescaled
    assert h.sync(T0 + timedelta(seconds=602), 10, at_util(10, 40)).replicas == 5


def test_condition_transition_time_moves_only_on_a_flip():
    h = hpa()
    h.sync(T0, 4, at_util(4, 80))
    first = h.status.conditions["ScalingActive"].last_transition_time
    h.sync(T0 + timedelta(seconds=15), 4, at_util(4, 80))
    assert h.status.conditions["ScalingActive"].last_transition_time == first
    h.sync(T0 + timedelta(seconds=30), 4, PodReadings(ready=0, unready=4))
    assert h.status.conditions["ScalingActive"].last_transition_time == T0 + timedelta(seconds=30)


@settings(max_examples=200, deadline=None)
@given(
    min_=st.integers(1, 10),
    span=st.integers(0, 50),
    current=st.integers(1, 80),
    utils=st.lists(st.integers(0, 400), min_size=1, max_size=8),
    with_behavior=st.booleans(),
)
def test_replicas_stay_within_bounds_once_inside(min_, span, current, utils, with_behavior):
    """From inside [min, max], every sync lands inside [min, max], whatever the load does."""
    max_ = min_ + span
    current = max(min_, min(current, max_))
    h = hpa(min_, max_, behavior={} if with_behavior else None)
    for i, util in enumerate(utils):
        previous = current
        current = h.sync(T0 + timedelta(seconds=15 * i), current, at_util(current, util)).replicas
        assert min_ <= current <= max_
        if not with_behavior:
            assert current <= max(2 * previous, 4)
