"""Carries out a plan through the ports: the only place where planning turns into side effects.

Order matters while capacity moves between clusters: member HPAs whose max rises are written before
those whose max falls (the fleet never dips below what it had), creations before deletions, replica
writes after the HPAs that bound them, and status last, so that a crash part-way leaves the previous
status in the API and the next pass redoes what is missing (every action is idempotent).

Every member write is conditional on the observation the plan was made from (plan.bind: the observed
resourceVersion; a create, that the HPA was absent). A 409 means the object changed since the pass
looked: the write is reported stale (``ExecutionResult.stale``) and the object requeued to be replanned
from a fresh observation, never retried here with a fresh read. The status records, per cluster, the
decision key (member_hpa.decision_key) its member HPA holds after this pass's writes.

What is recorded follows what the members did, not what was planned (controller.outcome): replicas are
never written to a cluster whose HPA write failed in the same pass (they would run with no HPA over
them), an Event announcing a write that did not happen is dropped, and a refusal shows in the cluster's
status row and in ``Ready``.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

from controller.errors import ClusterUnreachableError, ConflictError, NotFoundError, NotOwnedError, PortError
from controller.outcome import UNREGISTERED, kept_events, reason_of, refused_hpa_writes, with_refusals
from controller.planning.plan import HPAAction, Plan
from controller.ports import ControlPlane, MemberCluster
from fhpa_api.models import FederatedHPA, FederatedHPAStatus

log = logging.getLogger(__name__)

PUBLIC_TEXT_LIMIT = 300
"""The most characters of one member error that an Event, a status message or a log line carries."""

_REDACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM blocks (a key or certificate quoted back), whole
    (re.compile(r"-----BEGIN [A-Z ]+-----.*?(-----END [A-Z ]+-----|$)", re.S), "<redacted>"),
    # Authorization header values and anything called a token, password or secret with a value
    (re.compile(r"\b(Bearer|Basic)\s+\S+", re.I), r"\1 <redacted>"),
    (
        re.compile(
            r"""\b(token|password|passwd|secret|api[-_]?key|authorization)("?\s*[:=]\s*"?)[^\s",}]+""", re.I
        ),
        r"\1\2<redacted>",
    ),
    # JWTs (ServiceAccount tokens) and other long base64/hex blobs
    (re.compile(r"\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*"), "<redacted>"),
    (re.compile(r"\b[0-9a-fA-F]{40,}\b"), "<redacted>"),
    # identities: 'User "system:serviceaccount:ns:name" cannot ...' tells a reader who we are in that cluster
    (re.compile(r"""\b(User|Group|user|group|username|subject)\s+"[^"]*\""""), r'\1 "<redacted>"'),
    (re.compile(r"""\bsystem:(serviceaccount|node)s?:[^\s"',;]+"""), r"system:\1:<redacted>"),
)

_BLOB = re.compile(r"[A-Za-z0-9+/_=-]{32,}")


def _redact_blob(match: re.Match[str]) -> str:
    """A long run of base64 characters with upper case, lower case and digits is a key or token; a path
    (``/apis/apps/v1/namespaces/...``: Kubernetes names are lower case) is kept."""
    blob = match.group()
    mixed = (
        any(c.isupper() for c in blob) and any(c.islower() for c in blob) and any(c.isdigit() for c in blob)
    )
    return "<redacted>" if mixed else blob


