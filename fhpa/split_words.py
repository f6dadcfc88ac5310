"""The assignment's split for one cluster, in words, from what status recorded of it (``SplitStatus``).

Every number printed is a recorded field, or F.min/F.max from the spec, or a sum of recorded fields
(a weight's total, the count of clusters ranked): nothing is recomputed from the rooms of a later pass,
so the line says what the controller did, including the cap at each cluster's room and where the
excess went.
"""

from __future__ import annotations

from collections.abc import Mapping

from fhpa_api.models import FederatedHPA, SplitStatus

ORDERS = {"Aggregated": "by room", "Prioritized": "by priority"}


def split_line(fhpa: FederatedHPA, name: str, records: Mapping[str, SplitStatus]) -> str:
    """The line for cluster ``name`` (which has a record in ``records``, every cluster's by name)."""
    policy = fhpa.spec.assignment_type
    split = records[name]
    head = [_weight(split, records, policy)] if split.weight is not None else []
    if split.priority is not None:
        head.append(f"priority {split.priority}")
    if policy in ORDERS and split.rank is not None:
        head.append(f"rank {split.rank} of {len(records)} {ORDERS[policy]}")
    verb = "fills" if policy in ORDERS else "divides"
    line = (
        f"{policy}: {', '.join(head) or 'its share'}: F.max {fhpa.spec.max_replicas} {verb} to max "
        f"{split.max_share}, F.min {fhpa.spec.effective_min} to min {split.min_share}"
    )
    if (split.min_share or 0) < 1 <= (split.max_share or 0):
        line += "; every member HPA has min >= 1"
    line += f"; {_room(split)}"
    if split.excess:
        line += f"; its max holds the excess {split.excess} that no cluster had room for"
    return line


def _weight(split: SplitStatus, records: Mapping[str, SplitStatus], policy: str) -> str:
    weights = {n: r.weight for n, r in records.items() if r.weight is not None}
    shown = ", ".join(f"{n} {w}" for n, w in sorted(weights.items()))
    what = "; each its room at assignment" if policy == "DynamicWeighted" else ""
    return f"weight {split.weight} of {sum(weights.values())} ({shown}{what})"


def _room(split: SplitStatus) -> str:
    if split.room is None:
        return "its room unknown at assignment (no cap)"
    return f"each share capped at its room {split.room} at assignment"
