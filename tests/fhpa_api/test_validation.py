"""FederatedHPA and shared rules of fhpa_api.validation: each rule accepted and refused, by field path."""

from __future__ import annotations

from typing import Any

import pytest

from fhpa_api.validation import FieldError, InvalidObjectError, parse_object, validate
from tests.support.api_builders import cron, fhpa, message_at, paths, with_field

CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
}


def test_minimal_defaulted_objects_are_valid() -> None:
    for obj in (fhpa(), cron("fhpa"), cron("workload")):
        result = validate(obj)
        assert result.ok, result.errors
        assert result.warnings == []


def test_field_error_renders_path_then_message() -> None:
    err = FieldError("spec.rules[1].schedule", "bad")
    assert str(err) == "spec.rules[1].schedule: bad"


def test_every_error_is_reported_not_only_the_first() -> None:
    obj = with_field(with_field(fhpa(), "spec.minReplicas", 0), "metadata.name", "Bad_Name")
    obj = with_field(obj, "spec.scaleTargetRef.name", "a/b")
    assert set(paths(validate(obj))) == {"spec.minReplicas", "metadata.name", "spec.scaleTargetRef.name"}


# --- metadata and scaleTargetRef (both kinds) -----------------------------------------------------


def cron_of_deployment() -> dict[str, Any]:
    return cron("workload")


GOOD_META = [
    ("metadata.name", "web-frontend.v2"),
    ("metadata.name", "a" * 253),
    ("metadata.namespace", "team-a"),
]
BAD_META = [
    ("metadata.name", "Invalid_Name", "metadata.name", "DNS-1123 subdomain"),
    ("metadata.name", "invalid/name", "metadata.name", "DNS-1123 subdomain"),
    ("metadata.name", "a" * 254, "metadata.name", "at most 253"),
    ("metadata.name", None, "metadata.name", "required"),
    ("metadata.namespace", None, "metadata.namespace", "namespaced"),
    ("metadata.namespace", "Team_A", "metadata.namespace", "DNS-1123 label"),
    ("apiVersion", "autoscaling/v2", "apiVersion", "autoscaling.karmada.io/v1alpha1"),
]
GOOD_REF = [("spec.scaleTargetRef.kind", "Rollout"), ("spec.scaleTargetRef.name", "web.v1_x")]
BAD_REF = [
    ("spec.scaleTargetRef.kind", None, "spec.scaleTargetRef.kind", "required"),
    ("spec.scaleTargetRef.name", "", "spec.scaleTargetRef.name", "required"),
    ("spec.scaleTargetRef.name", "..", "spec.scaleTargetRef.name", "'.' or '..'"),
    ("spec.scaleTargetRef.name", "a/b", "spec.scaleTargetRef.name", "'/'"),
    ("spec.scaleTargetRef.kind", "Deploy%6Dent", "spec.scaleTargetRef.kind", "'%'"),
]


@pytest.mark.parametrize("make", [fhpa, cron_of_deployment], ids=["fhpa", "cron"])
@pytest.mark.parametrize(("path", "value"), GOOD_META + GOOD_REF)
def test_meta_and_reference_accepted(make: Any, path: str, value: Any) -> None:
    assert validate(with_field(make(), path, value)).ok


@pytest.mark.parametrize("make", [fhpa, cron_of_deployment], ids=["fhpa", "cron"])
@pytest.mark.parametrize(("path", "value", "where", "fragment"), BAD_META + BAD_REF)
def test_meta_and_reference_refused(make: Any, path: str, value: Any, where: str, fragment: str) -> None:
    result = validate(with_field(make(), path, value))
    assert fragment in message_at(result, where)


def test_unknown_kind_is_refused() -> None:
    result = validate(with_field(fhpa(), "kind", "FederatedHpa"))
    assert "FederatedHPA or CronFederatedHPA" in message_at(result, "kind")


@pytest.mark.parametrize("value", [None, [], "text", 3, 1.5, True])
def test_a_document_that_is_not_an_object_is_an_error(value: Any) -> None:
    result = validate(value)
    assert not result.ok
    assert result.errors[0].path == "object"


def test_spec_is_required() -> None:
    assert "required" in message_at(validate(with_field(fhpa(), "spec")), "spec")


# --- FederatedHPA replicas and target ---------------------------------------------------------------

