"""The CRDs' list limits, checked on the raw object before anything builds models from it.

Building pydantic models (and a defaulting patch entry per list item) costs tens of kilobytes of memory
and many microseconds for each item, so a body of ``spec.metrics: [{}] x 780,000`` that the API server
would refuse anyway (maxItems) used to cost the webhook seconds and a hundred megabytes before it said
so. The walk here is iterative and touches each node of the spec once; the caller refuses the object
with the first over-long list's path and stops there.
"""

from __future__ import annotations

from typing import Any

from fhpa_api import limits

# Every list in our specs, by its field name: the same maxItems the CRD schema declares
# (scripts/gen_crds.py). A field name means the same list wherever it appears in a spec.
LIST_LIMITS = {
    "metrics": limits.METRICS_MAX_ITEMS,
    "rules": limits.RULES_MAX_ITEMS,
    "policies": limits.POLICIES_MAX_ITEMS,
    "matchExpressions": limits.SELECTOR_EXPRESSIONS_MAX_ITEMS,
    "values": limits.SELECTOR_VALUES_MAX_ITEMS,
    "clusterNames": limits.CLUSTER_NAMES_MAX_ITEMS,
    "exclude": limits.CLUSTER_NAMES_MAX_ITEMS,
    "clusterAutoscalingPreference": limits.PREFERENCES_MAX_ITEMS,
}
# A list under a name the schema does not know is pruned or refused later; until then it is held to the
# largest limit any of our lists has, so that no name escapes the bound.
OTHER_LIST_MAX_ITEMS = max(LIST_LIMITS.values())


def oversized_list(obj: Any) -> tuple[str, int, int] | None:
    """The first list in ``obj["spec"]`` longer than the CRD allows, as (path, length, limit); else None."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    stack: list[tuple[str, str, Any]] = [("spec", "spec", spec)]
    while stack:
        path, name, node = stack.pop()
        if isinstance(node, dict):
            stack.extend((f"{path}.{key}", str(key), value) for key, value in node.items())
        elif isinstance(node, list):
            limit = LIST_LIMITS.get(name, OTHER_LIST_MAX_ITEMS)
            if len(node) > limit:
                return path, len(node), limit
            stack.extend((f"{path}[{i}]", name, item) for i, item in enumerate(node))
    return None


def oversized_message(found: tuple[str, int, int]) -> str:
    """The field error's message for what `oversized_list` found."""
    _, length, limit = found
    return f"has {length} items; at most {limit} are allowed"
