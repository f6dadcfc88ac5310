"""The pause annotation: an operator's switch that freezes what the controller decides for one object.

It is an annotation rather than a spec field so that pausing changes no generation (a paused object's
spec is still what the user declared) and so that GitOps tools can toggle it with a metadata patch, as
they already do for KEDA's ``autoscaling.keda.sh/paused``. Only the exact value ``"true"`` pauses: a
typo such as ``"yes"`` must not silently freeze a fleet, and the webhook warns about it.
"""

from __future__ import annotations

from collections.abc import Mapping

PAUSED_ANNOTATION = "autoscaling.karmada.io/paused"
PAUSED_VALUE = "true"


def is_paused(annotations: Mapping[str, object] | None) -> bool:
    """Is the object paused? Only the annotation's exact value ``"true"`` counts."""
    return (annotations or {}).get(PAUSED_ANNOTATION) == PAUSED_VALUE


def odd_pause_value(annotations: Mapping[str, object] | None) -> object | None:
    """The annotation's value when it is set to something other than "true" or "false" (a warning)."""
    value = (annotations or {}).get(PAUSED_ANNOTATION)
    if value is None or value in (PAUSED_VALUE, "false"):
        return None
    return value
