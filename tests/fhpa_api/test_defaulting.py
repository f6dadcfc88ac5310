"""Defaulting: the JSON Patch, the autoscaling/v2 behavior merge, idempotence, status untouched."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fhpa_api.defaulting import apply_defaults, default_patch

API = "autoscaling.karmada.io/v1alpha1"


def raw_fhpa(**spec: Any) -> dict[str, Any]:
    body = {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10, **spec}
    return {
        "apiVersion": API,
        "kind": "FederatedHPA",
        "metadata": {"name": "w", "namespace": "n"},
        "spec": body,
    }


def raw_cron(*rules: dict[str, Any]) -> dict[str, Any]:
    spec = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "rules": list(rules),
    }
    return {
        "apiVersion": API,
        "kind": "CronFederatedHPA",
        "metadata": {"name": "c", "namespace": "n"},
        "spec": spec,
    }


CPU80 = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
]


def test_fhpa_defaults() -> None:
    spec = apply_defaults(raw_fhpa())["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == CPU80
    assert spec["federatedHPAAssignment"] == {"federatedHPAAssignmentType": "Duplicated"}
    assert spec["scaleAssist"] is True
    assert spec["scalingToZero"] is False
    assert spec["autoscaleMultiClusterDelay"] == 0
    assert "behavior" not in spec, "behavior is defaulted only when present"


def test_patch_is_rfc6902_add_operations_on_spec_paths() -> None:
    ops = default_patch(raw_fhpa())
    assert ops
    assert all(op["op"] == "add" and op["path"].startswith("/spec/") for op in ops)
    assert {"op": "add", "path": "/spec/minReplicas", "value": 1} in ops


def test_user_values_are_kept() -> None:
    spec = apply_defaults(
        raw_fhpa(minReplicas=3, scaleAssist=False, scalingToZero=True, autoscaleMultiClusterDelay=30)
    )["spec"]
    assert (
        spec["minReplicas"],
        spec["scaleAssist"],
        spec["scalingToZero"],
        spec["autoscaleMultiClusterDelay"],
    ) == (
        3,
        False,
        True,
        30,
    )


def test_empty_metrics_become_cpu_80() -> None:
    assert apply_defaults(raw_fhpa(metrics=[]))["spec"]["metrics"] == CPU80


def test_null_counts_as_unset() -> None:
    spec = apply_defaults(raw_fhpa(minReplicas=None, metrics=None))["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == CPU80


def test_assignment_type_is_filled_inside_a_given_assignment() -> None:
    prefs = [{"targetCluster": {"clusterNames": ["a"]}, "priority": 1}]
    spec = apply_defaults(raw_fhpa(federatedHPAAssignment={"clusterAutoscalingPreference": prefs}))["spec"]
    assert spec["federatedHPAAssignment"] == {
        "federatedHPAAssignmentType": "Duplicated",
        "clusterAutoscalingPreference": prefs,
    }


def test_empty_behavior_gets_both_default_rule_sets() -> None:
    behavior = apply_defaults(raw_fhpa(behavior={}))["spec"]["behavior"]
    assert behavior == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }


def test_user_fields_override_default_fields_and_user_policies_replace_defaults() -> None:
    mine = [{"type": "Pods", "value": 1, "periodSeconds": 60}]
    behavior = apply_defaults(
        raw_fhpa(
            behavior={
                "scaleUp": {"selectPolicy": "Min", "policies": mine},
                "scaleDown": {"stabilizationWindowSeconds": 120},
            }
        )
    )["spec"]["behavior"]
    assert behavior["scaleUp"] == {"selectPolicy": "Min", "policies": mine, "stabilizationWindowSeconds": 0}
    assert behavior["scaleDown"] == {
        "stabilizationWindowSeconds": 120,
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }


def test_explicitly_empty_policies_stay_empty_so_validation_refuses_them() -> None:
    behavior = apply_defaults(raw_fhpa(behavior={"scaleDown": {"policies": []}}))["spec"]["behavior"]
    assert behavior["scaleDown"]["policies"] == []


def test_the_mutating_unit_test_of_the_reference() -> None:
    """minReplicas nil, maxReplicas 10, empty behavior -> min 1, scale-up defaults, scale-down
    selectPolicy Max with no stabilization window and Percent 100/15 (karmada.md §1c)."""
    spec = apply_defaults(raw_fhpa(behavior={}))["spec"]
    assert spec["minReplicas"] == 1
    assert "stabilizationWindowSeconds" not in spec["behavior"]["scaleDown"]


def test_cron_rule_defaults() -> None:
    rules = apply_defaults(
        raw_cron(
            {"name": "a", "schedule": "@daily", "targetReplicas": 1},
            {
                "name": "b",
                "schedule": "@daily",
                "targetReplicas": 1,
                "suspend": True,
                "failedHistoryLimit": 0,
            },
        )
    )["spec"]["rules"]
    assert rules[0] == {
        "name": "a",
        "schedule": "@daily",
        "targetReplicas": 1,
        "suspend": False,
        "successfulHistoryLimit": 3,
        "failedHistoryLimit": 3,
    }
    assert (rules[1]["suspend"], rules[1]["successfulHistoryLimit"], rules[1]["failedHistoryLimit"]) == (
        True,
        3,
        0,
    )


def test_cron_patch_paths_index_the_rule() -> None:
    ops = default_patch(
        raw_cron(
            {"name": "a", "schedule": "@daily", "suspend": False, "successfulHistoryLimit": 3},
            {"name": "b", "schedule": "@daily", "failedHistoryLimit": 1},
        )
    )
    assert sorted(op["path"] for op in ops) == [
        "/spec/rules/0/failedHistoryLimit",
        "/spec/rules/1/successfulHistoryLimit",
        "/spec/rules/1/suspend",
    ]


def test_status_is_never_touched_and_the_input_is_not_modified() -> None:
    obj = raw_fhpa(behavior={})
    obj["status"] = {"currentReplicas": 3, "clusters": [{"name": "a"}]}
    before = copy.deepcopy(obj)
    defaulted = apply_defaults(obj)
    assert obj == before
    assert defaulted["status"] == before["status"]
    assert not [op for op in default_patch(obj) if op["path"].startswith("/status")]


def test_other_kinds_and_malformed_objects_get_no_patch() -> None:
    assert default_patch({"kind": "Deployment", "spec": {}}) == []
    assert default_patch(raw_fhpa() | {"spec": "x"}) == []
    assert default_patch([]) == []  # type: ignore[arg-type]
    assert default_patch(raw_cron() | {"spec": {"rules": "x"}}) == []


def test_wrongly_typed_fields_are_left_for_validation() -> None:
    spec = apply_defaults(raw_fhpa(minReplicas="2", behavior={"scaleUp": "fast"}))["spec"]
    assert spec["minReplicas"] == "2"
    assert spec["behavior"]["scaleUp"] == "fast"


def test_defaulting_a_defaulted_object_yields_no_operations() -> None:
    for obj in (raw_fhpa(behavior={"scaleUp": {}}), raw_cron({"name": "a", "schedule": "@daily"})):
        assert default_patch(apply_defaults(obj)) == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)
SPEC_KEYS = st.sampled_from(
    [
        "minReplicas",
        "metrics",
        "behavior",
        "federatedHPAAssignment",
        "scaleAssist",
        "scalingToZero",
        "autoscaleMultiClusterDelay",
        "rules",
        "scaleUp",
        "scaleDown",
    ]
)
spec_like = st.dictionaries(
    SPEC_KEYS, json_values | st.dictionaries(SPEC_KEYS, json_values, max_size=3), max_size=6
)


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["FederatedHPA", "CronFederatedHPA"]), spec=spec_like)
def test_defaulting_is_idempotent_on_arbitrary_specs(kind: str, spec: dict[str, Any]) -> None:
    obj = {"apiVersion": API, "kind": kind, "spec": spec}
    once = apply_defaults(obj)
    assert default_patch(once) == []
    assert apply_defaults(once) == once


def test_a_cron_object_with_more_rules_than_allowed_gets_no_per_rule_patch() -> None:
    """Validation refuses it; the patch must not grow with the request (found by the webhook fuzz test:
    a body of 14,502 rules made a 4 MB answer)."""
    from fhpa_api.limits import RULES_MAX_ITEMS

    def cron(n: int) -> dict:
        return {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "CronFederatedHPA",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"rules": [{"name": f"r{i}"} for i in range(n)]},
        }

    assert len(default_patch(cron(RULES_MAX_ITEMS))) == 3 * RULES_MAX_ITEMS
    assert default_patch(cron(RULES_MAX_ITEMS + 1)) == []
