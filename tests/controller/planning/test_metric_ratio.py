"""Reading how far above its targets a member HPA is, from its spec and status.currentMetrics."""

from __future__ import annotations

from controller.planning.metric_ratio import metric_ratio, wanted_replicas

CPU_80 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}


def cpu_now(percent: int) -> dict:
    return {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": percent}}}


def test_utilization_ratio() -> None:
    assert metric_ratio([CPU_80], [cpu_now(120)]) == 1.5


def test_the_largest_ratio_over_metrics_with_quantities() -> None:
    queue = {
        "type": "External",
        "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "500m"}},
    }
    queue_now = {
        "type": "External",
        "external": {"metric": {"name": "queue"}, "current": {"averageValue": "2"}},
    }
    assert metric_ratio([CPU_80, queue], [cpu_now(40), queue_now]) == 4.0


def test_metrics_the_status_does_not_report_or_cannot_be_read_give_none() -> None:
    memory = {"type": "Resource", "resource": {"name": "memory", "current": {"averageUtilization": 300}}}
    assert metric_ratio([CPU_80], [memory]) is None  # another resource: not the target's
    assert metric_ratio([CPU_80], []) is None
    broken = {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": "lots"}}}
    assert metric_ratio([CPU_80], [broken]) is None
    zero = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}},
    }
    assert metric_ratio([zero], [cpu_now(50)]) is None
    assert metric_ratio(["not a metric"], [None]) is None  # type: ignore[list-item]


def test_object_metrics_match_by_described_object() -> None:
    def obj(name: str, key: str, value: str) -> dict:
        body = {"metric": {"name": "rps"}, "describedObject": {"kind": "Ingress", "name": name}}
        body["target" if key == "t" else "current"] = (
            {"type": "Value", "value": value} if key == "t" else {"value": value}
        )
        return {"type": "Object", "object": body}

    assert metric_ratio([obj("main", "t", "100")], [obj("main", "c", "250")]) == 2.5
    assert metric_ratio([obj("main", "t", "100")], [obj("other", "c", "250")]) is None


def test_wanted_replicas_rounds_up_over_the_ready_ones() -> None:
    assert wanted_replicas(1.5, 10) == 15
    assert wanted_replicas(1.01, 10) == 11
    assert wanted_replicas(None, 10) is None
    assert wanted_replicas(2.0, 0) is None
