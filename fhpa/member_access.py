"""What `fhpa cluster join` creates, as plain objects: the member side read from ``manifests/member``, the
management side in the format ``controller/kube/registry.py`` reads. Pure: no API calls here.

One source for the member's access rules: the objects come from the manifest files themselves (the same
files ``kubectl apply -k manifests/member`` applies and ``tests/manifests/test_member_rbac.py``
checks against the calls the controller makes), never from a copy in code. A change of the manifests
changes what `join` grants, with nothing to keep in step.

- Cluster-wide (the default): the resources ``manifests/member/kustomization.yaml`` lists, with its
  ``namespace`` set on the namespaced ones.
- ``--namespaces a,b``: ``namespace.yaml`` and ``serviceaccount.yaml`` as above, then from
  ``role-namespaced.yaml`` its Role and RoleBinding once per namespace (the file's example namespace
  replaced) and its cluster-scoped documents (the probe and capacity ClusterRoles) as they are.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controller.kube.capacity_signals import ANNOTATION_ELASTIC_PODS
from controller.kube.registry import (
    ANNOTATION_PROVIDER,
    ANNOTATION_REGION,
    ANNOTATION_ZONE,
    KUBECONFIG_KEY,
    MEMBER_LABEL,
)

Obj = dict[str, Any]

MANIFEST_DIR = Path(__file__).resolve().parents[1] / "manifests" / "member"
"""The repository's manifests/member, beside the package in a checkout (an editable install)."""

ANNOTATION_JOINED_NAMESPACES = "autoscaling.karmada.io/joined-namespaces"
"""On the management Secret: the member namespaces a namespace-scoped join granted (for `unjoin`)."""
ANNOTATION_JOINED_BY = "autoscaling.karmada.io/joined-by"
JOINED_BY = "fhpa cluster join"
TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")

# kind -> (API path prefix, namespaced)
_PATHS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Secret": ("/api/v1", "secrets", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
}
_NAMESPACED_TEMPLATE_KINDS = ("Role", "RoleBinding")


class JoinError(ValueError):
    """The request cannot be carried out as given; the message says what to change."""


@dataclass(frozen=True)
class MemberAccess:
    """The member-side objects in apply order, and where the token will be."""

    objects: list[Obj]
    service_account: tuple[str, str]  # (namespace, name)
    token_secret: tuple[str, str]
    namespaces: tuple[str, ...] | None  # None: cluster-wide


# --- reading the manifests --------------------------------------------------------------------------


def load_documents(path: Path) -> list[Obj]:
    """The YAML documents of one manifest file (empty documents dropped)."""
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if d]
    except OSError as exc:
        raise JoinError(
            f"cannot read {path} ({exc.strerror or exc}); pass --member-manifests with the repository's "
            "manifests/member directory"
        ) from None


def _kustomization(manifest_dir: Path) -> tuple[str, list[str]]:
    docs = load_documents(manifest_dir / "kustomization.yaml")
    if not docs:
        raise JoinError(f"{manifest_dir / 'kustomization.yaml'} is empty")
    kustomization = docs[0]
    return str(kustomization.get("namespace") or ""), [str(r) for r in kustomization.get("resources") or []]


def _with_namespace(obj: Obj, namespace: str) -> Obj:
    kind = obj.get("kind", "")
    if kind in _PATHS and _PATHS[kind][2] and not obj.get("metadata", {}).get("namespace"):
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["namespace"] = namespace
    return obj


def member_objects(manifest_dir: Path, namespaces: Sequence[str] | None = None) -> MemberAccess:
    """The member-side objects for a cluster-wide join, or for ``namespaces`` only."""
    system_ns, resources = _kustomization(manifest_dir)
    if namespaces is None:
        files = resources
        extra: list[Obj] = []
    else:
        files = [r for r in resources if r in ("namespace.yaml", "serviceaccount.yaml")]
        extra = _namespaced(load_documents(manifest_dir / "role-namespaced.yaml"), namespaces)
    objects = [_with_namespace(d, system_ns) for f in files for d in load_documents(manifest_dir / f)]
    objects += extra
    for obj in objects:
        if obj.get("kind") not in _PATHS:
            raise JoinError(f"manifests/member holds a {obj.get('kind')!r}, which join does not know")
    sa = _one(objects, "ServiceAccount")
    token = next(
        (o for o in objects if o.get("kind") == "Secret" and o.get("type") == TOKEN_TYPE),
        None,
    )
    if token is None:
        raise JoinError(f"manifests/member has no Secret of type {TOKEN_TYPE}")
    return MemberAccess(
        objects=objects,
        service_account=(sa["metadata"]["namespace"], sa["metadata"]["name"]),
        token_secret=(token["metadata"]["namespace"], token["metadata"]["name"]),
        namespaces=None if namespaces is None else tuple(namespaces),
    )


