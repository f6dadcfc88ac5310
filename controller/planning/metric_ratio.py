"""How far above (or below) its targets a member HPA's metrics are, from the HPA's own status.

A native HPA held at its max reports ``desiredReplicas`` = max: how many more replicas its load asks
for is not in that number. It is in ``status.currentMetrics`` against ``spec.metrics``: the HPA wants
about ``ceil(ratio * ready replicas)``, where ratio is the largest current/target over its metrics.
The controller uses that to start, in the next cluster, the pods a capped cluster cannot run
(DESIGN §4: a cluster woken or spilled into starts with what the others cannot hold, not with one).
This reads HPA status only, never pod metrics (DESIGN §1). Pure: plain dicts in, a number out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from fhpa_api.quantity import QuantityError, parse_quantity

_SOURCES = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}
# (target field, current field) by target type; quantities except averageUtilization (a percent)
_FIELDS = {
    "Utilization": ("averageUtilization", "averageUtilization"),
    "AverageValue": ("averageValue", "averageValue"),
    "Value": ("value", "value"),
}


def metric_ratio(
    spec_metrics: Iterable[Mapping[str, Any]], current_metrics: Iterable[Mapping[str, Any]]
) -> float | None:
    """The largest current/target ratio over the metrics both the spec and the status name, or None."""
    current = {_identity(m): m for m in current_metrics if isinstance(m, Mapping)}
    ratios = []
    for metric in spec_metrics:
        if not isinstance(metric, Mapping):
            continue
        status = current.get(_identity(metric))
        ratio = _ratio(metric, status) if status is not None else None
        if ratio is not None:
            ratios.append(ratio)
    return max(ratios) if ratios else None


def wanted_replicas(ratio: float | None, ready: int) -> int | None:
    """What the HPA's metrics ask for with ``ready`` replicas serving, before its min/max."""
    if ratio is None or ready <= 0:
        return None
    return math.ceil(Decimal(str(ratio)) * ready)  # Decimal: no float drift at a whole number


def _identity(metric: Mapping[str, Any]) -> tuple[str, str, str]:
    kind = str(metric.get("type") or "")
    source = metric.get(_SOURCES.get(kind, ""), None)
    if not isinstance(source, Mapping):
        return kind, "", ""
    if kind in ("Resource", "ContainerResource"):
        return kind, str(source.get("name") or ""), str(source.get("container") or "")
    named = source.get("metric")
    name = str(named.get("name") or "") if isinstance(named, Mapping) else ""
    described = source.get("describedObject")
    obj = f"{described.get('kind')}/{described.get('name')}" if isinstance(described, Mapping) else ""
    return kind, name, obj


def _ratio(spec: Mapping[str, Any], status: Mapping[str, Any]) -> float | None:
    kind = str(spec.get("type") or "")
    source, observed = spec.get(_SOURCES.get(kind, "")), status.get(_SOURCES.get(kind, ""))
    if not isinstance(source, Mapping) or not isinstance(observed, Mapping):
        return None
    target, current = source.get("target"), observed.get("current")
    if not isinstance(target, Mapping) or not isinstance(current, Mapping):
        return None
    fields = _FIELDS.get(str(target.get("type") or ""))
    if fields is None:
        return None
    wanted, seen = _number(target.get(fields[0])), _number(current.get(fields[1]))
    if wanted is None or seen is None or wanted <= 0:
        return None
    return float(seen / wanted)


def _number(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None
