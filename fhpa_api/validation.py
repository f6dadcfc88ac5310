"""Validation of FederatedHPA and CronFederatedHPA objects: the one place the admission rules live.

The validating webhook and `fhpa validate` both call :func:`validate`; it runs on the JSON-like object
as submitted (after defaulting, as the API server orders it), reports every error with its field path
and a message saying what is allowed, collects warnings for fields that are accepted but have no
effect, and never raises, whatever the input.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from fhpa_api import API_VERSION, CRON_FEDERATED_HPA, FEDERATED_HPA, names
from fhpa_api.affinity_rules import check_placement
from fhpa_api.defaulting import apply_defaults
from fhpa_api.field_checks import (
    FieldError,
    Report,
    ValidationResult,
    integer,
    join,
    mapping,
    string,
    type_name,
)
from fhpa_api.limits import shorten
from fhpa_api.list_limits import oversized_list, oversized_message
from fhpa_api.models import KINDS, CronFederatedHPA, FederatedHPA
from fhpa_api.pause import PAUSED_ANNOTATION, odd_pause_value
from fhpa_api.validation_cron import check_cron_spec
from fhpa_api.validation_metrics import (
    check_behavior,
    check_metrics,
    check_object_reference,
    check_scalable,
)

__all__ = ["FieldError", "InvalidObjectError", "ValidationResult", "parse_object", "validate"]

ROOT = "object"
"""The path reported for a problem with the document as a whole (e.g. it is not an object)."""

FORBIDDEN_FHPA_TARGETS = (FEDERATED_HPA, CRON_FEDERATED_HPA, "HorizontalPodAutoscaler")


class InvalidObjectError(ValueError):
    """Raised by :func:`parse_object`; carries the full :class:`ValidationResult`."""

    def __init__(self, result: ValidationResult) -> None:
        self.result = result
        super().__init__("; ".join(str(e) for e in result.errors) or "invalid object")


def validate(obj: Any, old: Any | None = None) -> ValidationResult:
    """Check one object (and, on UPDATE, what changed from ``old``); never raises."""
    report = Report()
    if not isinstance(obj, dict):
        report.error(ROOT, f"must be an object (a YAML/JSON mapping), not {type_name(obj)}")
        return report.result
    too_long = oversized_list(obj)
    if too_long is not None:  # refused before any model is built: see fhpa_api.list_limits
        report.error(too_long[0], oversized_message(too_long))
        return report.result
    kind = _check_type_meta(obj, report)
    _check_metadata(obj, report)
    spec = mapping(obj, "spec", "", report, required=True)
    if kind == FEDERATED_HPA and spec is not None:
        _check_fhpa_spec(spec, report)
        _check_fhpa_status(obj, report)
        _check_fhpa_update(spec, old, report)
    elif kind == CRON_FEDERATED_HPA and spec is not None:
        ref = _scale_target_ref(spec, report)
        check_cron_spec(spec, ref, report)
    if kind is not None:
        _check_schema(obj, kind, report)
    return report.result


def parse_object(obj: dict[str, Any]) -> FederatedHPA | CronFederatedHPA:
    """Default, validate and build the model, as the API server would admit it."""
    defaulted = apply_defaults(obj)
    result = validate(defaulted)
    if not result.ok:
        raise InvalidObjectError(result)
    return KINDS[defaulted["kind"]].model_validate(defaulted)


def _check_type_meta(obj: dict[str, Any], report: Report) -> str | None:
    api_version = obj.get("apiVersion")
    if api_version != API_VERSION:
        report.error("apiVersion", f"{shorten(api_version)} is not supported: use {API_VERSION}")
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        report.error("kind", f"{shorten(kind)} is not supported: use {FEDERATED_HPA} or {CRON_FEDERATED_HPA}")
        return None
    return str(kind)


def _check_metadata(obj: dict[str, Any], report: Report) -> None:
    meta = mapping(obj, "metadata", "", report, required=True)
    if meta is None:
        return
    name = string(meta, "name", "metadata", report, required=True)
    if name:
        problem = names.dns1123_subdomain(name)
        if problem:
            report.error("metadata.name", problem)
    namespace = meta.get("namespace")
    if namespace is None or namespace == "":
        report.error("metadata.namespace", "is required: both kinds are namespaced (e.g. namespace: default)")
    elif not isinstance(namespace, str):
        report.error("metadata.namespace", f"must be a string, not {type_name(namespace)}")
    else:
        problem = names.dns1123_label(namespace)
        if problem:
            report.error("metadata.namespace", problem)
    for key in ("labels", "annotations"):
        values = mapping(meta, key, "metadata", report)
        for item_key, value in (values or {}).items():
            if not isinstance(value, str):
                report.error(f"metadata.{key}[{item_key}]", f"must be a string, not {type_name(value)}")
    odd = odd_pause_value(meta.get("annotations") if isinstance(meta.get("annotations"), dict) else None)
    if odd is not None:
        report.warn(
            f"metadata.annotations[{PAUSED_ANNOTATION}]",
            f'{shorten(odd)} does not pause: only "true" pauses (and "false" or no annotation resumes)',
        )


def _scale_target_ref(spec: dict[str, Any], report: Report) -> dict[str, Any] | None:
    ref = mapping(spec, "scaleTargetRef", "spec", report, required=True)
    if ref is not None:
        check_object_reference(ref, "spec.scaleTargetRef", report)
        check_scalable(ref, "spec.scaleTargetRef", report)
    return ref


def _check_fhpa_spec(spec: dict[str, Any], report: Report) -> None:
    ref = _scale_target_ref(spec, report)
    if ref is not None and ref.get("kind") in FORBIDDEN_FHPA_TARGETS:
        report.error(
            "spec.scaleTargetRef.kind",
            f"a FederatedHPA cannot target a {ref['kind']}: target the workload itself "
            "(a Deployment, StatefulSet or any resource with a scale subresource)",
        )
    low = integer(
        spec, "minReplicas", "spec", report, minimum=1, hint=" (scaling to zero is scalingToZero's job)"
    )
    high = integer(spec, "maxReplicas", "spec", report, required=True, minimum=1)
    if high is not None and high < (low if low is not None else 1):
        report.error("spec.maxReplicas", f"{high} is below minReplicas {low}: must be >= minReplicas")
    check_metrics(spec, "spec", report)
    check_behavior(spec, "spec", report)
    check_placement(spec, "spec", report)


def _check_fhpa_status(obj: dict[str, Any], report: Report) -> None:
    status = mapping(obj, "status", "", report)
    if status is not None:
        integer(status, "currentReplicas", "status", report, minimum=0)
        integer(status, "desiredReplicas", "status", report, minimum=0)


def _check_fhpa_update(spec: dict[str, Any], old: Any, report: Report) -> None:
    if not isinstance(old, dict) or not isinstance(old.get("spec"), dict):
        return
    before, after = old["spec"].get("scaleTargetRef"), spec.get("scaleTargetRef")
    if isinstance(before, dict) and isinstance(after, dict) and before != after:
        report.warn(
            "spec.scaleTargetRef",
            "changed: the member HPAs of the old target are deleted and re-created for the new one",
        )


def _check_schema(obj: dict[str, Any], kind: str, report: Report) -> None:
    """Catch unknown fields (and any type the rules above do not read) through the model itself."""
    try:
        KINDS[kind].model_validate(obj)
    except ValidationError as exc:
        had_errors = report.error_count > 0
        for error in exc.errors():
            if had_errors and error["type"] != "extra_forbidden":
                continue  # the rules above already explain the problem in their own words
            report.error(_loc_path(error["loc"]), _schema_message(error))


def _loc_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path = f"{path}[{part}]" if isinstance(part, int) else join(path, str(part))
    return path or ROOT


def _schema_message(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown field: it is not part of this kind's schema (check its spelling and indentation)"
    return f"{error['msg']} (got {type_name(error.get('input'))})"