def _one(objects: Iterable[Obj], kind: str) -> Obj:
    found = [o for o in objects if o.get("kind") == kind]
    if len(found) != 1:
        raise JoinError(f"manifests/member must hold exactly one {kind}, not {len(found)}")
    return found[0]


def _namespaced(docs: list[Obj], namespaces: Sequence[str]) -> list[Obj]:
    """The Role and RoleBinding once per namespace; the file's cluster-scoped documents once."""
    templates = [d for d in docs if d.get("kind") in _NAMESPACED_TEMPLATE_KINDS]
    others = [d for d in docs if d.get("kind") not in _NAMESPACED_TEMPLATE_KINDS]
    result = []
    for namespace in namespaces:
        for template in templates:
            obj = copy.deepcopy(template)
            obj["metadata"]["namespace"] = namespace
            result.append(obj)
    return result + others


# --- paths ------------------------------------------------------------------------------------------


def object_path(kind: str, name: str | None, namespace: str | None = None) -> str:
    """The REST path of an object (or of its collection when ``name`` is None)."""
    prefix, plural, namespaced = _PATHS[kind]
    base = f"{prefix}/namespaces/{namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
    return base if name is None else f"{base}/{name}"


def path_of(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return object_path(obj["kind"], meta["name"], meta.get("namespace"))


def describe(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {where}{meta['name']}"


# --- arguments --------------------------------------------------------------------------------------


def check_cluster_name(name: str) -> str:
    """The cluster's name is its Secret's name: a DNS subdomain."""
    if not _DNS_SUBDOMAIN.fullmatch(name):
        raise JoinError(
            f"cluster name {name!r} must be a DNS subdomain (lowercase letters, digits, '-' and '.'), "
            "as it names the member Secret"
        )
    return name


def parse_labels(text: str | None) -> dict[str, str]:
    """``k=v,k2=v2`` as a dict; each key and value checked as Kubernetes checks label names and values."""
    labels: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise JoinError(f"--labels: {item.strip()!r} is not key=value")
        prefix, slash, name = key.rpartition("/")
        if (slash and not _DNS_SUBDOMAIN.fullmatch(prefix)) or not _LABEL_NAME.fullmatch(name):
            raise JoinError(f"--labels: {key!r} is not a valid label key")
        if not _LABEL_VALUE.fullmatch(value) or len(value) > 63:
            raise JoinError(f"--labels: the value of {key!r} is not a valid label value")
        if key == MEMBER_LABEL:
            raise JoinError(f"--labels: {MEMBER_LABEL} is set by join itself")
        labels[key] = value
    return labels


def check_elastic_pods(pods: int | None) -> int | None:
    if pods is not None and pods < 0:
        raise JoinError(f"--elastic-pods must be 0 or more, not {pods}")
    return pods


def parse_namespaces(text: str | None) -> list[str] | None:
    """``a,b`` as a list of namespace names, or None (cluster-wide) when not given."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise JoinError("--namespaces: give at least one namespace, or leave it out for cluster-wide access")
    for name in names:
        if not _DNS_LABEL.fullmatch(name):
            raise JoinError(f"--namespaces: {name!r} is not a namespace name")
    return list(dict.fromkeys(names))


# --- the management side ----------------------------------------------------------------------------


def member_kubeconfig(
    cluster: str, server: str, ca_pem: bytes, token: str, user: str, tls_server_name: str | None = None
) -> Obj:
    """A kubeconfig with inline credentials only (a token and the CA as data): what the registry accepts
    (``controller.kube.clients.build_configuration``) with no opt-in."""
    entry: Obj = {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    if tls_server_name:
        entry["tls-server-name"] = tls_server_name
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": entry}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
    }


def kubeconfig_text(kubeconfig: Mapping[str, Any]) -> str:
    """Stable text (the same kubeconfig always gives the same bytes, so a re-join changes nothing)."""
    return yaml.safe_dump(dict(kubeconfig), sort_keys=True, default_flow_style=False)


def member_secret(
    cluster: str,
    namespace: str,
    kubeconfig: str,
    labels: Mapping[str, str],
    *,
    provider: str | None = None,
    region: str | None = None,
    zone: str | None = None,
    joined_namespaces: Sequence[str] | None = None,
    elastic_pods: int | None = None,
) -> Obj:
    """The member Secret on the management cluster, as ``controller/kube/registry.py`` reads it."""
    annotations = {ANNOTATION_JOINED_BY: JOINED_BY}
    for key, value in ((ANNOTATION_PROVIDER, provider), (ANNOTATION_REGION, region), (ANNOTATION_ZONE, zone)):
        if value:
            annotations[key] = value
    if elastic_pods is not None:
        annotations[ANNOTATION_ELASTIC_PODS] = str(elastic_pods)
    if joined_namespaces is not None:
        annotations[ANNOTATION_JOINED_NAMESPACES] = ",".join(joined_namespaces)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": cluster,
            "namespace": namespace,
            "labels": {MEMBER_LABEL: "true", **labels},
            "annotations": annotations,
        },
        "type": "Opaque",
        "data": {KUBECONFIG_KEY: base64.b64encode(kubeconfig.encode()).decode()},
    }


def joined_namespaces(secret: Mapping[str, Any]) -> list[str] | None:
    """The namespaces a namespace-scoped join granted, from its Secret; None for a cluster-wide join."""
    text = ((secret.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_JOINED_NAMESPACES)
    return None if text is None else [n for n in text.split(",") if n]


# --- comparing with what exists ---------------------------------------------------------------------

REPLACED_FIELDS = {"ClusterRole": ("rules",), "Role": ("rules",), "ClusterRoleBinding": ("subjects",)}
REPLACED_FIELDS["RoleBinding"] = ("subjects",)
"""What join keeps in step on an existing object. Namespaces, the ServiceAccount and its token Secret are
created when missing and otherwise left alone (a PUT would drop what the API server added to them)."""


def update_of(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> Obj | None:
    """The object to PUT so that ``existing`` grants what ``wanted`` does, or None when it already does.

    A binding whose roleRef differs cannot be changed (roleRef is immutable): JoinError."""
    kind = str(wanted["kind"])
    if kind in ("ClusterRoleBinding", "RoleBinding") and existing.get("roleRef") != wanted.get("roleRef"):
        raise JoinError(
            f"{describe(wanted)} exists with another roleRef; delete it (or `fhpa cluster unjoin`) first"
        )
    fields = REPLACED_FIELDS.get(kind, ())
    labels = dict((existing.get("metadata") or {}).get("labels") or {})
    wanted_labels = {**labels, **((wanted.get("metadata") or {}).get("labels") or {})}
    if all(existing.get(f) == wanted.get(f) for f in fields) and (not fields or labels == wanted_labels):
        return None
    updated = copy.deepcopy(dict(existing))
    for f in fields:
        updated[f] = copy.deepcopy(wanted.get(f))
    updated.setdefault("metadata", {})["labels"] = wanted_labels
    return updated


def secret_update(existing: Mapping[str, Any], wanted: Mapping[str, Any]) -> Obj | None:
    """The member Secret to PUT, or None when it already holds this kubeconfig, labels and annotations.

    A Secret of that name that is not a member Secret is not taken over: JoinError."""
    meta = existing.get("metadata") or {}
    if (meta.get("labels") or {}).get(MEMBER_LABEL) != "true":
        raise JoinError(
            f"Secret {meta.get('namespace')}/{meta.get('name')} exists and is not a member Secret "
            f'(no {MEMBER_LABEL}: "true" label); choose another cluster name'
        )
    want_meta = wanted["metadata"]
    same = (
        existing.get("data") == wanted["data"]
        and (meta.get("labels") or {}) == want_meta["labels"]
        and (meta.get("annotations") or {}) == want_meta["annotations"]
        and existing.get("type") == wanted["type"]
    )
    if same:
        return None
    updated = copy.deepcopy(dict(existing))
    updated["metadata"]["labels"] = dict(want_meta["labels"])
    updated["metadata"]["annotations"] = dict(want_meta["annotations"])
    updated["data"] = dict(wanted["data"])
    updated.pop("stringData", None)
    return updated


def redacted(secret: Mapping[str, Any], placeholder: str) -> Obj:
    """The Secret with its kubeconfig decoded and its token replaced by ``placeholder`` (for --dry-run)."""
    shown = copy.deepcopy(dict(secret))
    text = base64.b64decode(shown.pop("data")[KUBECONFIG_KEY]).decode()
    config = yaml.safe_load(text)
    for user in config.get("users") or []:
        if "token" in (user.get("user") or {}):
            user["user"]["token"] = placeholder
    shown["stringData"] = {KUBECONFIG_KEY: kubeconfig_text(config)}
    return shown
