"""The API models: JSON round-trips byte for byte, strict on unknown fields, and the effective values."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from fhpa_api.models import (
    KINDS,
    CronFederatedHPA,
    FederatedHPA,
    FederatedHPASpec,
    to_json,
)

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
DOCS = [doc for path in EXAMPLES for doc in yaml.safe_load_all(path.read_text()) if doc]

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
CONDITION = {
    "type": "ScalingActive",
    "status": "True",
    "lastTransitionTime": "2026-11-22T08:00:00Z",
    "reason": "ValidMetricFound",
    "message": "the HPA was able to compute a replica count",
    "observedGeneration": 3,
}

FULL_FHPA: dict[str, Any] = {
    "apiVersion": "autoscaling.karmada.io/v1alpha1",
    "kind": "FederatedHPA",
    "metadata": {
        "name": "web",
        "namespace": "shop",
        "uid": "0b6c7a4e-0000-4000-8000-000000000001",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2026-11-20T10:00:00Z",
        "labels": {"team": "storefront"},
        "annotations": {"note": "x"},
        "finalizers": ["autoscaling.karmada.io/federatedhpa-controller"],
        "managedFields": [{"manager": "kubectl", "operation": "Update"}],
    },
    "spec": {
        "scaleTargetRef": TARGET,
        "minReplicas": 2,
        "maxReplicas": 30,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
            },
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue", "selector": {"matchLabels": {"q": "orders"}}},
                    "target": {"type": "Value", "value": 30},
                },
            },
        ],
        "behavior": {
            "scaleUp": {"policies": [{"type": "Pods", "value": 4, "periodSeconds": 60}], "tolerance": "50m"}
        },
        "federatedHPAAssignment": {
            "federatedHPAAssignmentType": "StaticWeighted",
            "clusterAutoscalingPreference": [
                {"targetCluster": {"clusterNames": ["a"]}, "staticWeight": 2},
                {"targetCluster": {"labelSelector": {"matchLabels": {"region": "eu"}}}, "staticWeight": 1},
            ],
        },
        "scaleAssist": True,
        "scalingToZero": True,
        "autoscaleMultiClusterDelay": 60,
    },
    "status": {
        "observedGeneration": 3,
        "currentReplicas": 7,
        "desiredReplicas": 9,
        "lastScaleTime": "2026-11-22T08:00:00Z",
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {"name": "memory", "current": {"averageValue": "900Mi"}},
            }
        ],
        "conditions": [CONDITION],
        "clusters": [
            {
                "name": "a",
                "minReplicas": 1,
                "maxReplicas": 20,
                "currentReplicas": 5,
                "readyReplicas": 4,
                "pendingReplicas": 1,
                "desiredReplicas": 6,
                "lastScaleTime": "2026-11-22T07:59:00Z",
                "conditions": [CONDITION],
                "state": "Active",
                "pendingSince": "2026-11-22T07:58:00Z",
                "pinnedMinReplicas": 3,
                "healthySince": "2026-11-21T00:00:00Z",
            },
            {"name": "b", "minReplicas": 0, "maxReplicas": 0, "unhealthySince": "2026-11-22T07:00:00Z"},
        ],
        "assignmentKey": "a=2,b=1",
        "lastAssignmentTime": "2026-11-22T06:00:00Z",
        "lastOptimizationTime": "2026-11-22T07:30:00Z",
    },
}

FULL_CRON: dict[str, Any] = {
    "apiVersion": "autoscaling.karmada.io/v1alpha1",
    "kind": "CronFederatedHPA",
    "metadata": {"name": "web-cron", "namespace": "shop", "resourceVersion": "7"},
    "spec": {
        "scaleTargetRef": {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "FederatedHPA",
            "name": "web",
        },
        "rules": [
            {
                "name": "peak",
                "schedule": "0 8 * * *",
                "targetMinReplicas": 5,
                "targetMaxReplicas": 40,
                "suspend": False,
                "timeZone": "Europe/Berlin",
                "successfulHistoryLimit": 2,
                "failedHistoryLimit": 1,
                "maxDelaySeconds": 120,
            }
        ],
    },
    "status": {
        "observedGeneration": 1,
        "conditions": [CONDITION],
        "executionHistories": [
            {
                "ruleName": "peak",
                "nextExecutionTime": "2026-11-23T07:00:00Z",
                "successfulExecutions": [
                    {
                        "scheduleTime": "2026-11-22T07:00:00Z",
                        "executionTime": "2026-11-22T07:00:03Z",
                        "appliedMinReplicas": 5,
                        "appliedMaxReplicas": 40,
                    }
                ],
                "failedExecutions": [
                    {
                        "scheduleTime": "2026-11-21T07:00:00Z",
                        "executionTime": "2026-11-21T07:00:01Z",
                        "message": "FederatedHPA shop/web not found",
                    }
                ],
            }
        ],
    },
}


def _wire(doc: dict[str, Any]) -> dict[str, Any]:
    """What an API server would send: plain JSON types."""
    result: dict[str, Any] = json.loads(json.dumps(doc))
    return result


def test_there_are_examples() -> None:
    assert len(DOCS) >= 7


@pytest.mark.parametrize("doc", DOCS, ids=[d["metadata"]["name"] for d in DOCS])
def test_every_example_round_trips(doc: dict[str, Any]) -> None:
    wire = _wire(doc)
    model = KINDS[doc["kind"]].model_validate(wire)
    assert model.to_json() == wire
    assert to_json(model) == wire
    assert json.loads(json.dumps(model.to_json())) == wire


@pytest.mark.parametrize("doc", [FULL_FHPA, FULL_CRON], ids=["FederatedHPA", "CronFederatedHPA"])
def test_full_status_round_trips(doc: dict[str, Any]) -> None:
    wire = _wire(doc)
    model = KINDS[doc["kind"]].model_validate(wire)
    assert model.to_json() == wire


def test_full_status_is_read_into_typed_fields() -> None:
    model = FederatedHPA.model_validate(_wire(FULL_FHPA))
    assert model.status is not None and model.status.clusters is not None
    row = model.status.clusters[0]
    assert row.pinned_min_replicas == 3
    assert row.pending_since == datetime(2026, 11, 22, 7, 58, tzinfo=UTC)
    assert row.conditions is not None and row.conditions[0].observed_generation == 3
    assert model.status.clusters[1].unhealthy_since == datetime(2026, 11, 22, 7, tzinfo=UTC)
    assert model.status.assignment_key == "a=2,b=1"
    assert model.status.last_optimization_time == datetime(2026, 11, 22, 7, 30, tzinfo=UTC)
    cron = CronFederatedHPA.model_validate(_wire(FULL_CRON))
    assert cron.status is not None and cron.status.execution_histories is not None
    history = cron.status.execution_histories[0]
    assert history.successful_executions is not None
    assert history.successful_executions[0].applied_max_replicas == 40
    assert history.failed_executions is not None and "not found" in history.failed_executions[0].message


def test_round_trip_keeps_quantities_as_written() -> None:
    model = FederatedHPA.model_validate(_wire(FULL_FHPA))
    metrics = model.to_json()["spec"]["metrics"]
    assert metrics[0]["resource"]["target"]["averageValue"] == "1Gi"
    assert metrics[1]["external"]["target"]["value"] == 30


def test_snake_case_names_are_accepted_and_dumped_in_camel_case() -> None:
    spec = FederatedHPASpec(scale_target_ref={"kind": "Deployment", "name": "web"}, max_replicas=5)
    assert to_json(spec) == {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5}


def test_unset_fields_stay_unset() -> None:
    doc = {"spec": {"scaleTargetRef": TARGET, "maxReplicas": 3}}
    dumped = FederatedHPA.model_validate(doc).to_json()
    assert dumped["spec"] == {"scaleTargetRef": TARGET, "maxReplicas": 3}
    assert "status" not in dumped
    assert dumped["apiVersion"] == "autoscaling.karmada.io/v1alpha1" and dumped["kind"] == "FederatedHPA"


@pytest.mark.parametrize(
    "path",
    [
        ("spec", "maxReplica"),
        ("spec", "scaleTargetRef", "namespace"),
        ("spec", "federatedHPAAssignment", "type"),
        ("status", "clusters", 0, "weight"),
        ("status", "bogus"),
    ],
)
def test_unknown_field_is_refused(path: tuple[str | int, ...]) -> None:
    doc = _wire(FULL_FHPA)
    target: Any = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = 1
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        FederatedHPA.model_validate(doc)


def test_unknown_cron_field_is_refused() -> None:
    doc = _wire(FULL_CRON)
    doc["spec"]["rules"][0]["replicas"] = 3
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        CronFederatedHPA.model_validate(doc)


def test_wrong_kind_is_refused() -> None:
    doc = _wire(FULL_FHPA)
    doc["kind"] = "CronFederatedHPA"
    with pytest.raises(ValidationError):
        FederatedHPA.model_validate(doc)


def test_metadata_extra_fields_are_kept() -> None:
    doc = _wire(FULL_FHPA)
    doc["metadata"]["ownerReferences"] = [{"kind": "X", "name": "y"}]
    model = FederatedHPA.model_validate(doc)
    dumped = model.to_json()["metadata"]
    assert dumped["managedFields"] == [{"manager": "kubectl", "operation": "Update"}]
    assert dumped["ownerReferences"] == [{"kind": "X", "name": "y"}]
    assert model.metadata.resource_version == "42" and model.metadata.generation == 3


def _spec(**fields: Any) -> FederatedHPASpec:
    return FederatedHPASpec.model_validate({"scaleTargetRef": TARGET, "maxReplicas": 10, **fields})


def _assigned(kind: str, **fields: Any) -> FederatedHPASpec:
    return _spec(federatedHPAAssignment={"federatedHPAAssignmentType": kind}, **fields)


def test_effective_min() -> None:
    assert _spec().effective_min == 1
    assert _spec(minReplicas=4).effective_min == 4
    assert _spec(minReplicas=0).effective_min == 0


def test_assignment_type_and_preferences() -> None:
    assert _spec().assignment_type == "Duplicated"
    assert _spec(federatedHPAAssignment={}).assignment_type == "Duplicated"
    assert _assigned("Aggregated").assignment_type == "Aggregated"
    assert _spec().preferences == []
    assert _assigned("Aggregated").preferences == []
    prefs = [{"targetCluster": {"clusterNames": ["a"]}, "priority": 3}]
    spec = _spec(
        federatedHPAAssignment={
            "federatedHPAAssignmentType": "Prioritized",
            "clusterAutoscalingPreference": prefs,
        }
    )
    assert [p.priority for p in spec.preferences] == [3]
    spec.preferences.clear()  # a copy: the caller cannot change the spec through it
    assert len(spec.preferences) == 1


def test_effective_scale_assist() -> None:
    assert _spec().effective_scale_assist is True
    assert _spec(scaleAssist=True).effective_scale_assist is True
    assert _spec(scaleAssist=False).effective_scale_assist is False


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, False),
        ({"scalingToZero": False}, False),
        ({"scalingToZero": True}, True),
        ({"scalingToZero": True, "scaleAssist": True}, True),
        ({"scalingToZero": True, "scaleAssist": False}, False),
    ],
)
@pytest.mark.parametrize("kind", ["StaticWeighted", "DynamicWeighted", "Aggregated", "Prioritized"])
def test_effective_scaling_to_zero(kind: str, fields: dict[str, Any], expected: bool) -> None:
    assert _assigned(kind, **fields).effective_scaling_to_zero is expected


def test_scaling_to_zero_has_no_effect_under_duplicated() -> None:
    assert _spec(scalingToZero=True).effective_scaling_to_zero is False
    assert _assigned("Duplicated", scalingToZero=True, scaleAssist=True).effective_scaling_to_zero is False


def test_effective_delay_seconds() -> None:
    assert _spec().effective_delay_seconds == 0
    assert _spec(autoscaleMultiClusterDelay=45).effective_delay_seconds == 45


def test_cron_rule_history_limits_default_to_three() -> None:
    doc = copy.deepcopy(FULL_CRON)
    cron = CronFederatedHPA.model_validate(doc)
    rule = cron.spec.rules[0]
    assert (rule.effective_successful_history_limit, rule.effective_failed_history_limit) == (2, 1)
    bare = rule.model_copy(update={"successful_history_limit": None, "failed_history_limit": None})
    assert (bare.effective_successful_history_limit, bare.effective_failed_history_limit) == (3, 3)
    zero = rule.model_copy(update={"successful_history_limit": 0, "failed_history_limit": 0})
    assert (zero.effective_successful_history_limit, zero.effective_failed_history_limit) == (0, 0)
