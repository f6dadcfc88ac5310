"""Metric and behavior rules (the autoscaling/v2 HPA rules every member HPA must pass)."""

from __future__ import annotations

from typing import Any

import pytest

from fhpa_api.validation import validate
from fhpa_api.validation_metrics import CONTAINER_RESOURCE_WARNING
from tests.support.api_builders import fhpa, message_at, paths, with_field

OBJECT = {
    "type": "Object",
    "object": {
        "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
        "metric": {"name": "requests-per-second"},
        "target": {"type": "Value", "value": "10k"},
    },
}
PODS = {
    "type": "Pods",
    "pods": {
        "metric": {"name": "packets-per-second"},
        "target": {"type": "AverageValue", "averageValue": "1k"},
    },
}
RESOURCE = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}},
}
CONTAINER = {
    "type": "ContainerResource",
    "containerResource": {
        "name": "cpu",
        "container": "app",
        "target": {"type": "Utilization", "averageUtilization": 60},
    },
}
EXTERNAL = {
    "type": "External",
    "external": {
        "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": "jobs"}}},
        "target": {"type": "AverageValue", "averageValue": 30},
    },
}
ALL = [OBJECT, PODS, RESOURCE, CONTAINER, EXTERNAL]


def one_metric(metric: dict[str, Any]) -> dict[str, Any]:
    return fhpa(metrics=[metric])


@pytest.mark.parametrize("metric", ALL, ids=lambda m: m["type"])
def test_each_metric_source_is_accepted(metric: dict[str, Any]) -> None:
    result = validate(one_metric(metric))
    assert result.ok, result.errors
    # ContainerResource is accepted with its version warning (test below)
    assert len(result.warnings) == (metric is CONTAINER)


GOOD = [
    (OBJECT, "spec.metrics[0].object.target", {"type": "AverageValue", "averageValue": "2"}),
    (RESOURCE, "spec.metrics[0].resource.name", "gpu"),  # Resource names are not checked (as upstream)
    (RESOURCE, "spec.metrics[0].resource.target", {"type": "Utilization", "averageUtilization": 150}),
    (CONTAINER, "spec.metrics[0].containerResource.name", "nvidia.com/gpu"),
    (CONTAINER, "spec.metrics[0].containerResource.name", "hugepages-2Mi"),
    (CONTAINER, "spec.metrics[0].containerResource.name", "ephemeral-storage"),
    (EXTERNAL, "spec.metrics[0].external.target", {"type": "Value", "value": "0.5"}),
]

