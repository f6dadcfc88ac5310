"""The member HPA's own health, carried into the cluster's status row.

A member HPA that cannot read its metrics (a broken metrics-server or adapter: the commonest HPA
failure) keeps its replicas where they are and says so only in its own conditions. Without them in our
status, "10 running, 2 wanted" reads as the load falling; with them, the reader sees the HPA is blind.
"""

from __future__ import annotations

from datetime import datetime

from controller.planning.conditions import condition
from controller.planning.observation import ClusterObservation
from fhpa_api.limits import HISTORY_MESSAGE_MAX_CHARS as DETAIL_MAX
from fhpa_api.models import Condition

MEMBER_CONDITIONS = ("ScalingActive", "AbleToScale", "ScalingLimited")
"""The autoscaling/v2 HPA conditions a row carries, each under the type ``Member<type>``."""

PREFIX = "Member"

METRICS_UNAVAILABLE = "MetricsUnavailable"

_BLIND_REASONS = ("FailedGet", "FailedComputeMetricsReplicas", "InvalidMetricSourceType", "InvalidSelector")
"""ScalingActive=False reasons that mean the HPA cannot compute a recommendation from its metrics (the
others, ScalingDisabled for a workload at 0, are a choice, not a fault)."""


def member_conditions(
    cluster: ClusterObservation, previous: list[Condition] | None, now: datetime
) -> list[Condition]:
    """Our member HPA's conditions, as ``MemberScalingActive`` and so on, with the member's reason and
    message (cut); none when the cluster holds no HPA of ours or was not observed this pass."""
    hpa = cluster.hpa
    if not cluster.healthy or hpa is None or not hpa.owned:
        return []
    out = []
    for type_ in MEMBER_CONDITIONS:
        theirs = hpa.condition(type_)
        if theirs is not None:
            message = (theirs.message or "")[:DETAIL_MAX]
            out.append(condition(previous, PREFIX + type_, theirs.status, theirs.reason or "", message, now))
    return out


def blind_reason(cluster: ClusterObservation) -> str | None:
    """The member's reason when our HPA there cannot read its metrics (ScalingActive False for a
    metrics failure), else None."""
    hpa = cluster.hpa
    if not cluster.healthy or hpa is None or not hpa.owned:
        return None
    active = hpa.condition("ScalingActive")
    if active is None or active.status != "False" or not active.reason:
        return None
    return active.reason if active.reason.startswith(_BLIND_REASONS) else None


def was_blind(previous: list[Condition] | None) -> bool:
    """Did the row already report the member HPA blind (so its Warning was already recorded)?"""
    return any(
        c.type == PREFIX + "ScalingActive"
        and c.status == "False"
        and (c.reason or "").startswith(_BLIND_REASONS)
        for c in previous or []
    )


def blind_message(cluster: ClusterObservation) -> str:
    """The Warning's words: which cluster, and the member's own reason and message."""
    hpa = cluster.hpa
    active = hpa.condition("ScalingActive") if hpa is not None else None
    detail = (
        f"{active.reason}: {active.message}"
        if active is not None and active.message
        else blind_reason(cluster)
    )
    return (
        f"metrics unavailable in {cluster.name}: its member HPA cannot read its metrics and holds its "
        f"replicas where they are ({(detail or '')[:DETAIL_MAX]})"
    )


def row_lines(conditions: list[Condition] | None, cluster: str) -> list[str]:
    """What a status row says about its member HPA's health, in explain's words: a blind HPA, and an
    HPA that cannot scale or is held at a bound by the member's own reason."""
    lines = []
    for c in conditions or []:
        if (
            c.type == PREFIX + "ScalingActive"
            and c.status == "False"
            and (c.reason or "").startswith(_BLIND_REASONS)
        ):
            lines.append(f"metrics unavailable in {cluster}: its member HPA says {c.reason}: {c.message}")
        elif c.type == PREFIX + "AbleToScale" and c.status == "False":
            lines.append(f"its member HPA cannot scale: {c.reason}: {c.message}")
    return lines
