"""Rules for Karmada's ClusterAffinity and for a FederatedHPA's assignment policy.

A malformed selector would otherwise match nothing (or everything) silently in the controller, so
it is refused at admission with the operator or value that is wrong.
"""

from __future__ import annotations

from typing import Any

from fhpa_api import names
from fhpa_api.field_checks import (
    Report,
    array,
    at,
    boolean,
    each_mapping,
    integer,
    join,
    limited_mapping,
    mapping,
    one_of,
    present,
    string,
    type_name,
)
from fhpa_api.limits import (
    CLUSTER_NAMES_MAX_ITEMS,
    MATCH_LABELS_MAX_PROPERTIES,
    PREFERENCES_MAX_ITEMS,
    SELECTOR_EXPRESSIONS_MAX_ITEMS,
    SELECTOR_VALUE_MAX_CHARS,
    SELECTOR_VALUES_MAX_ITEMS,
    shorten,
)
from fhpa_api.models import ASSIGNMENT_TYPES

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
FIELD_SELECTOR_KEYS = ("provider", "region", "zone")
FIELD_SELECTOR_OPERATORS = SELECTOR_OPERATORS
MAX_MULTI_CLUSTER_DELAY_SECONDS = 86400
_WEIGHT_IGNORED = ("Duplicated", "DynamicWeighted", "Aggregated")


def check_label_selector(selector: dict[str, Any], path: str, report: Report) -> None:
    labels = limited_mapping(selector, "matchLabels", path, report, MATCH_LABELS_MAX_PROPERTIES)
    for key, value in (labels or {}).items():
        where = f"{join(path, 'matchLabels')}[{key}]"
        problem = names.qualified_name(str(key))
        if problem:
            report.error(where, f"label key {problem}")
        if not isinstance(value, str):
            report.error(where, f"label value must be a string, not {type_name(value)}")
        else:
            problem = names.label_value(value)
            if problem:
                report.error(where, problem)
    expressions = array(selector, "matchExpressions", path, report, max_items=SELECTOR_EXPRESSIONS_MAX_ITEMS)
    if expressions is not None:
        each_mapping(
            expressions,
            join(path, "matchExpressions"),
            report,
            lambda e, where: _check_requirement(e, where, report, None, SELECTOR_OPERATORS),
        )


