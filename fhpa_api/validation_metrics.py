"""Rules for the autoscaling/v2 parts of a FederatedHPA: metrics and behavior.

They follow the upstream HorizontalPodAutoscaler validation, because every member cluster gets an HPA
with these exact metrics and behavior: anything a member API server would refuse must be refused here,
at admission, instead of failing later in one cluster. External metrics are allowed (DESIGN §2).
"""

from __future__ import annotations

from typing import Any

from fhpa_api import names
from fhpa_api.field_checks import (
    Report,
    array,
    each_mapping,
    integer,
    join,
    mapping,
    one_of,
    positive_quantity,
    present,
    quantity,
    string,
)
from fhpa_api.limits import (
    API_VERSION_MAX_CHARS,
    KIND_MAX_CHARS,
    METRIC_NAME_MAX_CHARS,
    METRICS_MAX_ITEMS,
    OBJECT_NAME_MAX_CHARS,
    POLICIES_MAX_ITEMS,
    RESOURCE_NAME_MAX_CHARS,
    shorten,
)
from fhpa_api.names import DNS1123_LABEL_MAX

METRIC_TYPES = ("Object", "Pods", "Resource", "ContainerResource", "External")
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
SELECT_POLICIES = ("Max", "Min", "Disabled")
POLICY_TYPES = ("Pods", "Percent")
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800

# metric type -> the name of the source block that type reads
SOURCE_FIELDS = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "External": "external",
}
_TARGET_FIELD_OF_TYPE = {
    "Utilization": "averageUtilization",
    "Value": "value",
    "AverageValue": "averageValue",
}


def check_object_reference(ref: dict[str, Any], path: str, report: Report) -> None:
    """kind and name are required and usable as URL path segments, and apiVersion has the group/version
    shape (scaleTargetRef, describedObject): all three end up in request paths."""
    for key, limit in (("kind", KIND_MAX_CHARS), ("name", OBJECT_NAME_MAX_CHARS)):
        value = string(ref, key, path, report, required=True, max_length=limit)
        if value:
            problem = names.path_segment(value)
            if problem:
                report.error(join(path, key), problem)
    api_version = string(ref, "apiVersion", path, report, max_length=API_VERSION_MAX_CHARS)
    if api_version == "":
        report.error(
            join(path, "apiVersion"), "must not be empty: write one such as apps/v1, or leave it out"
        )
    elif api_version:
        problem = names.api_version(api_version)
        if problem:
            report.error(join(path, "apiVersion"), problem)


# Kinds known to have no scale subresource, by API group ("" is the core group, apiVersion v1): an HPA
# on them never works, so they are refused at admission rather than reported as missing later.
SCALABLE_CORE_KINDS = ("ReplicationController",)
NO_SCALE_SUBRESOURCE = {
    "apps": ("DaemonSet", "ControllerRevision"),
    "batch": ("Job", "CronJob"),
}


def check_scalable(ref: dict[str, Any], path: str, report: Report) -> None:
    """Refuse a scaleTargetRef to a built-in kind that has no scale subresource (a v1 ConfigMap, a Pod,
    a DaemonSet): every core (v1) kind but ReplicationController, and a few in apps and batch."""
    api_version, kind = ref.get("apiVersion"), ref.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        return
    if names.api_version(api_version) is not None:
        return  # reported by check_object_reference
    group = api_version.rpartition("/")[0]
    if group == "" and kind not in SCALABLE_CORE_KINDS:
        pass
    elif kind not in NO_SCALE_SUBRESOURCE.get(group, ()):
        return
    report.error(
        join(path, "kind"),
        f"{shorten(kind)} ({shorten(api_version)}) has no scale subresource, so it cannot be scaled: "
        "target a workload that has one, such as apps/v1 Deployment or StatefulSet "
        "(the only core v1 kind with one is ReplicationController)",
    )


