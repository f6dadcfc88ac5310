"""AdmissionReview bodies for the webhook tests, shaped like the ones the API server sends (a recorded
review carries userInfo, options, requestKind and the object after schema defaulting)."""

from __future__ import annotations

import base64
import copy
import json
import uuid
from typing import Any

GROUP = "autoscaling.karmada.io"
API_VERSION = f"{GROUP}/v1alpha1"


def fhpa(name: str = "web", **spec: Any) -> dict[str, Any]:
    """A valid FederatedHPA before defaulting; keyword arguments replace spec fields."""
    body: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "maxReplicas": 10,
    }
    body.update(spec)
    return {
        "apiVersion": API_VERSION,
        "kind": "FederatedHPA",
        "metadata": {"name": name, "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": body,
    }


def cronfhpa(name: str = "nightly", rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A valid CronFederatedHPA that scales a FederatedHPA, before defaulting."""
    return {
        "apiVersion": API_VERSION,
        "kind": "CronFederatedHPA",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": API_VERSION, "kind": "FederatedHPA", "name": "web"},
            "rules": rules
            if rules is not None
            else [{"name": "scale-up", "schedule": "0 8 * * *", "targetMinReplicas": 5}],
        },
    }


def review(
    obj: Any,
    operation: str = "CREATE",
    old: Any = None,
    *,
    kind: str | None = None,
    group: str = GROUP,
    dry_run: bool = False,
    api_version: str = "admission.k8s.io/v1",
    uid: str | None = None,
    sub_resource: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview request for `obj` (None for DELETE's object)."""
    kind = kind or (obj or old or {}).get("kind", "FederatedHPA")
    resource = {"FederatedHPA": "federatedhpas", "CronFederatedHPA": "cronfederatedhpas"}.get(kind, "things")
    gvk = {"group": group, "version": "v1alpha1", "kind": kind}
    gvr = {"group": group, "version": "v1alpha1", "resource": resource}
    meta = (obj or old or {}).get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", "default"),
        "operation": operation,
        "userInfo": {"username": "admin", "groups": ["system:masters", "system:authenticated"]},
        "object": copy.deepcopy(obj),
        "oldObject": copy.deepcopy(old),
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
    }
    if sub_resource:
        request["subResource"] = sub_resource
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSONPatch of an AdmissionReview response ([] when it carries none)."""
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    patch: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return patch
