"""The FederatedHPA finalizer: deleting a FederatedHPA removes the member HPAs this controller created.

Why a finalizer rather than owner references: the member HPAs live in other clusters, where the
garbage collector cannot see their owner. So the controller puts
``autoscaling.karmada.io/federatedhpa-cleanup`` on every FederatedHPA it manages, and when one is being
deleted it deletes its member HPA in every registered cluster (a member deletes
only an HPA labelled as ours; an absent one is fine) and then removes the finalizer.

Workloads are never touched: they belong to whoever propagated them, and the replicas they run now are
the replicas they keep.

A cluster that does not answer is retried (the caller requeues) for ``give_up_after_seconds`` from the
deletion request, reported meanwhile in status and as a Warning Event; after that the finalizer is
released anyway, with a Warning Event naming the clusters whose HPA was left behind and the label that
finds it, so one dead cluster cannot block deleting a namespace forever.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from controller.errors import ConflictError, NotFoundError, PortError
from controller.planning.conditions import condition
from controller.planning.member_hpa import LABEL_OWNER_UID
from controller.planning.plan import HPAAction
from controller.planning.wording import count
from controller.ports import ControlPlane, MemberCluster, writes
from fhpa_api.models import FederatedHPA, FederatedHPAStatus

log = logging.getLogger(__name__)

FINALIZER = "autoscaling.karmada.io/federatedhpa-cleanup"
CONDITION_CLEANUP = "CleanupPending"
DEFAULT_GIVE_UP_AFTER_SECONDS = 300.0
RETRY_SECONDS = 10.0


class FinalizerStore(Protocol):
    """What the finalizer needs beyond the ControlPlane port (KubeControlPlane implements it)."""

    @writes
    def set_finalizers(self, fhpa: FederatedHPA, finalizers: list[str]) -> FederatedHPA: ...


@dataclass
class CleanupResult:
    removed: list[str] = field(default_factory=list)  # clusters whose member HPA is gone
    failed: dict[str, str] = field(default_factory=dict)  # cluster -> why it could not be cleaned
    released: bool = False  # the finalizer is off: the API server may now delete the object
    requeue_after_seconds: float | None = None


def is_deleting(fhpa: FederatedHPA) -> bool:
    return bool(fhpa.metadata.deletion_timestamp)


def has_finalizer(fhpa: FederatedHPA) -> bool:
    return FINALIZER in (fhpa.metadata.finalizers or [])


def ensure_finalizer(fhpa: FederatedHPA, store: FinalizerStore) -> FederatedHPA:
    """Add the finalizer before anything is created in a member cluster (ConflictError: requeue)."""
    if is_deleting(fhpa) or has_finalizer(fhpa):
        return fhpa
    return store.set_finalizers(fhpa, [*(fhpa.metadata.finalizers or []), FINALIZER])


def clean_up(
    fhpa: FederatedHPA,
    members: Mapping[str, MemberCluster],
    control_plane: ControlPlane,
    store: FinalizerStore,
    now: datetime,
    give_up_after_seconds: float = DEFAULT_GIVE_UP_AFTER_SECONDS,
) -> CleanupResult:
    """One cleanup pass for a FederatedHPA that is being deleted."""
    result = CleanupResult()
    if not has_finalizer(fhpa):
        result.released = True
        return result
    for name in sorted(members):
        try:
            members[name].write(fhpa, HPAAction(cluster=name, op="delete"))
            result.removed.append(name)
        except NotFoundError:
            result.removed.append(name)
        except PortError as exc:
            result.failed[name] = str(exc)
    for name in _clusters_in_status(fhpa):
        if name not in members:
            result.failed[name] = "cluster is no longer registered"
    ref = f"{fhpa.metadata.namespace}/{fhpa.metadata.name}"
    if not result.failed:
        if not _release(fhpa, store, control_plane, result):
            return result
        _event(control_plane, fhpa, "Normal", "CleanedUp", _cleaned_message(fhpa, result.removed))
        log.info("member HPAs removed; finalizer released", extra={"object": ref})
        return result
    listing = ", ".join(f"{c} ({why})" for c, why in sorted(result.failed.items()))
    waited = _seconds_since_deletion(fhpa, now)
    if waited is not None and waited >= give_up_after_seconds:
        if not _release(fhpa, store, control_plane, result):
            return result
        _event(
            control_plane,
            fhpa,
            "Warning",
            "CleanupAbandoned",
            f"after {int(waited)}s the member HPA is left in: {listing}; "
            f"find it by the label {LABEL_OWNER_UID}={fhpa.metadata.uid}",
        )
        log.warning("cleanup abandoned", extra={"object": ref, "clusters": sorted(result.failed)})
        return result
    _report_pending(fhpa, control_plane, listing, now)
    _event(control_plane, fhpa, "Warning", "CleanupRetrying", f"member HPA not yet removed from: {listing}")
    result.requeue_after_seconds = RETRY_SECONDS
    return result


def _clusters_in_status(fhpa: FederatedHPA) -> list[str]:
    """Clusters that status says hold a member HPA of ours (max above 0)."""
    clusters = (fhpa.status.clusters if fhpa.status else None) or []
    return sorted(c.name for c in clusters if (c.max_replicas or 0) > 0)


def _seconds_since_deletion(fhpa: FederatedHPA, now: datetime) -> float | None:
    stamp = fhpa.metadata.deletion_timestamp
    if not stamp:
        return None
    try:
        since = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (now - since).total_seconds()


def _cleaned_message(fhpa: FederatedHPA, removed: list[str]) -> str:
    """Name the clusters that held a member HPA (status says which), not every cluster that was asked:
    an absent HPA is also a success, so counting the asked ones overstates what was removed."""
    held = [name for name in _clusters_in_status(fhpa) if name in removed]
    checked = count(len(removed), "cluster")
    if not held:
        return f"no member HPA was left to remove ({checked} checked)"
    return f"member HPAs removed from {count(len(held), 'cluster')} ({', '.join(held)}); {checked} checked"


def _release(
    fhpa: FederatedHPA, store: FinalizerStore, control_plane: ControlPlane, result: CleanupResult
) -> bool:
    """Take our finalizer off. When the API server refuses (an admission webhook that is down and sees
    this update, a policy engine), the object would stay "being deleted" with nothing said to the user
    who deleted it: a Warning Event names the refusal and the pass is retried. A conflict is not
    reported: it only means the object moved, and the caller requeues."""
    remaining = [f for f in fhpa.metadata.finalizers or [] if f != FINALIZER]
    try:
        store.set_finalizers(fhpa, remaining)
    except NotFoundError:  # already gone: nothing holds it any more
        pass
    except ConflictError:
        raise
    except PortError as exc:
        _event(control_plane, fhpa, "Warning", "FinalizerNotRemoved", f"{FINALIZER} not removed: {exc}")
        log.warning("finalizer not removed", extra={"object": fhpa.metadata.name, "error": str(exc)})
        result.requeue_after_seconds = RETRY_SECONDS
        return False
    result.released = True
    return True


def _report_pending(fhpa: FederatedHPA, control_plane: ControlPlane, listing: str, now: datetime) -> None:
    status = fhpa.status.model_copy(deep=True) if fhpa.status else FederatedHPAStatus()
    previous = status.conditions or []
    pending = condition(previous, CONDITION_CLEANUP, "True", "MemberUnreachable", listing, now)
    status.conditions = [c for c in previous if c.type != CONDITION_CLEANUP] + [pending]
    try:
        control_plane.update_federated_hpa_status(fhpa, status)
    except PortError as exc:  # the Event says it too; the next pass writes status again
        log.info("cleanup status not written", extra={"object": fhpa.metadata.name, "error": str(exc)})


def _event(
    control_plane: ControlPlane,
    fhpa: FederatedHPA,
    type_: Literal["Normal", "Warning"],
    reason: str,
    message: str,
) -> None:
    try:
        control_plane.emit_event(fhpa, type_, reason, message)
    except PortError as exc:
        log.info("event not recorded", extra={"object": fhpa.metadata.name, "error": str(exc)})
