"""ClusterAffinity, assignment policy, preferences, delay and the scaleAssist/scalingToZero switches."""

from __future__ import annotations

from typing import Any

import pytest

from fhpa_api.validation import validate
from tests.support.api_builders import fhpa, message_at, paths


def assignment(policy: str, *prefs: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"federatedHPAAssignmentType": policy}
    if prefs:
        body["clusterAutoscalingPreference"] = list(prefs)
    return body


def pref(clusters: list[str], **fields: Any) -> dict[str, Any]:
    return {"targetCluster": {"clusterNames": clusters}, **fields}


GOOD_AFFINITY = [
    {"clusterNames": ["member1", "eu-west-1"], "exclude": ["member3"]},
    {"labelSelector": {"matchLabels": {"example.com/tier": "gold", "env": ""}}},
    {"labelSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
    {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}},
    {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu-west"]}]}},
    {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}},
]
BAD_AFFINITY = [
    ({"clusterNames": ["Member_1"]}, "spec.clusterAffinity.clusterNames[0]", "DNS-1123 label"),
    ({"exclude": ["ok", 3]}, "spec.clusterAffinity.exclude[1]", "a string"),
    (
        {"labelSelector": {"matchLabels": {"bad key!": "x"}}},
        "spec.clusterAffinity.labelSelector.matchLabels[bad key!]",
        "qualified name",
    ),
    (
        {"labelSelector": {"matchLabels": {"env": "not ok!"}}},
        "spec.clusterAffinity.labelSelector.matchLabels[env]",
        "label value",
    ),
    (
        {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Is", "values": ["x"]}]}},
        "spec.clusterAffinity.labelSelector.matchExpressions[0].operator",
        "In, NotIn, Exists, DoesNotExist",
    ),
    (
        {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "In"}]}},
        "spec.clusterAffinity.labelSelector.matchExpressions[0].values",
        "at least one value",
    ),
    (
        {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": []}]}},
        "spec.clusterAffinity.labelSelector.matchExpressions[0].values",
        "at least one value",
    ),
    (
        {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["a"]}]}},
        "spec.clusterAffinity.labelSelector.matchExpressions[0].values",
        "must be empty",
    ),
    (
        {"labelSelector": {"matchExpressions": [{"operator": "Exists"}]}},
        "spec.clusterAffinity.labelSelector.matchExpressions[0].key",
        "required",
    ),
    (
        {"fieldSelector": {"matchExpressions": [{"key": "country", "operator": "In", "values": ["fr"]}]}},
        "spec.clusterAffinity.fieldSelector.matchExpressions[0].key",
        "provider, region, zone",
    ),
    (
        {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1"]}]}},
        "spec.clusterAffinity.fieldSelector.matchExpressions[0].operator",
        "In, NotIn",
    ),
]


@pytest.mark.parametrize("affinity", GOOD_AFFINITY)
def test_cluster_affinity_accepted(affinity: dict[str, Any]) -> None:
    result = validate(fhpa(clusterAffinity=affinity))
    assert result.ok, result.errors


@pytest.mark.parametrize(("affinity", "where", "fragment"), BAD_AFFINITY)
def test_cluster_affinity_refused(affinity: dict[str, Any], where: str, fragment: str) -> None:
    assert fragment in message_at(validate(fhpa(clusterAffinity=affinity)), where)


def test_preference_target_clusters_are_checked_like_cluster_affinity() -> None:
    obj = fhpa(federatedHPAAssignment=assignment("StaticWeighted", pref(["UPPER"], staticWeight=1)))
    where = "spec.federatedHPAAssignment.clusterAutoscalingPreference[0].targetCluster.clusterNames[0]"
    assert "DNS-1123" in message_at(validate(obj), where)