def check_metrics(spec: dict[str, Any], path: str, report: Report) -> None:
    metrics = array(spec, "metrics", path, report, max_items=METRICS_MAX_ITEMS)
    if metrics is not None:
        each_mapping(metrics, join(path, "metrics"), report, lambda m, where: check_metric(m, where, report))


def check_metric(metric: dict[str, Any], path: str, report: Report) -> None:
    kind = one_of(metric, "type", path, report, METRIC_TYPES, required=True)
    for other_type, block in SOURCE_FIELDS.items():
        if other_type != kind and present(metric, block):
            shown = f"type {kind}" if kind else "this metric"
            report.error(
                join(path, block),
                f"must not be set for {shown}: set only the source block that matches type "
                f"({SOURCE_FIELDS[kind] if kind else 'one of ' + ', '.join(SOURCE_FIELDS.values())})",
            )
    if kind is None:
        return
    if kind == "ContainerResource":
        report.warn(join(path, "type"), CONTAINER_RESOURCE_WARNING)
    source_name = SOURCE_FIELDS[kind]
    source = mapping(metric, source_name, path, report)
    where = join(path, source_name)
    if source is None:
        if not present(metric, source_name):
            report.error(where, f"is required for type {kind}: describe the metric here")
        return
    _SOURCE_CHECKS[kind](source, where, report)


def _check_identifier(source: dict[str, Any], path: str, report: Report) -> None:
    metric = mapping(source, "metric", path, report, required=True)
    if metric is None:
        return
    where = join(path, "metric")
    name = string(metric, "name", where, report, required=True, max_length=METRIC_NAME_MAX_CHARS)
    if name:
        problem = names.path_segment(name)
        if problem:
            report.error(join(where, "name"), problem)
    selector = mapping(metric, "selector", where, report)
    if selector is not None:
        from fhpa_api.affinity_rules import check_label_selector

        check_label_selector(selector, join(where, "selector"), report)


def _target(source: dict[str, Any], path: str, report: Report) -> dict[str, Any] | None:
    target = mapping(source, "target", path, report, required=True)
    if target is not None:
        check_target(target, join(path, "target"), report)
    return target


def check_target(target: dict[str, Any], path: str, report: Report) -> None:
    kind = one_of(target, "type", path, report, TARGET_TYPES, required=True)
    positive_quantity(target, "value", path, report)
    positive_quantity(target, "averageValue", path, report)
    integer(target, "averageUtilization", path, report, minimum=1, hint=" (percent of the pods' requests)")
    if kind is not None:
        wanted = _TARGET_FIELD_OF_TYPE[kind]
        others = [f for f in _TARGET_FIELD_OF_TYPE.values() if f != wanted and present(target, f)]
        if others and not present(target, wanted):
            report.warn(
                join(path, "type"),
                f"type is {kind} but only {', '.join(others)} is set; "
                "member HPAs go by the field that is set",
            )


def _check_object(source: dict[str, Any], path: str, report: Report) -> None:
    described = mapping(source, "describedObject", path, report, required=True)
    if described is not None:
        check_object_reference(described, join(path, "describedObject"), report)
    _check_identifier(source, path, report)
    target = _target(source, path, report)
    if target is not None and not (present(target, "value") or present(target, "averageValue")):
        report.error(join(path, "target"), "must set value or averageValue for an Object metric")


def _check_pods(source: dict[str, Any], path: str, report: Report) -> None:
    _check_identifier(source, path, report)
    target = _target(source, path, report)
    if target is not None and not present(target, "averageValue"):
        report.error(join(path, "target.averageValue"), "is required for a Pods metric (the per-pod value)")


def _check_external(source: dict[str, Any], path: str, report: Report) -> None:
    _check_identifier(source, path, report)
    target = _target(source, path, report)
    if target is not None:
        _exactly_one(target, join(path, "target"), report, ("value", "averageValue"), "an External metric")


