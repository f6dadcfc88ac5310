"""Member HPAs as the member adapter reads them: which are ours (``owns``), which scale a given workload
(``targets``), what one says (``hpa_observation``), and whether writing a spec would change anything
(``already_applied``, by the template digest the writes stamp). Pure functions over the API's objects.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from controller.kube.member_cache import MemberCache
from controller.planning.member_hpa import (
    ANNOTATION_DECISION,
    ANNOTATION_DIGEST,
    FIELD_MANAGER,
    LABEL_MANAGED_BY,
    LABEL_OWNER_NAME,
    LABEL_OWNER_NAMESPACE,
    LABEL_OWNER_UID,
    hpa_name,
)
from controller.planning.metric_ratio import metric_ratio
from controller.planning.observation import MemberHPAObservation
from fhpa_api.models import Condition, CrossVersionObjectReference, FederatedHPA

DEFAULT_API_VERSIONS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "ReplicaSet": "apps/v1"}


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def target_group(ref: CrossVersionObjectReference) -> str:
    """The API group of the workload ``ref`` names (apps for the built-in kinds without an apiVersion)."""
    return split_api_version(ref.api_version or DEFAULT_API_VERSIONS.get(ref.kind, ""))[0]


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def owns(hpa: Mapping[str, Any], fhpa: FederatedHPA) -> bool:
    """An HPA is ours when it carries this FederatedHPA's uid, or when it is labelled as made by this
    controller for a FederatedHPA of the same namespace and name (one deleted and created again while
    a cluster was unreachable): that one is adopted rather than left to block the new owner."""
    labels = labels_of(hpa)
    if fhpa.metadata.uid and labels.get(LABEL_OWNER_UID) == fhpa.metadata.uid:
        return True
    return (
        labels.get(LABEL_MANAGED_BY) == FIELD_MANAGER
        and labels.get(LABEL_OWNER_NAMESPACE) == (fhpa.metadata.namespace or "")
        and labels.get(LABEL_OWNER_NAME) == (fhpa.metadata.name or "")
    )


def targets(hpa: Mapping[str, Any], ref: CrossVersionObjectReference) -> bool:
    """Whether an HPA scales the workload ``ref`` names (same group, kind and name; any version)."""
    theirs = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    if theirs.get("kind") != ref.kind or theirs.get("name") != ref.name:
        return False
    mine = target_group(ref)
    return split_api_version(theirs.get("apiVersion") or "")[0] == mine


def _conditions(raw: list[Mapping[str, Any]] | None) -> list[Condition]:
    out = []
    for cond in raw or []:
        try:
            out.append(Condition.model_validate({k: v for k, v in cond.items() if k != "observedGeneration"}))
        except ValidationError:
            continue  # a condition we cannot read must not make the cluster unobservable
    return out


def _time(raw: Any) -> datetime | None:
    """An RFC 3339 timestamp from an object's status; None when absent or unreadable (a field we cannot
    read must not make the cluster unobservable)."""
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")) if raw else None
    except ValueError:
        return None


def hpa_observation(hpa: Mapping[str, Any], owned: bool) -> MemberHPAObservation:
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    meta = hpa.get("metadata") or {}
    return MemberHPAObservation(
        name=meta.get("name", ""),
        owned=owned,
        min_replicas=int(spec.get("minReplicas", 1)),
        max_replicas=int(spec.get("maxReplicas", 0)),
        current_replicas=int(status.get("currentReplicas") or 0),
        desired_replicas=int(status.get("desiredReplicas") or 0),
        template_digest=(meta.get("annotations") or {}).get(ANNOTATION_DIGEST),
        conditions=_conditions(status.get("conditions")),
        metric_ratio=metric_ratio(spec.get("metrics") or [], status.get("currentMetrics") or []),
        resource_version=meta.get("resourceVersion"),
        uid=meta.get("uid"),
        decision=(meta.get("annotations") or {}).get(ANNOTATION_DECISION),
        last_scale_time=_time(status.get("lastScaleTime")),
    )


def spec_template_digest(spec: Mapping[str, Any]) -> str:
    """The digest of the cluster-independent part of a spec (target, metrics, behavior): for a spec made
    by member_hpa.render_spec it equals member_hpa.template_digest of its FederatedHPA."""
    part = {k: spec[k] for k in ("scaleTargetRef", "metrics", "behavior") if k in spec}
    raw = json.dumps(part, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def already_applied(
    hpa: Mapping[str, Any], spec: Mapping[str, Any], labels: Mapping[str, str], annotations: Mapping[str, str]
) -> bool:
    """Whether writing ``spec`` would change nothing that matters.

    The stored spec may differ from what we wrote only by server defaulting (behavior rules filled in,
    v2beta2 conversion), so an HPA whose digest annotation says it holds this template and whose bounds
    match is as planned; without that, the spec must be equal.
    """
    meta = hpa.get("metadata") or {}
    if labels_of(hpa) != dict(labels) or (meta.get("annotations") or {}) != dict(annotations):
        return False
    stored = hpa.get("spec") or {}
    if stored == spec:
        return True
    same_bounds = all(stored.get(k) == spec.get(k) for k in ("minReplicas", "maxReplicas", "scaleTargetRef"))
    return same_bounds and (meta.get("annotations") or {}).get(ANNOTATION_DIGEST) == spec_template_digest(
        spec
    )


def cached_hpas(
    fhpa: FederatedHPA, namespace: str, cache: MemberCache
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the HPA under our name, another HPA on the same workload that is not ours), from the cache."""
    ref = fhpa.spec.scale_target_ref
    group = target_group(ref)
    name = hpa_name(fhpa)
    foreign = next(
        (
            h
            for h in cache.hpas_targeting(namespace, group, ref.kind, ref.name)
            if h["metadata"]["name"] != name and not owns(h, fhpa)
        ),
        None,
    )
    return cache.hpa(namespace, name), foreign