@pytest.mark.parametrize(
    "body",
    [
        assignment("Duplicated"),
        assignment("DynamicWeighted"),
        assignment("Aggregated"),
        assignment("StaticWeighted", pref(["a"], staticWeight=0), pref(["b"], staticWeight=1)),
        assignment("Prioritized", pref(["a"], priority=2), pref(["b"])),
        assignment("Prioritized", pref(["a"], priority=-5)),
    ],
)
def test_assignment_accepted(body: dict[str, Any]) -> None:
    result = validate(fhpa(federatedHPAAssignment=body))
    assert result.ok, result.errors
    assert result.warnings == []


PREFS = "spec.federatedHPAAssignment.clusterAutoscalingPreference"


@pytest.mark.parametrize(
    ("body", "where", "fragment"),
    [
        (
            assignment("RoundRobin"),
            "spec.federatedHPAAssignment.federatedHPAAssignmentType",
            "StaticWeighted",
        ),
        (assignment("StaticWeighted"), PREFS, "staticWeight >= 1"),
        (assignment("StaticWeighted", pref(["a"], staticWeight=0)), PREFS, "staticWeight >= 1"),
        (
            assignment("StaticWeighted", pref(["a"], staticWeight=-1), pref(["b"], staticWeight=1)),
            f"{PREFS}[0].staticWeight",
            ">= 0",
        ),
        (assignment("Prioritized"), PREFS, "with a priority"),
        (assignment("Prioritized", pref(["a"], staticWeight=3)), PREFS, "with a priority"),
        (assignment("Prioritized", {"priority": 1}), f"{PREFS}[0].targetCluster", "required"),
    ],
)
def test_assignment_refused(body: dict[str, Any], where: str, fragment: str) -> None:
    assert fragment in message_at(validate(fhpa(federatedHPAAssignment=body)), where)


@pytest.mark.parametrize("policy", ["Duplicated", "DynamicWeighted", "Aggregated"])
def test_preferences_on_policies_that_ignore_them_are_a_warning(policy: str) -> None:
    result = validate(fhpa(federatedHPAAssignment=assignment(policy, pref(["a"], staticWeight=2))))
    assert result.ok
    assert any(w.startswith(f"{PREFS}:") and "ignored" in w for w in result.warnings)


def test_the_other_policys_field_is_a_warning() -> None:
    result = validate(
        fhpa(federatedHPAAssignment=assignment("Prioritized", pref(["a"], priority=1, staticWeight=1)))
    )
    assert result.ok
    assert any(w.startswith(f"{PREFS}[0].staticWeight:") for w in result.warnings)


@pytest.mark.parametrize("delay", [0, 300, 86400])
def test_delay_accepted(delay: int) -> None:
    assert validate(fhpa(autoscaleMultiClusterDelay=delay)).ok


@pytest.mark.parametrize("delay", [-1, 86401, "60s"])
def test_delay_refused(delay: Any) -> None:
    assert "spec.autoscaleMultiClusterDelay" in paths(validate(fhpa(autoscaleMultiClusterDelay=delay)))


def test_switches_must_be_booleans() -> None:
    assert "true or false" in message_at(validate(fhpa(scaleAssist="yes")), "spec.scaleAssist")


def test_scaling_to_zero_with_a_weighted_policy_is_silent() -> None:
    result = validate(fhpa(scalingToZero=True, federatedHPAAssignment=assignment("DynamicWeighted")))
    assert result.ok
    assert result.warnings == []


def test_scaling_to_zero_with_duplicated_is_a_warning() -> None:
    result = validate(fhpa(scalingToZero=True))
    assert result.ok
    assert any(w.startswith("spec.scalingToZero:") and "Duplicated" in w for w in result.warnings)


def test_scaling_to_zero_without_scale_assist_is_a_warning() -> None:
    result = validate(
        fhpa(scalingToZero=True, scaleAssist=False, federatedHPAAssignment=assignment("Aggregated"))
    )
    assert result.ok
    assert any(w.startswith("spec.scalingToZero:") and "scaleAssist" in w for w in result.warnings)