def _check_resource(source: dict[str, Any], path: str, report: Report) -> None:
    string(source, "name", path, report, required=True, max_length=RESOURCE_NAME_MAX_CHARS)
    target = _target(source, path, report)
    if target is not None:
        _exactly_one(
            target, join(path, "target"), report, ("averageUtilization", "averageValue"), "a resource"
        )


CONTAINER_RESOURCE_WARNING = "members before Kubernetes 1.27 refuse ContainerResource (alpha, off by default)"
"""ContainerResource metrics are alpha behind a feature gate that is off by default before 1.27 (beta, on
by default, from 1.27; stable in 1.30): an older member refuses the HPA with 422, so the user hears it at
apply time rather than from a cluster row that stays empty."""


def _check_container_resource(source: dict[str, Any], path: str, report: Report) -> None:
    name = string(source, "name", path, report, required=True, max_length=RESOURCE_NAME_MAX_CHARS)
    if name:
        problem = names.container_resource_name(name)
        if problem:
            report.error(join(path, "name"), problem)
    container = string(source, "container", path, report, required=True, max_length=DNS1123_LABEL_MAX)
    if container:
        problem = names.dns1123_label(container)
        if problem:
            report.error(join(path, "container"), f"container name {problem}")
    target = _target(source, path, report)
    if target is not None:
        _exactly_one(
            target,
            join(path, "target"),
            report,
            ("averageUtilization", "averageValue"),
            "a container resource",
        )


def _exactly_one(
    target: dict[str, Any], path: str, report: Report, fields: tuple[str, str], what: str
) -> None:
    first, second = fields
    if present(target, first) and present(target, second):
        report.error(
            join(path, second), f"must not be set together with {first}: a target for {what} uses one"
        )
    elif not present(target, first) and not present(target, second):
        report.error(path, f"must set {first} or {second} for {what}")


_SOURCE_CHECKS = {
    "Object": _check_object,
    "Pods": _check_pods,
    "Resource": _check_resource,
    "ContainerResource": _check_container_resource,
    "External": _check_external,
}


# --- behavior ---------------------------------------------------------------------------------------


def check_behavior(spec: dict[str, Any], path: str, report: Report) -> None:
    behavior = mapping(spec, "behavior", path, report)
    if behavior is None:
        return
    where = join(path, "behavior")
    for direction in ("scaleUp", "scaleDown"):
        rules = mapping(behavior, direction, where, report)
        if rules is not None:
            check_scaling_rules(rules, join(where, direction), report)


def check_scaling_rules(rules: dict[str, Any], path: str, report: Report) -> None:
    integer(
        rules,
        "stabilizationWindowSeconds",
        path,
        report,
        minimum=0,
        maximum=MAX_STABILIZATION_WINDOW_SECONDS,
        hint=" seconds",
    )
    one_of(rules, "selectPolicy", path, report, SELECT_POLICIES)
    _check_tolerance(rules, path, report)
    policies = array(rules, "policies", path, report, max_items=POLICIES_MAX_ITEMS)
    if policies is None or not policies:
        if policies is not None or not present(rules, "policies"):
            report.error(
                join(path, "policies"),
                "must list at least one policy (e.g. {type: Percent, value: 100, periodSeconds: 15})",
            )
        return
    each_mapping(policies, join(path, "policies"), report, lambda p, where: _check_policy(p, where, report))


def _check_tolerance(rules: dict[str, Any], path: str, report: Report) -> None:
    number = quantity(rules, "tolerance", path, report)
    if number is not None and number < 0:
        report.error(
            join(path, "tolerance"), f"{shorten(rules['tolerance'])} must be a quantity >= 0 (e.g. 50m)"
        )


def _check_policy(policy: dict[str, Any], path: str, report: Report) -> None:
    one_of(policy, "type", path, report, POLICY_TYPES, required=True)
    integer(policy, "value", path, report, required=True, minimum=1)
    integer(
        policy,
        "periodSeconds",
        path,
        report,
        required=True,
        minimum=1,
        maximum=MAX_PERIOD_SECONDS,
        hint=" seconds",
    )
