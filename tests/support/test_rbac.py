"""The RBAC authorizer of the install tests' front (tests/support/rbac.py) grants what Kubernetes grants."""

from __future__ import annotations

from typing import Any

from tests.support.rbac import Attributes, allowed, attributes

JSON = dict[str, Any]


def binding(kind: str, role_kind: str, role: str, namespace: str = "") -> JSON:
    meta = {"name": role, **({"namespace": namespace} if namespace else {})}
    return {
        "kind": kind,
        "metadata": meta,
        "roleRef": {"kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "system"}],
    }


def role(kind: str, name: str, rules: list[JSON], namespace: str = "") -> JSON:
    return {
        "kind": kind,
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        "rules": rules,
    }


def test_request_attributes_are_read_from_the_path_as_the_api_server_reads_them() -> None:
    assert attributes("GET", "/api/v1/namespaces/ns/secrets", {"watch": ["true"]}) == Attributes(
        "watch", "", "secrets", "ns", ""
    )
    assert attributes("GET", "/apis/autoscaling.karmada.io/v1alpha1/federatedhpas", {}) == Attributes(
        "list", "autoscaling.karmada.io", "federatedhpas", "", ""
    )
    assert attributes("PUT", "/apis/g/v1/namespaces/ns/federatedhpas/web/status", {}) == Attributes(
        "update", "g", "federatedhpas/status", "ns", "web"
    )
    assert attributes("GET", "/api/v1/namespaces/ns", {}) == Attributes("get", "", "namespaces", "", "ns")
    assert attributes("GET", "/apis", {}) is None  # discovery


def test_a_role_grants_in_its_namespace_and_a_cluster_role_everywhere() -> None:
    objects = [
        role(
            "Role",
            "leases",
            [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]}],
            "system",
        ),
        binding("RoleBinding", "Role", "leases", "system"),
        role("ClusterRole", "events", [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]),
        binding("ClusterRoleBinding", "ClusterRole", "events"),
    ]
    lease = Attributes("get", "coordination.k8s.io", "leases", "system", "x")
    assert allowed(objects, "system", "sa", lease)
    assert not allowed(
        objects, "system", "sa", Attributes("get", "coordination.k8s.io", "leases", "other", "x")
    )
    assert not allowed(objects, "system", "other-sa", lease)
    assert allowed(objects, "system", "sa", Attributes("create", "", "events", "anywhere", ""))
    assert not allowed(objects, "system", "sa", Attributes("patch", "", "events", "anywhere", "e"))


def test_resource_names_limit_to_named_requests_and_a_cluster_role_bound_in_a_namespace_stays_there() -> None:
    rule = {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["tls"], "verbs": ["get", "create"]}
    objects = [role("ClusterRole", "named", [rule]), binding("RoleBinding", "ClusterRole", "named", "system")]
    assert allowed(objects, "system", "sa", Attributes("get", "", "secrets", "system", "tls"))
    assert not allowed(objects, "system", "sa", Attributes("get", "", "secrets", "system", "other"))
    assert not allowed(objects, "system", "sa", Attributes("create", "", "secrets", "system", ""))
    assert not allowed(objects, "system", "sa", Attributes("get", "", "secrets", "elsewhere", "tls"))