BAD = [
    (RESOURCE, "spec.metrics[0].type", None, "spec.metrics[0].type", "required"),
    (RESOURCE, "spec.metrics[0].type", "Custom", "spec.metrics[0].type", "use one of Object, Pods"),
    (RESOURCE, "spec.metrics[0].resource", None, "spec.metrics[0].resource", "required for type Resource"),
    (RESOURCE, "spec.metrics[0].pods", PODS["pods"], "spec.metrics[0].pods", "only the source block"),
    (
        OBJECT,
        "spec.metrics[0].object.describedObject",
        None,
        "spec.metrics[0].object.describedObject",
        "required",
    ),
    (
        OBJECT,
        "spec.metrics[0].object.describedObject.name",
        "a/b",
        "spec.metrics[0].object.describedObject.name",
        "/",
    ),
    (OBJECT, "spec.metrics[0].object.metric.name", None, "spec.metrics[0].object.metric.name", "required"),
    (OBJECT, "spec.metrics[0].object.metric.name", "..", "spec.metrics[0].object.metric.name", "'..'"),
    (
        OBJECT,
        "spec.metrics[0].object.target",
        {"type": "Utilization", "averageUtilization": 5},
        "spec.metrics[0].object.target",
        "value or averageValue",
    ),
    (PODS, "spec.metrics[0].pods.metric.name", "", "spec.metrics[0].pods.metric.name", "required"),
    (
        PODS,
        "spec.metrics[0].pods.target",
        {"type": "Value", "value": "3"},
        "spec.metrics[0].pods.target.averageValue",
        "required for a Pods metric",
    ),
    (RESOURCE, "spec.metrics[0].resource.name", None, "spec.metrics[0].resource.name", "required"),
    (
        RESOURCE,
        "spec.metrics[0].resource.target",
        {"type": "Utilization"},
        "spec.metrics[0].resource.target",
        "averageUtilization or averageValue",
    ),
    (
        RESOURCE,
        "spec.metrics[0].resource.target",
        {"type": "Utilization", "averageUtilization": 50, "averageValue": "1"},
        "spec.metrics[0].resource.target.averageValue",
        "together with averageUtilization",
    ),
    (
        CONTAINER,
        "spec.metrics[0].containerResource.name",
        "gpu",
        "spec.metrics[0].containerResource.name",
        "nvidia.com/gpu",
    ),
    (
        CONTAINER,
        "spec.metrics[0].containerResource.container",
        "App_1",
        "spec.metrics[0].containerResource.container",
        "DNS-1123 label",
    ),
    (
        CONTAINER,
        "spec.metrics[0].containerResource.container",
        None,
        "spec.metrics[0].containerResource.container",
        "required",
    ),
    (
        CONTAINER,
        "spec.metrics[0].containerResource.target",
        {"type": "Utilization"},
        "spec.metrics[0].containerResource.target",
        "averageUtilization or averageValue",
    ),
    (EXTERNAL, "spec.metrics[0].external.metric", None, "spec.metrics[0].external.metric", "required"),
    (
        EXTERNAL,
        "spec.metrics[0].external.target",
        {"type": "Value"},
        "spec.metrics[0].external.target",
        "value or averageValue",
    ),
    (
        EXTERNAL,
        "spec.metrics[0].external.target",
        {"type": "Value", "value": 1, "averageValue": 1},
        "spec.metrics[0].external.target.averageValue",
        "together with value",
    ),
    (
        EXTERNAL,
        "spec.metrics[0].external.metric.selector",
        {"matchExpressions": [{"key": "q", "operator": "Near"}]},
        "spec.metrics[0].external.metric.selector.matchExpressions[0].operator",
        "In, NotIn",
    ),
    # the target itself
    (
        RESOURCE,
        "spec.metrics[0].resource.target.type",
        None,
        "spec.metrics[0].resource.target.type",
        "required",
    ),
    (
        RESOURCE,
        "spec.metrics[0].resource.target.type",
        "Percent",
        "spec.metrics[0].resource.target.type",
        "Utilization, Value, AverageValue",
    ),
    (
        RESOURCE,
        "spec.metrics[0].resource.target.averageValue",
        "0",
        "spec.metrics[0].resource.target.averageValue",
        "greater than zero",
    ),
    (
        RESOURCE,
        "spec.metrics[0].resource.target.averageValue",
        "-1",
        "spec.metrics[0].resource.target.averageValue",
        "greater than zero",
    ),
    (
        RESOURCE,
        "spec.metrics[0].resource.target.averageValue",
        "lots",
        "spec.metrics[0].resource.target.averageValue",
        "not a quantity",
    ),
    (
        EXTERNAL,
        "spec.metrics[0].external.target.averageValue",
        0.5,
        "spec.metrics[0].external.target.averageValue",
        "as a string",
    ),
    (
        EXTERNAL,
        "spec.metrics[0].external.target.averageValue",
        0,
        "spec.metrics[0].external.target.averageValue",
        "greater than zero",
    ),
    (
        CONTAINER,
        "spec.metrics[0].containerResource.target.averageUtilization",
        0,
        "spec.metrics[0].containerResource.target.averageUtilization",
        ">= 1",
    ),
]


@pytest.mark.parametrize(("base", "path", "value"), GOOD)
def test_metric_variants_accepted(base: dict[str, Any], path: str, value: Any) -> None:
    result = validate(with_field(one_metric(base), path, value))
    assert result.ok, result.errors


@pytest.mark.parametrize(("base", "path", "value", "where", "fragment"), BAD)
def test_metric_rules_refuse(base: dict[str, Any], path: str, value: Any, where: str, fragment: str) -> None:
    assert fragment in message_at(validate(with_field(one_metric(base), path, value)), where)


