"""What a pass's results change in what it planned: status and Events report what the members did.

The planner decides before any member has answered. A member may refuse the HPA it was sent (a metric
type its Kubernetes version does not know, an admission policy, a quota), and an operator reading status
during an incident must see that refusal, not the plan: a success Event for a write that failed, or
``Ready=True`` over a cluster that holds no HPA, sends them looking in the wrong place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from controller.errors import ClusterUnreachableError, NotOwnedError, PortError
from controller.planning.conditions import condition
from controller.planning.plan import EventRecord
from fhpa_api.models import Condition, FederatedHPAStatus

MEMBER_HPA_CONDITION = "MemberHPAWritten"
"""A cluster row's condition: did the member accept the HPA this controller last sent it."""

REJECTED = "MemberRejected"
UNREACHABLE = "MemberUnreachable"
NOT_OWNED = "NotOwned"
UNREGISTERED = "ClusterRemoved"

HPA_OPS = ("create", "update", "delete")


def reason_of(error: PortError) -> str:
    """The condition reason for a failed member write: the member answered no, or did not answer."""
    if isinstance(error, ClusterUnreachableError):
        return UNREACHABLE
    if isinstance(error, NotOwnedError):
        return NOT_OWNED
    return REJECTED


@dataclass(frozen=True)
class Refusal:
    """A member HPA write that did not happen: the cluster, why (a condition reason), the member's words."""

    cluster: str
    reason: str
    message: str


def refused_hpa_writes(failed: Mapping[str, str], reasons: Mapping[str, str]) -> list[Refusal]:
    """The failed writes of member HPAs (not replica writes), one per cluster, in cluster order."""
    found: dict[str, Refusal] = {}
    for label, message in failed.items():
        op, _, cluster = label.partition("/")
        if op in HPA_OPS:
            found[cluster] = Refusal(cluster, reasons.get(label, REJECTED), message)
    return [found[c] for c in sorted(found)]


def kept_events(events: Iterable[EventRecord], not_applied: set[str]) -> list[EventRecord]:
    """The planned Events less those announcing a member write that did not happen."""
    return [e for e in events if e.action is None or e.action not in not_applied]


def with_refusals(
    status: FederatedHPAStatus,
    refusals: list[Refusal],
    previous: FederatedHPAStatus | None,
    now: datetime,
) -> FederatedHPAStatus:
    """``status`` with each refusing cluster's row saying so, and ``Ready=False`` naming the clusters.

    A condition already reported keeps its lastTransitionTime, so a refusal repeated on every pass makes
    the same status and no new write.
    """
    if not refusals:
        return status
    status = status.model_copy(deep=True)
    old_rows = {r.name: r for r in (previous.clusters or [])} if previous is not None else {}
    by_cluster = {r.cluster: r for r in refusals}
    for row in status.clusters or []:
        refusal = by_cluster.get(row.name)
        if refusal is None:
            continue
        before = old_rows[row.name].conditions if row.name in old_rows else None
        written = condition(before, MEMBER_HPA_CONDITION, "False", refusal.reason, refusal.message, now)
        row.conditions = [c for c in row.conditions or [] if c.type != MEMBER_HPA_CONDITION] + [written]
    before_object = previous.conditions if previous is not None else None
    ready = condition(before_object, "Ready", "False", refusals[0].reason, _ready_message(refusals), now)
    status.conditions = _replace(status.conditions, ready)
    return status


def _ready_message(refusals: list[Refusal]) -> str:
    """Names every cluster whose HPA write failed and quotes the first member's words."""
    names = ", ".join(r.cluster for r in refusals)
    first = refusals[0]
    what = "refused the member HPA" if first.reason == REJECTED else "did not take the member HPA"
    return f"{names} {what}, so no replicas are written there ({first.cluster}: {first.message})"


def _replace(conditions: list[Condition] | None, new: Condition) -> list[Condition]:
    """The conditions with the one of ``new``'s type replaced in place (appended when absent)."""
    out = [new if c.type == new.type else c for c in conditions or []]
    return out if any(c.type == new.type for c in out) else [*out, new]
