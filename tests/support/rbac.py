"""Kubernetes RBAC authorization over plain objects, for the test fronts that stand in for an API server.

The realapi tier's API server admits its admin client certificate only, so the rights a chart grants a
ServiceAccount are checked here, with the rules of the RBAC authorizer: a request's attributes (verb,
API group, resource/subresource, namespace, name) are allowed when a binding that names the
ServiceAccount refers to a role with a rule covering them. ClusterRoleBindings apply everywhere,
RoleBindings in their own namespace; ``resourceNames`` only ever match requests that carry a name.
Discovery and other non-resource paths are allowed, as the default ``system:discovery`` binding does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]
RESOURCE_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+)(?=/))?/(?P<resource>[^/]+)(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True)
class Attributes:
    verb: str
    group: str
    resource: str  # "resource" or "resource/subresource"
    namespace: str
    name: str


def attributes(method: str, path: str, query: dict[str, list[str]]) -> Attributes | None:
    """What the RBAC authorizer checks for a request; None for a non-resource (discovery) path."""
    found = RESOURCE_PATH.match(path)
    if found is None:
        return None
    if found["core"] is None and found["group"] is None:
        return None
    name = found["name"] or ""
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch", [""])[-1] in ("true", "1") else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = VERBS.get(method, method.lower())
    resource = found["resource"] + (f"/{found['sub']}" if found["sub"] else "")
    return Attributes(verb, found["group"] or "", resource, found["ns"] or "", name)


def _covers(rule: JSON, want: Attributes) -> bool:
    def has(field: str, value: str) -> bool:
        listed = rule.get(field) or []
        return "*" in listed or value in listed

    if not (has("verbs", want.verb) and has("apiGroups", want.group) and has("resources", want.resource)):
        return False
    names = rule.get("resourceNames") or []
    return not names or want.name in names


def _names_account(binding: JSON, namespace: str, account: str) -> bool:
    return any(
        s.get("kind") == "ServiceAccount"
        and s.get("name") == account
        and s.get("namespace", binding["metadata"].get("namespace")) == namespace
        for s in binding.get("subjects") or []
    )


def allowed(objects: Iterable[JSON], namespace: str, account: str, want: Attributes) -> bool:
    """Whether the ServiceAccount ``namespace/account`` may do ``want`` under the RBAC ``objects``."""
    objects = list(objects)
    roles = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}
    for binding in objects:
        kind = binding["kind"]
        if kind not in ("RoleBinding", "ClusterRoleBinding") or not _names_account(
            binding, namespace, account
        ):
            continue
        where = binding["metadata"].get("namespace", "") if kind == "RoleBinding" else ""
        if where and where != want.namespace:
            continue
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], where if ref["kind"] == "Role" else "", ref["name"]))
        if role is not None and any(_covers(rule, want) for rule in role.get("rules") or []):
            return True
    return False
