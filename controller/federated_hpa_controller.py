"""The FederatedHPA reconciler: one pass for one object, from a fresh read to a ``Result``.

``reconcile.reconcile_federated_hpa`` is the observe-plan-execute step; this is everything around it that
decides whether that step may run at all and what its outcome means to the caller: the namespace guard,
the wait for member clusters that are known to exist but not registered yet, the finalizer (added before
any member write, and the member clean-up when the object is being deleted), and the translation of an
``ExecutionResult`` into a requeue or a retry. The runtime's workers and the simulator both call it, so
every one of these paths runs in simulation as it does in production; only the ports differ.

Namespaces: an object in a namespace ``namespaces`` refuses is not acted on: no member is read or
written, no finalizer is added; its status says Ready=False (NamespaceNotAllowed) with a Warning Event,
once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Protocol

from controller import finalizer
from controller.errors import ConflictError, PortError
from controller.executor import ActionHook
from controller.planning.member_hpa import LABEL_OWNER_UID
from controller.planning.namespaces import (
    REASON_NAMESPACE_NOT_ALLOWED,
    NamespacePolicy,
    is_refused,
    refused_conditions,
)
from controller.planning.planner import PlannerConfig
from controller.ports import Clock, ControlPlane, MemberCluster
from controller.reconcile import PassHook, reconcile_federated_hpa
from controller.result import Result
from fhpa_api import FEDERATED_HPA
from fhpa_api.models import FederatedHPA, FederatedHPAStatus

log = logging.getLogger(__name__)

CleanupHook = Callable[[finalizer.CleanupResult], None]


class FederatedHPAStore(ControlPlane, finalizer.FinalizerStore, Protocol):
    """The control plane as this reconciler writes it: the port plus the finalizer list."""


@dataclass
class FederatedHPAReconciler:
    """Reconciles FederatedHPAs through the ports; ``members`` and ``unknown`` are asked on every pass."""

    control_plane: FederatedHPAStore
    members: Callable[[], Mapping[str, MemberCluster]]
    clock: Clock
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    _: KW_ONLY
    namespaces: NamespacePolicy = field(default_factory=NamespacePolicy)
    unknown: Callable[[], Sequence[str]] = tuple
    cleanup_give_up_seconds: float = finalizer.DEFAULT_GIVE_UP_AFTER_SECONDS
    on_action: ActionHook | None = None
    on_pass: PassHook | None = None
    on_cleanup: CleanupHook | None = None

    def reconcile(self, namespace: str, name: str) -> Result:
        """One pass; raises ConflictError or PortError when the pass must be retried with backoff.

        The object is read fresh from the control plane, never taken from a watch cache: member clusters
        are written before the status write, so a stale object (an older spec, or a status that no longer
        says what the members hold) must never drive a member write. The watch only says which object to
        look at.
        """
        fhpa = self.control_plane.get_federated_hpa(namespace, name)
        if fhpa is None:
            return Result()
        refusal = self.namespaces.refusal(namespace)
        if refusal is not None:  # before anything touches a member: no observe, no HPA, no scale
            self._refuse(fhpa, refusal)
            return Result()
        unknown = list(self.unknown())
        if unknown:  # unknown is not absent: planning now would move their share away
            raise PortError(f"member clusters not registered yet: {', '.join(unknown)}; waiting for them")
        members = self.members()
        if finalizer.is_deleting(fhpa):
            return self._clean_up(fhpa, members)
        fhpa = finalizer.ensure_finalizer(fhpa, self.control_plane)
        the_plan, result = reconcile_federated_hpa(
            fhpa,
            members,
            self.control_plane,
            self.clock,
            self.planner,
            on_action=self.on_action,
            on_pass=self.on_pass,
        )
        if result.conflict:
            where = (
                "member objects changed since they were observed: " + ", ".join(sorted(result.stale))
                if result.stale
                else "it changed during the reconcile"
            )
            raise ConflictError(f"FederatedHPA {namespace}/{name}: {where}; replanning")
        if result.failed:
            raise PortError("; ".join(f"{k}: {v}" for k, v in sorted(result.failed.items())))
        return Result.after(the_plan.requeue_after_seconds, the_plan.requeue_routine)

    def _clean_up(self, fhpa: FederatedHPA, members: Mapping[str, MemberCluster]) -> Result:
        cp = self.control_plane
        cleaned = finalizer.clean_up(fhpa, members, cp, cp, self.clock.now(), self.cleanup_give_up_seconds)
        if self.on_action is not None:
            for cluster in cleaned.removed:
                self.on_action("delete", cluster, True)
        if self.on_cleanup is not None:
            self.on_cleanup(cleaned)
        return Result.after(cleaned.requeue_after_seconds)

    def _refuse(self, fhpa: FederatedHPA, message: str) -> None:
        """A FederatedHPA in a namespace the controller may not act in: say so, touch no member.

        No finalizer is added. One being deleted that still carries ours (it was made while its
        namespace was allowed) has the finalizer released without cleaning the members, and the
        Warning Event names the label that finds any member HPA left behind.
        """
        cp = self.control_plane
        ref = f"{fhpa.metadata.namespace}/{fhpa.metadata.name}"
        if finalizer.is_deleting(fhpa):
            if finalizer.has_finalizer(fhpa):
                remaining = [f for f in fhpa.metadata.finalizers or [] if f != finalizer.FINALIZER]
                cp.set_finalizers(fhpa, remaining)
                self._warn(
                    fhpa,
                    f"{message}. Finalizer released without cleaning member clusters; a member HPA made "
                    f"earlier has the label {LABEL_OWNER_UID}={fhpa.metadata.uid}",
                )
            return
        previous = fhpa.status.conditions if fhpa.status else None
        if is_refused(previous, message):
            return  # already reported
        status = fhpa.status.model_copy(deep=True) if fhpa.status else FederatedHPAStatus()
        status.conditions = refused_conditions(previous, message, self.clock.now())
        status.observed_generation = fhpa.metadata.generation
        cp.update_federated_hpa_status(fhpa, status)
        log.warning("namespace not allowed; not acting", extra={"object": ref, "kind": FEDERATED_HPA})
        self._warn(fhpa, message)

    def _warn(self, fhpa: FederatedHPA, message: str) -> None:
        try:
            self.control_plane.emit_event(fhpa, "Warning", REASON_NAMESPACE_NOT_ALLOWED, message)
        except PortError as exc:  # an Event is best effort; status is the record
            log.info("event not recorded", extra={"object": fhpa.metadata.name, "error": str(exc)})