GOOD_SPEC = [
    ("spec.minReplicas", 1),
    ("spec.maxReplicas", 2),  # == minReplicas
    ("spec.maxReplicas", 2147483647),
]
BAD_SPEC = [
    ("spec.minReplicas", 0, "spec.minReplicas", ">= 1"),
    ("spec.minReplicas", "3", "spec.minReplicas", "must be an integer"),
    ("spec.maxReplicas", 0, "spec.maxReplicas", ">= 1"),
    ("spec.maxReplicas", None, "spec.maxReplicas", "required"),
    ("spec.maxReplicas", 1, "spec.maxReplicas", "below minReplicas 2"),
    ("spec.maxReplicas", 2**31, "spec.maxReplicas", "out of range"),
    ("spec.scaleTargetRef.kind", "FederatedHPA", "spec.scaleTargetRef.kind", "cannot target a FederatedHPA"),
    ("spec.scaleTargetRef.kind", "CronFederatedHPA", "spec.scaleTargetRef.kind", "cannot target"),
    ("spec.scaleTargetRef.kind", "HorizontalPodAutoscaler", "spec.scaleTargetRef.kind", "cannot target"),
]


@pytest.mark.parametrize(("path", "value"), GOOD_SPEC)
def test_fhpa_spec_accepted(path: str, value: Any) -> None:
    assert validate(with_field(fhpa(), path, value)).ok


@pytest.mark.parametrize(("path", "value", "where", "fragment"), BAD_SPEC)
def test_fhpa_spec_refused(path: str, value: Any, where: str, fragment: str) -> None:
    assert fragment in message_at(validate(with_field(fhpa(), path, value)), where)


def test_status_replica_counts_must_not_be_negative() -> None:
    good = with_field(fhpa(), "status", {"currentReplicas": 0, "desiredReplicas": 3})
    assert validate(good).ok
    bad = with_field(fhpa(), "status", {"currentReplicas": -1})
    assert ">= 0" in message_at(validate(bad), "status.currentReplicas")


def test_unknown_fields_are_refused_with_their_path() -> None:
    obj = with_field(fhpa(), "spec.maxReplica", 3)
    assert "unknown field" in message_at(validate(obj), "spec.maxReplica")
    obj = with_field(fhpa(metrics=[CPU]), "spec.metrics[0].resource.targett", {})
    assert "unknown field" in message_at(validate(obj), "spec.metrics[0].resource.targett")


def test_unknown_fields_are_reported_alongside_rule_errors() -> None:
    obj = with_field(with_field(fhpa(), "spec.typo", 1), "spec.minReplicas", 0)
    assert set(paths(validate(obj))) == {"spec.typo", "spec.minReplicas"}


def test_wrong_shapes_are_errors_not_crashes() -> None:
    for path, value in [("spec", []), ("spec.metrics", {}), ("spec.behavior", "fast"), ("metadata", 3)]:
        result = validate(with_field(fhpa(), path, value))
        assert path in paths(result), (path, result.errors)


# --- UPDATE ----------------------------------------------------------------------------------------


def test_update_with_unchanged_target_has_no_warning() -> None:
    old = fhpa()
    assert validate(with_field(old, "spec.maxReplicas", 20), old).warnings == []


def test_update_changing_the_target_is_allowed_with_a_warning() -> None:
    old = fhpa()
    new = with_field(old, "spec.scaleTargetRef.name", "web-v2")
    result = validate(new, old)
    assert result.ok
    assert any(w.startswith("spec.scaleTargetRef:") and "re-created" in w for w in result.warnings)


def test_update_applies_the_same_rules() -> None:
    old = fhpa()
    assert "spec.minReplicas" in paths(validate(with_field(old, "spec.minReplicas", 0), old))


# --- parse_object ----------------------------------------------------------------------------------


def test_parse_object_defaults_then_builds_the_model() -> None:
    raw = {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4},
    }
    model = parse_object(raw)
    assert model.kind == "FederatedHPA"
    assert model.spec.min_replicas == 1
    assert "minReplicas" not in raw["spec"], "the input is not modified"


def test_parse_object_raises_with_the_full_result() -> None:
    with pytest.raises(InvalidObjectError) as info:
        parse_object(with_field(with_field(fhpa(), "spec.maxReplicas", 0), "metadata.namespace"))
    assert {"spec.maxReplicas", "metadata.namespace"} <= set(paths(info.value.result))
    assert "spec.maxReplicas" in str(info.value)


def test_a_pause_annotation_that_does_not_pause_is_warned_about() -> None:
    def annotated(value: str) -> dict:
        obj = fhpa()
        obj["metadata"]["annotations"] = {"autoscaling.karmada.io/paused": value}
        return obj

    assert validate(annotated("true")).warnings == []
    assert validate(annotated("false")).warnings == []
    result = validate(annotated("yes"))
    assert result.ok
    assert any('only "true" pauses' in w for w in result.warnings)