def test_external_metrics_are_supported() -> None:
    """Karmada refuses External; here each member HPA reads it locally (DESIGN §2)."""
    assert validate(one_metric(EXTERNAL)).ok


def test_errors_in_the_second_metric_name_its_index() -> None:
    obj = fhpa(metrics=[RESOURCE, {"type": "Pods"}])
    assert paths(validate(obj)) == ["spec.metrics[1].pods"]


def test_target_type_disagreeing_with_the_value_field_is_a_warning() -> None:
    obj = with_field(one_metric(RESOURCE), "spec.metrics[0].resource.target.type", "Utilization")
    result = validate(obj)
    assert result.ok
    assert any(w.startswith("spec.metrics[0].resource.target.type:") for w in result.warnings)


# --- behavior ------------------------------------------------------------------------------------------

RULES = {
    "stabilizationWindowSeconds": 60,
    "selectPolicy": "Min",
    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
}


def with_behavior(**behavior: Any) -> dict[str, Any]:
    return fhpa(behavior=behavior)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.behavior.scaleUp.stabilizationWindowSeconds", 0),
        ("spec.behavior.scaleUp.stabilizationWindowSeconds", 3600),
        ("spec.behavior.scaleDown.selectPolicy", "Disabled"),
        ("spec.behavior.scaleDown.policies[0].periodSeconds", 1800),
        ("spec.behavior.scaleDown.policies[0].type", "Percent"),
        ("spec.behavior.scaleUp.tolerance", "50m"),
    ],
)
def test_behavior_accepted(path: str, value: Any) -> None:
    result = validate(with_field(with_behavior(scaleUp=RULES, scaleDown=RULES), path, value))
    assert result.ok, result.errors


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("spec.behavior.scaleUp.stabilizationWindowSeconds", -1, "from 0 to 3600"),
        ("spec.behavior.scaleUp.stabilizationWindowSeconds", 3601, "from 0 to 3600"),
        ("spec.behavior.scaleDown.selectPolicy", "Average", "Max, Min, Disabled"),
        ("spec.behavior.scaleDown.policies", [], "at least one policy"),
        ("spec.behavior.scaleDown.policies[0].type", "Replicas", "Pods, Percent"),
        ("spec.behavior.scaleDown.policies[0].value", 0, ">= 1"),
        ("spec.behavior.scaleDown.policies[0].periodSeconds", 0, "from 1 to 1800"),
        ("spec.behavior.scaleDown.policies[0].periodSeconds", 1801, "from 1 to 1800"),
        ("spec.behavior.scaleDown.policies[0].periodSeconds", None, "required"),
        ("spec.behavior.scaleUp.tolerance", "-1", ">= 0"),
    ],
)
def test_behavior_refused(path: str, value: Any, fragment: str) -> None:
    result = validate(with_field(with_behavior(scaleUp=RULES, scaleDown=RULES), path, value))
    assert fragment in message_at(result, path)


def test_empty_behavior_passes_and_a_rule_set_without_policies_passes_after_defaulting() -> None:
    assert validate(with_behavior()).ok
    assert validate(with_behavior(scaleUp={"stabilizationWindowSeconds": 30})).ok


def test_a_rule_set_without_policies_is_refused_before_defaulting() -> None:
    obj = with_field(fhpa(), "spec.behavior", {"scaleUp": {"stabilizationWindowSeconds": 30}})
    assert "at least one policy" in message_at(validate(obj), "spec.behavior.scaleUp.policies")


def test_a_container_resource_metric_warns_that_old_members_refuse_it() -> None:
    """A member before 1.27 answers 422 to the HPA; the user hears it at apply time, as a warning (newer
    fleets use the metric rightly), short enough for the API server to pass on whole."""
    result = validate(fhpa(metrics=[RESOURCE, CONTAINER]))
    assert not result.errors
    assert result.warnings == [f"spec.metrics[1].type: {CONTAINER_RESOURCE_WARNING}"]
    assert "before Kubernetes 1.27" in CONTAINER_RESOURCE_WARNING
    assert len(result.warnings[0]) < 120
    assert validate(fhpa(metrics=[RESOURCE])).warnings == []
