"""The member HPA a FederatedHPA becomes: its name, ownership labels, spec body and template digest."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.planning.member_hpa import (
    DEFAULT_METRICS,
    FIELD_MANAGER,
    LABEL_MANAGED_BY,
    LABEL_OWNER_NAME,
    LABEL_OWNER_NAMESPACE,
    LABEL_OWNER_UID,
    hpa_name,
    owner_labels,
    render_spec,
    template,
    template_digest,
)
from fhpa_api.models import FederatedHPA

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
MEMORY: dict[str, Any] = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}},
}
PODS: dict[str, Any] = {
    "type": "Pods",
    "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "100"}},
}
BEHAVIOR: dict[str, Any] = {
    "scaleDown": {
        "stabilizationWindowSeconds": 300,
        "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}],
    }
}


def make(spec: dict[str, Any] | None = None, **meta: Any) -> FederatedHPA:
    body: dict[str, Any] = {"scaleTargetRef": TARGET, "minReplicas": 2, "maxReplicas": 10}
    body.update(spec or {})
    metadata = {"name": "web", "namespace": "shop", "uid": "uid-1", **meta}
    return FederatedHPA.model_validate({"metadata": metadata, "spec": body})


def test_name_is_the_federated_hpas_name() -> None:
    assert hpa_name(make()) == "web"
    assert hpa_name(make(name="checkout")) == "checkout"


def test_owner_labels_identify_the_federated_hpa() -> None:
    assert owner_labels(make()) == {
        LABEL_MANAGED_BY: FIELD_MANAGER,
        LABEL_OWNER_NAMESPACE: "shop",
        LABEL_OWNER_NAME: "web",
        LABEL_OWNER_UID: "uid-1",
    }
    assert FIELD_MANAGER == "federated-hpa"
    assert owner_labels(make(uid="uid-2"))[LABEL_OWNER_UID] == "uid-2"


def test_owner_labels_of_an_object_without_uid_are_still_strings() -> None:
    labels = owner_labels(FederatedHPA.model_validate({"spec": {"scaleTargetRef": TARGET, "maxReplicas": 1}}))
    assert all(isinstance(v, str) for v in labels.values())
    assert labels[LABEL_OWNER_UID] == ""


@pytest.mark.parametrize("metrics", [None, []], ids=["unset", "empty"])
def test_default_metrics_when_none_are_given(metrics: list[Any] | None) -> None:
    spec: dict[str, Any] = {} if metrics is None else {"metrics": metrics}
    body = template(make(spec))
    assert body["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    assert body["metrics"] == DEFAULT_METRICS


def test_default_metrics_are_not_shared_with_the_caller() -> None:
    body = template(make())
    body["metrics"][0]["resource"]["target"]["averageUtilization"] = 1
    assert template(make())["metrics"][0]["resource"]["target"]["averageUtilization"] == 80


def test_given_metrics_and_behavior_are_copied_in_camel_case() -> None:
    body = template(make({"metrics": [MEMORY, PODS], "behavior": BEHAVIOR}))
    assert body == {"scaleTargetRef": TARGET, "metrics": [MEMORY, PODS], "behavior": BEHAVIOR}


def test_no_behavior_key_without_behavior() -> None:
    assert "behavior" not in template(make())


def test_render_spec_adds_the_clusters_bounds() -> None:
    fhpa = make({"metrics": [MEMORY], "behavior": BEHAVIOR})
    spec = render_spec(fhpa, 3, 7)
    assert spec == {
        "scaleTargetRef": TARGET,
        "metrics": [MEMORY],
        "behavior": BEHAVIOR,
        "minReplicas": 3,
        "maxReplicas": 7,
    }
    # the bounds are the cluster's, not the FederatedHPA's
    assert render_spec(fhpa, 0, 0)["minReplicas"] == 0
    assert render_spec(make(), 1, 4)["metrics"] == DEFAULT_METRICS


def test_digest_is_short_hex_and_ignores_bounds_and_metadata() -> None:
    digest = template_digest(make())
    assert len(digest) == 16 and int(digest, 16) >= 0
    assert template_digest(make({"minReplicas": 1, "maxReplicas": 50})) == digest
    assert template_digest(make(name="other", uid="uid-9", labels={"a": "b"})) == digest


def test_digest_is_stable_across_key_order() -> None:
    forward = {"metrics": [MEMORY], "behavior": BEHAVIOR}
    reordered_memory = {
        "resource": {"target": {"averageValue": "512Mi", "type": "AverageValue"}, "name": "memory"},
        "type": "Resource",
    }
    reordered_behavior = {
        "scaleDown": {
            "policies": [{"periodSeconds": 60, "value": 10, "type": "Percent"}],
            "stabilizationWindowSeconds": 300,
        }
    }
    backward = {"behavior": reordered_behavior, "metrics": [reordered_memory]}
    target = dict(reversed(list(TARGET.items())))
    assert template_digest(make(forward)) == template_digest(make({**backward, "scaleTargetRef": target}))


def test_unset_metrics_and_explicit_default_metrics_digest_alike() -> None:
    assert template_digest(make()) == template_digest(make({"metrics": []}))
    assert template_digest(make()) == template_digest(make({"metrics": copy.deepcopy(DEFAULT_METRICS)}))


@pytest.mark.parametrize(
    "change",
    [
        {"metrics": [MEMORY]},
        {"metrics": [MEMORY, PODS]},
        {"metrics": [PODS, MEMORY]},  # order of metrics is meaningful to the HPA
        {"behavior": BEHAVIOR},
        {"behavior": {"scaleUp": {"stabilizationWindowSeconds": 0}}},
        {"scaleTargetRef": {**TARGET, "name": "api"}},
        {"scaleTargetRef": {**TARGET, "kind": "StatefulSet"}},
    ],
)
def test_digest_changes_when_the_template_changes(change: dict[str, Any]) -> None:
    base = make({"metrics": [MEMORY, PODS]}) if change.get("metrics") == [PODS, MEMORY] else make()
    assert template_digest(make(change)) != template_digest(base)


def test_digest_changes_with_a_metric_target_value() -> None:
    other = copy.deepcopy(MEMORY)
    other["resource"]["target"]["averageValue"] = "1Gi"
    assert template_digest(make({"metrics": [MEMORY]})) != template_digest(make({"metrics": [other]}))


def test_digest_is_stable_across_label_selector_key_order() -> None:
    """matchLabels is a free-form map: the model keeps its order, so only sorting makes the digest stable."""

    def external(labels: dict[str, str]) -> dict[str, Any]:
        metric = {"name": "queue", "selector": {"matchLabels": labels}}
        return {
            "type": "External",
            "external": {"metric": metric, "target": {"type": "Value", "value": "30"}},
        }

    first = make({"metrics": [external({"queue": "orders", "env": "prod"})]})
    second = make({"metrics": [external({"env": "prod", "queue": "orders"})]})
    assert template_digest(first) == template_digest(second)
    assert template_digest(first) != template_digest(
        make({"metrics": [external({"env": "dev", "queue": "orders"})]})
    )