def _check_requirement(
    requirement: dict[str, Any],
    path: str,
    report: Report,
    keys: tuple[str, ...] | None,
    operators: tuple[str, ...],
) -> None:
    if keys is None:
        key = string(requirement, "key", path, report, required=True)
        problem = names.qualified_name(key) if key else None
        if problem:
            report.error(join(path, "key"), f"label key {problem}")
    else:
        one_of(requirement, "key", path, report, keys, required=True)
    operator = one_of(requirement, "operator", path, report, operators, required=True)
    values = array(requirement, "values", path, report, max_items=SELECTOR_VALUES_MAX_ITEMS)
    for index, value in enumerate(values or []):
        if not isinstance(value, str):
            report.error(at(join(path, "values"), index), f"must be a string, not {type_name(value)}")
        elif len(value) > SELECTOR_VALUE_MAX_CHARS:
            report.error(
                at(join(path, "values"), index),
                f"{shorten(value, 32)} is too long: at most {SELECTOR_VALUE_MAX_CHARS} characters",
            )
    shape_ok = values is not None or not present(requirement, "values")  # a wrong type is reported above
    if operator in ("In", "NotIn") and not values and shape_ok:
        report.error(join(path, "values"), f"must list at least one value for operator {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        report.error(join(path, "values"), f"must be empty for operator {operator} (it tests only the key)")


def check_cluster_affinity(affinity: dict[str, Any], path: str, report: Report) -> None:
    for key in ("clusterNames", "exclude"):
        items = array(affinity, key, path, report, max_items=CLUSTER_NAMES_MAX_ITEMS)
        for index, name in enumerate(items or []):
            where = at(join(path, key), index)
            if not isinstance(name, str):
                report.error(where, f"must be a cluster name (a string), not {type_name(name)}")
                continue
            problem = names.dns1123_label(name)
            if problem:
                report.error(where, f"cluster name {problem}")
    selector = mapping(affinity, "labelSelector", path, report)
    if selector is not None:
        check_label_selector(selector, join(path, "labelSelector"), report)
    field_selector = mapping(affinity, "fieldSelector", path, report)
    if field_selector is not None:
        where = join(path, "fieldSelector")
        expressions = array(
            field_selector, "matchExpressions", where, report, max_items=SELECTOR_EXPRESSIONS_MAX_ITEMS
        )
        each_mapping(
            expressions or [],
            join(where, "matchExpressions"),
            report,
            lambda e, w: _check_requirement(e, w, report, FIELD_SELECTOR_KEYS, FIELD_SELECTOR_OPERATORS),
        )


def check_placement(spec: dict[str, Any], path: str, report: Report) -> None:
    """clusterAffinity, the assignment policy and its preferences, the delay and the two switches."""
    affinity = mapping(spec, "clusterAffinity", path, report)
    if affinity is not None:
        check_cluster_affinity(affinity, join(path, "clusterAffinity"), report)
    policy = _check_assignment(spec, path, report)
    integer(
        spec,
        "autoscaleMultiClusterDelay",
        path,
        report,
        minimum=0,
        maximum=MAX_MULTI_CLUSTER_DELAY_SECONDS,
        hint=" seconds (at most one day)",
    )
    scale_assist = boolean(spec, "scaleAssist", path, report)
    scaling_to_zero = boolean(spec, "scalingToZero", path, report)
    if scaling_to_zero:
        if policy == "Duplicated":
            report.warn(
                join(path, "scalingToZero"),
                "has no effect with the Duplicated policy (every cluster keeps the full min/max)",
            )
        elif scale_assist is False:
            report.warn(
                join(path, "scalingToZero"),
                "has no effect with scaleAssist: false (the controller never acts after assignment)",
            )


def _check_assignment(spec: dict[str, Any], path: str, report: Report) -> str | None:
    """Return the policy in force (Duplicated when unset), or None when it is invalid."""
    assignment = mapping(spec, "federatedHPAAssignment", path, report)
    if assignment is None:
        return "Duplicated" if not present(spec, "federatedHPAAssignment") else None
    where = join(path, "federatedHPAAssignment")
    policy = one_of(assignment, "federatedHPAAssignmentType", where, report, ASSIGNMENT_TYPES)
    if policy is None and not present(assignment, "federatedHPAAssignmentType"):
        policy = "Duplicated"
    preferences = array(
        assignment, "clusterAutoscalingPreference", where, report, max_items=PREFERENCES_MAX_ITEMS
    )
    if preferences is None:
        preferences = []
    pref_path = join(where, "clusterAutoscalingPreference")
    each_mapping(preferences, pref_path, report, lambda p, w: _check_preference(p, w, report, policy))
    _check_policy_needs(policy, [p for p in preferences if isinstance(p, dict)], pref_path, report)
    return policy


def _check_preference(pref: dict[str, Any], path: str, report: Report, policy: str | None) -> None:
    affinity = mapping(pref, "targetCluster", path, report, required=True)
    if affinity is not None:
        check_cluster_affinity(affinity, join(path, "targetCluster"), report)
    weight = integer(pref, "staticWeight", path, report, minimum=0)
    priority = integer(pref, "priority", path, report)
    if policy == "Prioritized" and weight is not None:
        report.warn(join(path, "staticWeight"), "is ignored by the Prioritized policy (it reads priority)")
    if policy == "StaticWeighted" and priority is not None:
        report.warn(join(path, "priority"), "is ignored by the StaticWeighted policy (it reads staticWeight)")


def _check_policy_needs(policy: str | None, prefs: list[dict[str, Any]], path: str, report: Report) -> None:
    if policy == "StaticWeighted":
        weights = [p.get("staticWeight") for p in prefs]
        if not any(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in weights):
            report.error(
                path,
                "StaticWeighted needs at least one preference with staticWeight >= 1 "
                "(e.g. [{targetCluster: {clusterNames: [member1]}, staticWeight: 1}])",
            )
    elif policy == "Prioritized":
        if not any(present(p, "priority") for p in prefs):
            report.error(
                path,
                "Prioritized needs at least one preference with a priority "
                "(e.g. [{targetCluster: {clusterNames: [member1]}, priority: 10}])",
            )
    elif policy in _WEIGHT_IGNORED and prefs:
        report.warn(path, f"is ignored by the {policy} policy (only StaticWeighted and Prioritized read it)")
