"""A cluster's room, as `fhpa explain` says it: how much the last pass counted, of which kind, and why
the cluster is full or growing (the words the controller recorded in ``status.clusters[].capacity``)."""

from __future__ import annotations

from datetime import datetime

from fhpa_api.models import CapacityStatus


def room_line(capacity: CapacityStatus | None, now: datetime) -> list[str]:
    """One line, or none when status records no room (a controller before capacity signals, or a
    cluster whose capacity is unknown)."""
    if capacity is None or capacity.firm is None:
        return []
    kinds = f"{capacity.firm} firm + {capacity.elastic or 0} elastic"
    source = f" ({capacity.source})" if capacity.source else ""
    detail = capacity.detail or ""
    if capacity.coming_since is not None and detail.endswith("TriggeredScaleUp"):
        seconds = max(0, int((now - capacity.coming_since).total_seconds()))
        detail += f" {seconds} s ago"
    return [f"room: {kinds}{source}" + (f": {detail}" if detail else "")]
