"""How a FederatedHPA becomes one member cluster's autoscaling/v2 HPA: name, labels, spec, digest.

The labels are how a restarted controller recognises its own HPAs (DESIGN §1), the digest is how the
planner tells whether a member HPA's template (target, metrics, behavior) is already what it would write.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from controller.planning.external_share import member_metrics
from fhpa_api.models import FederatedHPA, to_json

FIELD_MANAGER = "federated-hpa"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_OWNER_NAMESPACE = "autoscaling.karmada.io/federatedhpa-namespace"
LABEL_OWNER_NAME = "autoscaling.karmada.io/federatedhpa-name"
LABEL_OWNER_UID = "autoscaling.karmada.io/federatedhpa-uid"
ANNOTATION_DIGEST = "autoscaling.karmada.io/template-digest"
ANNOTATION_DECISION = "autoscaling.karmada.io/decision"
DEFAULT_METRICS: list[dict[str, Any]] = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
]


def hpa_name(fhpa: FederatedHPA) -> str:
    """The member HPA has the FederatedHPA's name, in the same namespace."""
    assert fhpa.metadata.name
    return fhpa.metadata.name


def owner_labels(fhpa: FederatedHPA) -> dict[str, str]:
    return {
        LABEL_MANAGED_BY: FIELD_MANAGER,
        LABEL_OWNER_NAMESPACE: fhpa.metadata.namespace or "",
        LABEL_OWNER_NAME: fhpa.metadata.name or "",
        LABEL_OWNER_UID: fhpa.metadata.uid or "",
    }


def template(fhpa: FederatedHPA) -> dict[str, Any]:
    """The part of the member HPA spec that does not depend on the cluster: target, metrics, behavior.

    A fresh dict every call: callers (ports, the simulator) keep and change it, so the defaults are copied.
    """
    spec = fhpa.spec
    metrics = [to_json(m) for m in spec.metrics] if spec.metrics else copy.deepcopy(DEFAULT_METRICS)
    body: dict[str, Any] = {"scaleTargetRef": to_json(spec.scale_target_ref), "metrics": metrics}
    if spec.behavior is not None:
        body["behavior"] = to_json(spec.behavior)
    return body


def template_digest(fhpa: FederatedHPA) -> str:
    """The digest of the template as copied unchanged (no metric share): ``spec_digest`` of such a spec."""
    return spec_digest(template(fhpa))


def spec_digest(spec: dict[str, Any]) -> str:
    """The digest of a member spec's template part (target, metrics, behavior), as the member adapters
    stamp it (annotation ``ANNOTATION_DIGEST``): a member HPA whose digest and bounds match holds the plan."""
    part = {k: spec[k] for k in ("scaleTargetRef", "metrics", "behavior") if k in spec}
    raw = json.dumps(part, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def render_spec(
    fhpa: FederatedHPA, min_replicas: int, max_replicas: int, metric_share: int | None = None
) -> dict[str, Any]:
    """The full autoscaling/v2 HorizontalPodAutoscalerSpec for one cluster.

    ``metric_share`` (thousandths of the fleet, controller.planning.external_share): External and Object
    AverageValue targets divided by it; None copies every target unchanged."""
    body = template(fhpa)
    if metric_share is not None:
        body["metrics"] = member_metrics(body["metrics"], metric_share)
    return {**body, "minReplicas": min_replicas, "maxReplicas": max_replicas}


def decision_key(fhpa: FederatedHPA, cluster: str, spec: dict[str, Any]) -> str:
    """The idempotence key of one member HPA write: which decision the member holds.

    A short hash (16 hex digits of SHA-256) of the FederatedHPA's uid, its metadata.generation, the
    cluster's name and the full planned spec (scaleTargetRef, metrics, behavior, minReplicas,
    maxReplicas), in canonical JSON. Two controllers planning the same generation to the same spec for a
    cluster compute the same key; any other FederatedHPA, generation, cluster or spec gives another one.
    """
    raw = json.dumps(
        {
            "uid": fhpa.metadata.uid or "",
            "generation": fhpa.metadata.generation or 0,
            "cluster": cluster,
            "spec": spec,
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    return hashlib.sha256(raw).hexdigest()[:16]
