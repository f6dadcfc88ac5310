"""A member cluster (controller.ports.MemberCluster) on the official ``kubernetes`` client.

What it reads (health, discovery, ``observe`` from the watch-backed cache or the API) is
``controller.kube.member_reads``; which member HPAs are ours and what they say,
``controller.kube.member_hpas``.

What it writes, and how it stays safe with other writers:
- the member HPA: created with POST (an existing one answers 409, so two writers never both
  create), replaced with PUT carrying the resourceVersion the planning pass OBSERVED, deleted with
  uid and that resourceVersion as preconditions: a change since the pass looked answers 409
  (ConflictError; the caller replans from a fresh observation, it never retries with a fresh read).
  Each write stamps the plan's decision key (annotation ``autoscaling.karmada.io/decision``); an HPA
  that already holds the same decision and spec is not written again, so a second controller carrying
  out the same plan, or a replaced one, does not repeat it. Every write names the field manager
  ``federated-hpa``.
- an HPA we do not own is never written: not one under our name without our labels, and none of
  ours beside another HPA that targets the same workload (DESIGN §1): NotOwnedError.
- workload replicas only through the scale subresource, with the Scale's resourceVersion as observed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from controller.errors import ClusterUnreachableError, ConflictError, NotFoundError, NotOwnedError
from controller.kube.member_hpas import already_applied, labels_of, owns, spec_template_digest, target_group
from controller.kube.member_reads import SCALE_IN_OBJECT, MemberReader, ResolvedKind
from controller.kube.member_watches import HPA, WORKLOAD
from controller.planning.member_hpa import (
    ANNOTATION_DECISION,
    ANNOTATION_DIGEST,
    FIELD_MANAGER,
    hpa_name,
    owner_labels,
)
from controller.planning.plan import Observed, ReplicaWrite
from controller.ports import MemberWrite
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA

log = logging.getLogger(__name__)


class KubeMemberCluster(MemberReader):
    """One member cluster through a KubeClient (controller.ports.MemberCluster): the reads of
    ``MemberReader`` and the writes. Thread-safe: reconciles of different objects may share it."""

    # --- writes ----------------------------------------------------------------------------------

    def write(self, fhpa: FederatedHPA, action: MemberWrite) -> None:
        if isinstance(action, ReplicaWrite):
            namespace = fhpa.metadata.namespace or "default"
            self.scale_workload(
                namespace, fhpa.spec.scale_target_ref, action.replicas, observed=action.observed
            )
        elif action.op == "delete":
            self.delete_hpa(fhpa, observed=action.observed)
        else:
            self.apply_hpa(fhpa, action.spec or {}, observed=action.observed, decision=action.decision)

    # --- member HPA ------------------------------------------------------------------------------

    def apply_hpa(
        self,
        fhpa: FederatedHPA,
        spec: dict[str, object],
        observed: Observed | None = None,
        decision: str | None = None,
    ) -> None:
        namespace = fhpa.metadata.namespace or "default"
        name = hpa_name(fhpa)
        mine, foreign = self._hpas_for_write(fhpa, namespace)
        if foreign is not None:
            raise NotOwnedError(
                f"cluster {self.name}: HPA {namespace}/{foreign['metadata']['name']} already targets "
                f"{fhpa.spec.scale_target_ref.kind}/{fhpa.spec.scale_target_ref.name}; remove it to let "
                "this FederatedHPA manage the workload"
            )
        if mine is not None and not owns(mine, fhpa):
            raise NotOwnedError(
                f"cluster {self.name}: HPA {namespace}/{name} exists and was not made for this FederatedHPA"
            )
        labels = {**(labels_of(mine) if mine else {}), **owner_labels(fhpa)}
        annotations = {**((mine or {}).get("metadata", {}).get("annotations") or {})}
        annotations[ANNOTATION_DIGEST] = spec_template_digest(spec)
        if decision is not None:
            annotations[ANNOTATION_DECISION] = decision
        if mine is not None and already_applied(mine, spec, labels, annotations):
            # already as planned (with a decision key: this very decision, applied by us earlier, by
            # another leader carrying out the same plan, or by the process we replaced): no write
            return
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        }
        body = {
            "apiVersion": f"autoscaling/{self.hpa_version()}",
            "kind": "HorizontalPodAutoscaler",
            "metadata": metadata,
            "spec": spec,
        }
        # what the write is conditional on: the HPA as the planning pass observed it. The read above only
        # refuses what is not ours, keeps others' labels and annotations and skips a repeat; its
        # resourceVersion is never used, so a stale plan answers 409 instead of winning
        create = mine is None if observed is None else observed.resource_version is None
        if create:  # absent when observed: POST, and one that exists now answers 409 AlreadyExists
            with self._writing(HPA, namespace, name, None):
                made = self.client.request(
                    "POST", self._hpa_path(namespace), {"fieldManager": FIELD_MANAGER}, body
                )
            self._note_hpa(namespace, name, made, None)
            log.info("Created member HPA", extra={"cluster": self.name, "object": f"{namespace}/{name}"})
            return
        if observed is not None:
            metadata["resourceVersion"] = observed.resource_version
            if mine is None:
                raise ConflictError(f"cluster {self.name}: HPA {namespace}/{name} was deleted since observed")
        else:
            assert mine is not None
            metadata["resourceVersion"] = mine["metadata"]["resourceVersion"]
        try:
            with self._writing(HPA, namespace, name, metadata["resourceVersion"]):
                put = self.client.request(
                    "PUT", self._hpa_path(namespace, name), {"fieldManager": FIELD_MANAGER}, body
                )
            self._note_hpa(namespace, name, put, metadata["resourceVersion"])
        except ConflictError:
            if self._applied_meanwhile(fhpa, namespace, name, spec, decision):
                return  # the same decision landed since (another leader, or our cache was a moment behind)
            raise
        log.info("Updated member HPA", extra={"cluster": self.name, "object": f"{namespace}/{name}"})

    def _writing(
        self, resource: str, namespace: str, name: str, resource_version: str | None
    ) -> AbstractContextManager[None]:
        """Around a write conditional on ``resource_version``: its watch echo does not plan it again."""
        if self.cache is None:
            return contextlib.nullcontext()
        return self.cache.own_writes.writing(resource, (namespace, name), resource_version)

    def _cached_scale(
        self,
        kind: ResolvedKind,
        namespace: str,
        target: CrossVersionObjectReference,
        observed: Observed | None,
    ) -> Mapping[str, Any] | None:
        """The Scale from the cache, when it holds the workload at the version the plan observed and the
        kind carries its Scale in the object: the write is conditional on that version anyway, so a read
        of the Scale first would only cost a request. None: read it."""
        wkind = (kind.group, target.kind)
        if (
            self.cache is None
            or observed is None
            or not observed.resource_version
            or wkind not in SCALE_IN_OBJECT
        ):
            return None
        try:
            cached = self.cache.workload(wkind, namespace, target.name)
        except ClusterUnreachableError:  # not watched yet, or the member is unknown now
            return None
        if (
            cached is None
            or (cached.get("metadata") or {}).get("resourceVersion") != observed.resource_version
        ):
            return None
        return {
            "metadata": cached["metadata"],
            "spec": {"replicas": (cached.get("spec") or {}).get("replicas")},
        }

    def _note_hpa(
        self, namespace: str, name: str, written: Any, since: str | None, deleted: bool = False
    ) -> None:
        """Our write (conditional on ``since``; None: a create), into the cache at once
        (read-your-writes for the next reconcile)."""
        if self.cache is not None and (deleted or isinstance(written, dict)):
            self.cache.note_hpa(namespace, name, None if deleted else written, since)

    def _applied_meanwhile(
        self, fhpa: FederatedHPA, namespace: str, name: str, spec: Mapping[str, Any], decision: str | None
    ) -> bool:
        """After a 409: whether the HPA now holds exactly this decision and spec (nothing left to do)."""
        fresh = self.client.find(self._hpa_path(namespace, name))
        if not isinstance(fresh, dict) or not owns(fresh, fhpa) or decision is None:
            return False
        annotations = dict((fresh.get("metadata") or {}).get("annotations") or {})
        if annotations.get(ANNOTATION_DECISION) != decision:
            return False
        labels = {**labels_of(fresh), **owner_labels(fhpa)}
        annotations[ANNOTATION_DIGEST] = spec_template_digest(spec)
        return already_applied(fresh, spec, labels, annotations)

    def delete_hpa(self, fhpa: FederatedHPA, observed: Observed | None = None) -> None:
        namespace = fhpa.metadata.namespace or "default"
        name = hpa_name(fhpa)
        existing = self.client.find(self._hpa_path(namespace, name))
        if not isinstance(existing, dict):
            return
        if not owns(existing, fhpa):
            log.info(
                "Left member HPA alone: not ours",
                extra={"cluster": self.name, "object": f"{namespace}/{name}"},
            )
            return
        meta = existing["metadata"]
        # as observed when the deletion was planned (a change since answers 409), else as read
        rv = (observed.resource_version if observed is not None else None) or meta["resourceVersion"]
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {
                "uid": (observed.uid if observed is not None else None) or meta["uid"],
                "resourceVersion": rv,
            },
        }
        try:
            with self._writing(HPA, namespace, name, rv):
                self.client.request("DELETE", self._hpa_path(namespace, name), body=options)
        except NotFoundError:
            return
        self._note_hpa(namespace, name, None, rv, deleted=True)
        log.info("Deleted member HPA", extra={"cluster": self.name, "object": f"{namespace}/{name}"})

    # --- scale -----------------------------------------------------------------------------------

    def scale_workload(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        replicas: int,
        observed: Observed | None = None,
    ) -> None:
        if replicas < 0:
            raise ValueError(f"replicas must be >= 0, got {replicas}")
        kind = self._target(target)
        if kind is None:
            raise NotFoundError(
                f"cluster {self.name}: {target.api_version or ''} {target.kind} is not served "
                "with a scale subresource"
            )
        path = kind.path(namespace, target.name, "scale")
        scale = self._cached_scale(kind, namespace, target, observed) or self.client.get(path)
        if int((scale.get("spec") or {}).get("replicas") or 0) == replicas:
            return
        body = {
            "apiVersion": scale.get("apiVersion", "autoscaling/v1"),
            "kind": "Scale",
            "metadata": {
                "name": target.name,
                "namespace": namespace,
                # as observed when the write was planned (a change since answers 409), else as read
                "resourceVersion": (observed.resource_version if observed is not None else None)
                or scale["metadata"]["resourceVersion"],
            },
            "spec": {"replicas": replicas},
        }
        since = body["metadata"]["resourceVersion"]
        with self._writing(WORKLOAD, namespace, target.name, since):
            written = self.client.request("PUT", path, {"fieldManager": FIELD_MANAGER}, body)
        if self.cache is not None and isinstance(written, dict):
            group = target_group(target)
            self.cache.note_scale((group, target.kind), namespace, target.name, written, since)
        log.info(
            "Scaled workload",
            extra={"cluster": self.name, "object": f"{namespace}/{target.name}", "replicas": replicas},
        )