def public_text(text: str, limit: int = PUBLIC_TEXT_LIMIT) -> str:
    """Member error text made fit for Events (readable by the FederatedHPA's namespace) and logs: one line,
    at most ``limit`` characters, with what looks like a credential or a member identity replaced by
    ``<redacted>`` (bearer and basic credentials, ``token=...``, JWTs, long base64 or hex blobs, PEM blocks,
    ``User "..."`` and ``system:serviceaccount:...`` names)."""
    text = "".join(c if c.isprintable() else " " for c in str(text))
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    text = _BLOB.sub(_redact_blob, text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class ExecutionResult:
    done: list[str] = field(default_factory=list)  # "create/member1", "scale/member2=3", ...
    failed: dict[str, str] = field(default_factory=dict)  # action -> error message
    # member writes refused with 409: the object changed since the pass observed it (not applied)
    stale: dict[str, str] = field(default_factory=dict)
    # failed action -> the condition reason it gives (controller.outcome: refused, unreachable, ...)
    reasons: dict[str, str] = field(default_factory=dict)
    # replica writes not attempted because the cluster's HPA write failed or went stale in this pass
    skipped: list[str] = field(default_factory=list)
    conflict: bool = False  # the FederatedHPA or a member object changed under us: re-read and re-plan
    updated: FederatedHPA | None = None  # the object as stored after the status write

    @property
    def ok(self) -> bool:
        return not self.failed and not self.conflict


ActionHook = Callable[[str, str, bool], None]
"""Called per member action with (kind, cluster, succeeded): metrics and the simulator's counters."""


def _order(actions: list[HPAAction], current_max: Mapping[str, int]) -> list[HPAAction]:
    def key(action: HPAAction) -> tuple[int, int, str]:
        if action.op == "delete":
            return (2, 0, action.cluster)
        delta = (action.max_replicas or 0) - current_max.get(action.cluster, 0)
        return (0 if delta >= 0 else 1, -delta, action.cluster)

    return sorted(actions, key=key)


def _record_decisions(plan: Plan, applied: Mapping[str, str | None]) -> FederatedHPAStatus:
    """The planned status with each cluster's row recording the decision key its member HPA holds after
    this pass's writes (a failed or refused write leaves the key observed before it)."""
    if not applied or not plan.status.clusters:
        return plan.status
    status = plan.status.model_copy(deep=True)
    for row in status.clusters or []:
        if row.name in applied:
            row.decision_key = applied[row.name]
    return status


def execute(
    plan: Plan,
    fhpa: FederatedHPA,
    members: Mapping[str, MemberCluster],
    control_plane: ControlPlane,
    current_max: Mapping[str, int] | None = None,
    on_action: ActionHook | None = None,
    now: datetime | None = None,
) -> ExecutionResult:
    """Apply ``plan`` for ``fhpa``. ``current_max`` is each member HPA's max as observed; ``now`` dates a
    condition that a member's refusal turns (the pass's clock; the wall clock when not given)."""
    result = ExecutionResult()
    ref = f"{fhpa.metadata.namespace}/{fhpa.metadata.name}"

    def attempt(kind: str, cluster: str, call: Callable[[], None]) -> bool:
        label = f"{kind}/{cluster}"
        try:
            call()
        except ConflictError as exc:
            # changed since we looked: not applied, and never retried with a fresh read; the next pass
            # replans from a fresh observation
            result.stale[label] = public_text(str(exc))
            result.conflict = True
            log.info(
                "member write refused: changed since observed",
                extra={"object": ref, "action": label, "error": result.stale[label]},
            )
            if on_action:
                on_action(kind, cluster, False)
            return False
        except (ClusterUnreachableError, NotOwnedError, PortError) as exc:
            error = public_text(str(exc))
            result.failed[label] = error
            result.reasons[label] = reason_of(exc)
            log.warning("member action failed", extra={"object": ref, "action": label, "error": error})
            if on_action:
                on_action(kind, cluster, False)
            return False
        result.done.append(label)
        if on_action:
            on_action(kind, cluster, True)
        return True

    applied: dict[str, str | None] = {}  # cluster -> the decision key its member HPA now holds
    for action in _order(plan.hpa_actions, current_max or {}):
        member = members.get(action.cluster)
        if member is None:
            result.failed[f"{action.op}/{action.cluster}"] = "cluster is no longer registered"
            result.reasons[f"{action.op}/{action.cluster}"] = UNREGISTERED
            continue
        if attempt(action.op, action.cluster, partial(member.write, fhpa, action)):
            applied[action.cluster] = None if action.op == "delete" else action.decision

    unbound = {label.partition("/")[2] for label in [*result.failed, *result.stale]}
    for write in plan.replica_writes:
        member = members.get(write.cluster)
        if write.cluster in unbound:
            # promise 2: no replicas without the HPA that bounds them; the next pass tries both again
            result.skipped.append(f"scale/{write.cluster}")
            continue
        if member is None:
            result.failed[f"scale/{write.cluster}"] = "cluster is no longer registered"
            continue
        attempt("scale", write.cluster, partial(member.write, fhpa, write))

    try:
        refusals = refused_hpa_writes(result.failed, result.reasons)
        when = now or datetime.now(UTC)
        status = with_refusals(_record_decisions(plan, applied), refusals, fhpa.status, when)
        if status == fhpa.status:
            result.updated = fhpa  # nothing new to record: no write (a thousand idle objects, no requests)
        else:
            result.updated = control_plane.update_federated_hpa_status(fhpa, status)
    except ConflictError:
        result.conflict = True
    except NotFoundError:
        result.conflict = True  # deleted meanwhile; the next pass sees it gone

    for event in kept_events(plan.events, {*result.failed, *result.stale, *result.skipped}):
        try:
            control_plane.emit_event(fhpa, event.type, event.reason, event.message)
        except PortError as exc:  # an Event is best effort; never fail a reconcile on it
            log.warning("event not recorded", extra={"object": ref, "error": str(exc)})
    for label, message in result.failed.items():
        with contextlib.suppress(PortError):  # best effort, as above
            control_plane.emit_event(fhpa, "Warning", "MemberActionFailed", f"{label}: {message}")
    return result
