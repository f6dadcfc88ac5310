"""What removing a member cluster leaves behind, for `fhpa cluster unjoin` to show before it acts.

Two lists. On the management cluster: the FederatedHPAs whose status has a row for the cluster, that
is, the ones the controller last planned with it; unjoining drops the cluster from their plans while
the member HPAs made for them keep scaling there with their last bounds. In the member: the HPAs this
controller created (found by the owner labels it puts on every member HPA), which
``--delete-member-hpas`` removes. An HPA without those labels is someone else's and is never listed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controller.kube.clients import KubeClient
from controller.planning.member_hpa import (
    FIELD_MANAGER,
    LABEL_MANAGED_BY,
    LABEL_OWNER_NAME,
    LABEL_OWNER_NAMESPACE,
)
from fhpa_api import GROUP, VERSION

OURS = f"{LABEL_MANAGED_BY}={FIELD_MANAGER}"
HPA_VERSIONS = ("v2", "v2beta2", "v1")  # any served version lists and deletes the same objects


@dataclass(frozen=True)
class PlannedHere:
    """A FederatedHPA whose status has a row for the cluster, with that row's bounds."""

    namespace: str
    name: str
    min_replicas: int | None
    max_replicas: int | None
    current_replicas: int | None

    def describe(self) -> str:
        bounds = f"min {_n(self.min_replicas)}, max {_n(self.max_replicas)}"
        return f"FederatedHPA {self.namespace}/{self.name} ({bounds}, {_n(self.current_replicas)} running)"


@dataclass(frozen=True)
class MemberHPA:
    """An HPA in the member cluster that carries this controller's owner labels."""

    namespace: str
    name: str
    owner: str  # namespace/name of the FederatedHPA it was made for
    path: str

    def describe(self) -> str:
        return f"HorizontalPodAutoscaler {self.namespace}/{self.name} (for FederatedHPA {self.owner})"


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)


def planned_in(management: KubeClient, cluster: str) -> list[PlannedHere]:
    """The FederatedHPAs, in every namespace, whose status has a row for ``cluster``. None when the
    CRD is not installed (the API answers 404): then nothing can be left behind."""
    listed = management.find(f"/apis/{GROUP}/{VERSION}/federatedhpas") or {}
    found = []
    for item in listed.get("items") or []:
        meta = item.get("metadata") or {}
        for row in (item.get("status") or {}).get("clusters") or []:
            if isinstance(row, dict) and row.get("name") == cluster:
                found.append(
                    PlannedHere(
                        namespace=str(meta.get("namespace") or ""),
                        name=str(meta.get("name") or ""),
                        min_replicas=row.get("minReplicas"),
                        max_replicas=row.get("maxReplicas"),
                        current_replicas=row.get("currentReplicas"),
                    )
                )
    return sorted(found, key=lambda p: (p.namespace, p.name))


def ours_in_member(member: KubeClient, namespaces: Iterable[str] | None) -> list[MemberHPA]:
    """The member HPAs labelled as this controller's, in ``namespaces`` (None: every namespace)."""
    version = _served_hpa_version(member)
    base = f"/apis/autoscaling/{version}"
    collections = (
        [f"{base}/horizontalpodautoscalers"]
        if namespaces is None
        else [f"{base}/namespaces/{ns}/horizontalpodautoscalers" for ns in sorted(namespaces)]
    )
    found = []
    for collection in collections:
        for item in (member.find(collection, labelSelector=OURS) or {}).get("items") or []:
            found.append(_member_hpa(item, base))
    return sorted(found, key=lambda h: (h.namespace, h.name))


def _member_hpa(item: dict[str, Any], base: str) -> MemberHPA:
    meta = item.get("metadata") or {}
    labels = meta.get("labels") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    owner = f"{labels.get(LABEL_OWNER_NAMESPACE, '?')}/{labels.get(LABEL_OWNER_NAME, '?')}"
    return MemberHPA(namespace, name, owner, f"{base}/namespaces/{namespace}/horizontalpodautoscalers/{name}")


def _served_hpa_version(member: KubeClient) -> str:
    group = member.find("/apis/autoscaling") or {}
    served = {v.get("version") for v in group.get("versions") or []} if isinstance(group, dict) else set()
    return next((v for v in HPA_VERSIONS if v in served), "v1")
