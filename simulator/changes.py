"""Timed what-ifs of a scenario: the user edits the FederatedHPA, or relabels a cluster, mid-run.

A FederatedHPA change is a JSON merge patch (RFC 7386) of its spec, as ``kubectl patch --type merge``
applies it: mappings merge key by key, ``null`` removes a key, anything else (lists included) replaces.
It is applied to the object as stored at that instant (a cron rule may have moved its bounds) and
admitted as the API server would, so a patch the webhook would refuse fails the scenario's check, not
the run. A cluster's label change merges the same way (``null`` removes a label), as ``kubectl label
--overwrite`` and ``kubectl label key-`` would.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with the JSON merge patch ``patch`` applied (neither is changed)."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def relabel(labels: Mapping[str, str], change: Mapping[str, str | None]) -> dict[str, str]:
    """``labels`` with ``change`` merged in: a value sets a label, ``None`` removes it."""
    merged = merge_patch(labels, change)
    assert isinstance(merged, dict)
    return merged


def patched_object(raw: Mapping[str, Any], spec_patch: Mapping[str, Any]) -> dict[str, Any]:
    """A FederatedHPA manifest whose spec has ``spec_patch`` merged in (the rest kept as written)."""
    patched = copy.deepcopy(dict(raw))
    patched["spec"] = merge_patch(patched.get("spec") or {}, spec_patch)
    return patched
