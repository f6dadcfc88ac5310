"""The generated CRDs on a real Kubernetes API server (apiextensions-apiserver).

Every example is created through the official client and comes back with exactly the defaults that
fhpa_api.defaulting gives it (the schema's defaults mirror the webhook's); objects the schema must
refuse get HTTP 422 naming the field. No webhook is registered here: this is the schema alone.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from fhpa_api.defaulting import apply_defaults
from fhpa_api.documents import load_documents
from fhpa_api.models import KINDS, FederatedHPAStatus
from fhpa_api.validation import validate

pytestmark = pytest.mark.realapi

ROOT = Path(__file__).resolve().parents[3]
CRDS = sorted((ROOT / "manifests" / "crds").glob("autoscaling.karmada.io_*.yaml"))
EXAMPLES = [doc for _, doc in load_documents(ROOT / "examples")]
GROUP, VERSION = "autoscaling.karmada.io", "v1alpha1"
PLURALS = {"FederatedHPA": "federatedhpas", "CronFederatedHPA": "cronfederatedhpas"}


@pytest.fixture(scope="module")
def custom(realapi: Any) -> Iterator[CustomObjectsApi]:
    realapi.install_crds(CRDS)
    client: ApiClient = realapi.api_client()
    yield CustomObjectsApi(client)


def create(custom: CustomObjectsApi, namespace: str, doc: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    body = copy.deepcopy(doc)
    body["metadata"] = {"name": body["metadata"]["name"], "namespace": namespace}
    result = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURALS[body["kind"]], body, **kwargs
    )
    assert isinstance(result, dict)
    return result


def refused(custom: CustomObjectsApi, namespace: str, doc: dict[str, Any], **kwargs: Any) -> ApiException:
    with pytest.raises(ApiException) as info:
        create(custom, namespace, doc, **kwargs)
    return info.value


def minimal_fhpa(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "FederatedHPA",
        "metadata": {"name": f"f-{uuid.uuid4().hex[:8]}"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            **spec,
        },
    }


def minimal_cron(*rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CronFederatedHPA",
        "metadata": {"name": f"c-{uuid.uuid4().hex[:8]}"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "rules": list(rules) or [{"name": "a", "schedule": "@daily", "targetReplicas": 1}],
        },
    }


@pytest.mark.parametrize("doc", EXAMPLES, ids=[f"{d['kind']}/{d['metadata']['name']}" for d in EXAMPLES])
def test_every_example_is_created_with_the_same_defaults_as_the_webhook(
    custom: CustomObjectsApi, realapi_namespace: str, doc: dict[str, Any]
) -> None:
    created = create(custom, realapi_namespace, doc)
    assert created["spec"] == apply_defaults(doc)["spec"]
    assert created["metadata"]["generation"] == 1
    KINDS[doc["kind"]].model_validate(created)  # what the server stores parses back into the model


@pytest.mark.parametrize(
    "doc",
    [
        minimal_fhpa(),
        minimal_fhpa(behavior={}),
        minimal_fhpa(
            behavior={"scaleUp": {"stabilizationWindowSeconds": 30}, "scaleDown": {"selectPolicy": "Min"}}
        ),
        minimal_fhpa(
            federatedHPAAssignment={
                "clusterAutoscalingPreference": [{"targetCluster": {"clusterNames": ["a"]}, "priority": 1}]
            }
        ),
        minimal_fhpa(minReplicas=None, scaleAssist=None, behavior=None, clusterAffinity=None),
        minimal_cron(),
        minimal_cron({"name": "a", "schedule": "@daily", "targetReplicas": 0, "suspend": None}),
    ],
    ids=[
        "fhpa-minimal",
        "fhpa-empty-behavior",
        "fhpa-partial-behavior",
        "fhpa-assignment-without-type",
        "fhpa-nulls",
        "cron-minimal",
        "cron-null",
    ],
)
def test_schema_defaults_mirror_defaulting(
    custom: CustomObjectsApi, realapi_namespace: str, doc: dict[str, Any]
) -> None:
    """An explicit null is pruned by the server (fields are not nullable) and then defaulted, exactly as
    defaulting treats null as unset."""
    created = create(custom, realapi_namespace, doc)
    assert created["spec"] == without_nulls(apply_defaults(doc)["spec"])


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def test_status_subresource_keeps_every_model_status_field(
    custom: CustomObjectsApi, realapi_namespace: str
) -> None:
    created = create(custom, realapi_namespace, minimal_fhpa())
    status = FederatedHPAStatus.model_validate(
        {
            "observedGeneration": 1,
            "currentReplicas": 4,
            "desiredReplicas": 5,
            "conditions": [
                {
                    "type": "ScalingActive",
                    "status": "True",
                    "reason": "Assigned",
                    "message": "ok",
                    "lastTransitionTime": "2026-11-21T08:00:00Z",
                }
            ],
            "clusters": [
                {
                    "name": "member1",
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "currentReplicas": 2,
                    "readyReplicas": 2,
                    "pendingReplicas": 0,
                    "desiredReplicas": 2,
                    "lastScaleTime": "2026-11-21T08:00:00Z",
                    "state": "Active",
                    "pendingSince": "2026-11-21T08:00:00Z",
                    "pinnedMinReplicas": 2,
                }
            ],
            "assignmentKey": "k1",
            "lastAssignmentTime": "2026-11-21T08:00:00Z",
        }
    ).to_json()
    name = created["metadata"]["name"]
    patched = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, realapi_namespace, "federatedhpas", name, {"status": status}
    )
    assert isinstance(patched, dict)
    assert patched["status"] == status
    assert patched["metadata"]["generation"] == 1, "a status write does not bump generation"


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "").get("message", exc.body))
    except (TypeError, ValueError):
        return str(exc.body)


BAD_FHPA = [
    (minimal_fhpa(maxReplicas=0), "spec.maxReplicas"),
    (minimal_fhpa(minReplicas=0), "spec.minReplicas"),
    (minimal_fhpa(minReplicas=6), "spec.maxReplicas"),
    (
        minimal_fhpa(federatedHPAAssignment={"federatedHPAAssignmentType": "RoundRobin"}),
        "spec.federatedHPAAssignment.federatedHPAAssignmentType",
    ),
    (minimal_fhpa(metrics=[{"type": "Custom"}]), "spec.metrics[0].type"),
    (
        minimal_fhpa(
            behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}
        ),
        "spec.behavior.scaleUp.policies[0].periodSeconds",
    ),
    (minimal_fhpa(behavior={"scaleDown": {"policies": []}}), "spec.behavior.scaleDown.policies"),
    (minimal_fhpa(autoscaleMultiClusterDelay=86401), "spec.autoscaleMultiClusterDelay"),
    (
        minimal_fhpa(
            metrics=[
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": 0.5}},
                }
            ]
        ),
        "spec.metrics[0].resource.target.averageValue",
    ),
    (minimal_fhpa(scaleTargetRef={"kind": "Deployment"}), "spec.scaleTargetRef.name"),
]
BAD_CRON = [
    (minimal_cron({"name": "x" * 33, "schedule": "@daily", "targetReplicas": 1}), "spec.rules[0].name"),
    (minimal_cron({"name": "a", "schedule": "@daily", "targetReplicas": -1}), "spec.rules[0].targetReplicas"),
    (
        minimal_cron({"name": "a", "schedule": "@daily", "targetReplicas": 2**31}),
        "spec.rules[0].targetReplicas",
    ),
    (
        minimal_cron({"name": "a", "schedule": "@daily", "targetReplicas": 1, "successfulHistoryLimit": 0}),
        "spec.rules[0].successfulHistoryLimit",
    ),
    (
        minimal_cron({"name": "a", "schedule": "@daily", "targetReplicas": 1, "failedHistoryLimit": 33}),
        "spec.rules[0].failedHistoryLimit",
    ),
    (
        minimal_cron(
            {"name": "a", "schedule": "@daily", "targetReplicas": 1},
            {"name": "a", "schedule": "@hourly", "targetReplicas": 2},
        ),
        "spec.rules[1]",
    ),
]


@pytest.mark.parametrize(("doc", "field"), BAD_FHPA + BAD_CRON, ids=[f for _, f in BAD_FHPA + BAD_CRON])
def test_invalid_objects_get_422_naming_the_field(
    custom: CustomObjectsApi, realapi_namespace: str, doc: dict[str, Any], field: str
) -> None:
    exc = refused(custom, realapi_namespace, doc)
    assert exc.status == 422, exc.body
    assert field in _message(exc), _message(exc)


def test_fhpa_validate_refuses_as_the_server_does_an_ignored_negative_target_replicas(
    custom: CustomObjectsApi, realapi_namespace: str
) -> None:
    doc = minimal_cron({"name": "a", "schedule": "@daily", "targetMinReplicas": 2, "targetReplicas": -1})
    doc["spec"]["scaleTargetRef"] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "FederatedHPA",
        "name": "web",
    }
    assert not validate(apply_defaults(doc)).ok
    exc = refused(custom, realapi_namespace, doc)
    assert exc.status == 422 and "spec.rules[0].targetReplicas" in _message(exc)


def test_kubectl_get_cronfhpa_shows_the_next_execution_and_the_last_result(
    realapi: Any, custom: CustomObjectsApi, realapi_namespace: str, tmp_path: Path
) -> None:
    doc = minimal_cron()
    name = doc["metadata"]["name"]
    create(custom, realapi_namespace, doc)
    status = {"status": {"nextExecutionTime": "2026-11-26T08:00:00Z", "lastResult": "Failed (a)"}}
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, realapi_namespace, "cronfederatedhpas", name, status
    )
    table = realapi.kubectl("get", "cronfhpa", name, "-n", realapi_namespace, cache_dir=tmp_path / "cache")
    assert table.returncode == 0, table.stderr
    header, row = table.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "REFERENCE-KIND", "REFERENCE-NAME", "NEXT", "LAST-RESULT", "AGE"]
    assert row.split()[:6] == [name, "Deployment", "web", "2026-11-26T08:00:00Z", "Failed", "(a)"]


def test_an_empty_rule_list_is_refused(custom: CustomObjectsApi, realapi_namespace: str) -> None:
    doc = minimal_cron()
    doc["spec"]["rules"] = []
    exc = refused(custom, realapi_namespace, doc)
    assert exc.status == 422
    assert "spec.rules" in _message(exc)


def test_unknown_fields_are_refused_under_strict_field_validation(
    custom: CustomObjectsApi, realapi_namespace: str
) -> None:
    exc = refused(custom, realapi_namespace, minimal_fhpa(maxReplica=3), field_validation="Strict")
    assert exc.status in (400, 422)
    assert "maxReplica" in _message(exc)


# --- consistency: whatever `fhpa validate` accepts, the API server accepts ------------------------------

PLAUSIBLE = st.sampled_from(
    [
        None,
        0,
        1,
        -1,
        3,
        33,
        3601,
        86401,
        2**31,
        0.5,
        "",
        "x",
        "500m",
        "Max",
        "In",
        True,
        [],
        {},
        ["a"],
        {"a": "b"},
    ]
)


def _node_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.extend(_node_paths(value, (*prefix, key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out.extend(_node_paths(value, (*prefix, index)))
    return out


@st.composite
def near_valid(draw: st.DrawFn) -> dict[str, Any]:
    """An example with one spec node replaced by a plausible wrong (or right) value."""
    doc = copy.deepcopy(draw(st.sampled_from(EXAMPLES)))
    spec_paths = [p for p in _node_paths(doc) if len(p) > 1 and p[0] == "spec"]
    path = draw(st.sampled_from(spec_paths))
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = draw(PLAUSIBLE)
    return doc


@pytest.fixture(scope="module")
def shared_namespace(realapi: Any) -> str:
    name = f"consistency-{uuid.uuid4().hex[:8]}"
    realapi.create_namespace(name)
    return name


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=near_valid())
def test_what_fhpa_validate_accepts_the_schema_accepts(
    custom: CustomObjectsApi, shared_namespace: str, doc: dict[str, Any]
) -> None:
    ours = validate(apply_defaults(doc))
    try:
        create(custom, shared_namespace, doc, dry_run="All")
    except ApiException as exc:
        assert not ours.ok, f"the server refused what fhpa validate accepts: {_message(exc)}"
