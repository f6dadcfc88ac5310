"""Small valid objects for the API tests, and a helper to change one field by its path."""

from __future__ import annotations

import copy
import re
from typing import Any

from fhpa_api.defaulting import apply_defaults
from fhpa_api.validation import ValidationResult

API = "autoscaling.karmada.io/v1alpha1"
_DELETE = object()


def fhpa(**spec: Any) -> dict[str, Any]:
    """A minimal valid, defaulted FederatedHPA; keyword arguments replace spec fields."""
    body: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 10,
    }
    body.update(spec)
    return apply_defaults(
        {
            "apiVersion": API,
            "kind": "FederatedHPA",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": body,
        }
    )


def cron(target: str = "fhpa", rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A minimal valid, defaulted CronFederatedHPA targeting a FederatedHPA or a Deployment."""
    if target == "fhpa":
        ref = {"apiVersion": API, "kind": "FederatedHPA", "name": "web"}
        default_rule: dict[str, Any] = {"name": "peak", "schedule": "0 8 * * *", "targetMinReplicas": 5}
    else:
        ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
        default_rule = {"name": "peak", "schedule": "0 8 * * *", "targetReplicas": 5}
    return apply_defaults(
        {
            "apiVersion": API,
            "kind": "CronFederatedHPA",
            "metadata": {"name": "web-cron", "namespace": "shop"},
            "spec": {"scaleTargetRef": ref, "rules": rules if rules is not None else [default_rule]},
        }
    )


def with_field(obj: dict[str, Any], path: str, value: Any = _DELETE) -> dict[str, Any]:
    """A copy of ``obj`` with the field at ``path`` (``spec.rules[0].name``) set, or deleted when no value."""
    result = copy.deepcopy(obj)
    parts: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        parts.append(int(index) if index else name)
    target: Any = result
    for part in parts[:-1]:
        if isinstance(part, str) and isinstance(target, dict) and part not in target:
            target[part] = {}
        target = target[part]
    last = parts[-1]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value
    return result


def paths(result: ValidationResult) -> list[str]:
    return [e.path for e in result.errors]


def message_at(result: ValidationResult, path: str) -> str:
    """The message of the (first) error at ``path``; fails the test when there is none."""
    for error in result.errors:
        if error.path == path:
            return error.message
    raise AssertionError(f"no error at {path}; errors: {[str(e) for e in result.errors]}")
