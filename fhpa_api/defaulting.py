"""Defaulting of FederatedHPA and CronFederatedHPA, as RFC 6902 JSON Patch operations.

The mutating webhook returns these operations to the API server; `fhpa validate` and
:func:`apply_defaults` apply them locally, so one function decides every default. The defaults follow
DESIGN §2 and the autoscaling/v2 HPA defaults (behavior only when present: a user's field wins over
the default field, a user's policies replace the default policies). Status is never touched. Parts of
the object with the wrong shape are left alone: validation reports them.

One rewrite that is not a default: a bare number in ``behavior.scaleUp/scaleDown.tolerance`` (``0.05``)
becomes the quantity string ``"50m"``. A native HPA takes the number (its JSON decoding makes a
Quantity of it) and manifests written for one carry it over; the CRD schema, an int-or-string, would
refuse a float. Mutating admission runs before the schema check, so the webhook can keep that habit.
"""

from __future__ import annotations

import copy
import math
from decimal import Decimal
from typing import Any

from fhpa_api import CRON_FEDERATED_HPA, FEDERATED_HPA
from fhpa_api.limits import RULES_MAX_ITEMS
from fhpa_api.list_limits import oversized_list

DEFAULT_CPU_UTILIZATION = 80
DEFAULT_METRICS: list[dict[str, Any]] = [
    {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION},
        },
    }
]
SCALE_UP_DEFAULTS: dict[str, Any] = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
# stabilizationWindowSeconds stays unset: each member HPA controller then applies its own
# downscale stabilization flag (5 minutes by default), as for a native HPA.
SCALE_DOWN_DEFAULTS: dict[str, Any] = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}
FHPA_SPEC_DEFAULTS: dict[str, Any] = {
    "minReplicas": 1,
    "scaleAssist": True,
    "scalingToZero": False,
    "autoscaleMultiClusterDelay": 0,
}
DEFAULT_ASSIGNMENT_TYPE = "Duplicated"
CRON_RULE_DEFAULTS: dict[str, Any] = {"suspend": False, "successfulHistoryLimit": 3, "failedHistoryLimit": 3}


def default_patch(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch that defaults ``obj``; [] when it is already defaulted (or is not one of our kinds)."""
    if not isinstance(obj, dict):
        return []
    spec = obj.get("spec")
    if not isinstance(spec, dict) or oversized_list(obj) is not None:
        return []  # validation refuses an over-long list; defaulting each of its items would be wasted
    if obj.get("kind") == FEDERATED_HPA:
        return _fhpa_ops(spec)
    if obj.get("kind") == CRON_FEDERATED_HPA:
        return _cron_ops(spec)
    return []


def apply_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """A defaulted deep copy of ``obj`` (the input is not modified)."""
    result = copy.deepcopy(obj)
    for op in default_patch(result):
        _apply_add(result, op["path"], copy.deepcopy(op["value"]))
    return result


def _add(path: str, value: Any) -> dict[str, Any]:
    # "add" on an existing member replaces it, which is what a null (= unset) value needs.
    return {"op": "add", "path": path, "value": copy.deepcopy(value)}


def _unset(obj: dict[str, Any], key: str) -> bool:
    return obj.get(key) is None


def _fhpa_ops(spec: dict[str, Any]) -> list[dict[str, Any]]:
    ops = [_add(f"/spec/{key}", value) for key, value in FHPA_SPEC_DEFAULTS.items() if _unset(spec, key)]
    metrics = spec.get("metrics")
    if metrics is None or metrics == []:
        ops.append(_add("/spec/metrics", DEFAULT_METRICS))
    ops.extend(_behavior_ops(spec.get("behavior")))
    ops.extend(_assignment_ops(spec))
    return ops


def _behavior_ops(behavior: Any) -> list[dict[str, Any]]:
    if not isinstance(behavior, dict):
        return []  # absent behavior stays absent: member HPAs then use the classic algorithm
    ops: list[dict[str, Any]] = []
    for direction, defaults in (("scaleUp", SCALE_UP_DEFAULTS), ("scaleDown", SCALE_DOWN_DEFAULTS)):
        rules = behavior.get(direction)
        base = f"/spec/behavior/{direction}"
        if rules is None:
            ops.append(_add(base, defaults))
        elif isinstance(rules, dict):
            ops.extend(_add(f"{base}/{key}", value) for key, value in defaults.items() if _unset(rules, key))
            tolerance = rules.get("tolerance")
            if isinstance(tolerance, float) and math.isfinite(tolerance):
                ops.append(_add(f"{base}/tolerance", quantity_text(tolerance)))
    return ops


# (factor, suffix) from the largest unit down: the first that makes the number whole names it
_SUFFIXES = ((Decimal(1), ""), (Decimal(1000), "m"), (Decimal(10**6), "u"), (Decimal(10**9), "n"))


def quantity_text(number: float) -> str:
    """A number as the canonical quantity string the API server would write for it: 0.05 -> "50m",
    2.0 -> "2", 0.0000015 -> "1500n". The float's shortest decimal form is used (0.05, not
    0.05000000000000000277), and a number finer than nano keeps that decimal form ("1e-10" is not
    written; the validation then decides)."""
    exact = Decimal(repr(number))
    for factor, suffix in _SUFFIXES:
        scaled = exact * factor
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return format(exact, "f")


def _assignment_ops(spec: dict[str, Any]) -> list[dict[str, Any]]:
    assignment = spec.get("federatedHPAAssignment")
    if assignment is None:
        return [_add("/spec/federatedHPAAssignment", {"federatedHPAAssignmentType": DEFAULT_ASSIGNMENT_TYPE})]
    if isinstance(assignment, dict) and _unset(assignment, "federatedHPAAssignmentType"):
        return [_add("/spec/federatedHPAAssignment/federatedHPAAssignmentType", DEFAULT_ASSIGNMENT_TYPE)]
    return []


def _cron_ops(spec: dict[str, Any]) -> list[dict[str, Any]]:
    rules = spec.get("rules")
    if not isinstance(rules, list) or len(rules) > RULES_MAX_ITEMS:
        # more rules than allowed: validation refuses the object; a patch of three operations per rule
        # would only make the answer as large as the request (a body of 10,000 rules, a 4 MB patch)
        return []
    ops: list[dict[str, Any]] = []
    for index, rule in enumerate(rules):
        if isinstance(rule, dict):
            ops.extend(
                _add(f"/spec/rules/{index}/{key}", value)
                for key, value in CRON_RULE_DEFAULTS.items()
                if _unset(rule, key)
            )
    return ops


def _apply_add(document: dict[str, Any], pointer: str, value: Any) -> None:
    """Apply one RFC 6902 "add" whose parent exists (the only kind of operation default_patch makes)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    target: Any = document
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[parts[-1]] = value
