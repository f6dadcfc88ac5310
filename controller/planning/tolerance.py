"""The band around a metric's target inside which an HPA asks for no change (DESIGN §4 Tolerance).

A FederatedHPA may set it per direction (``behavior.scaleUp.tolerance``, ``behavior.scaleDown.tolerance``);
the member HPAs carry the behavior as written, and the planner's own readings of their metrics (does a
cluster press for more, how many replicas the load asks for, has an External share moved enough to be
rewritten) use the same band. Were the planner to keep the native 10% while the members use 2%, it
would ignore load the members already act on, or act on load they ignore.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from fhpa_api.models import FederatedHPA, HPAScalingRules
from fhpa_api.quantity import QuantityError, parse_quantity

DEFAULT = Decimal("0.1")
"""The native HPA's tolerance when behavior does not set one."""


@dataclass(frozen=True)
class Tolerance:
    """How far above (``up``) or below (``down``) 1 a metric ratio may be and still ask for no change."""

    up: Decimal = DEFAULT
    down: Decimal = DEFAULT

    def asks_more(self, ratio: float | Decimal) -> bool:
        return Decimal(str(ratio)) > 1 + self.up

    def asks_fewer(self, ratio: float | Decimal) -> bool:
        return Decimal(str(ratio)) < 1 - self.down

    @property
    def narrowest(self) -> Decimal:
        """The smaller side: a change either direction would act on."""
        return min(self.up, self.down)


def tolerance_of(fhpa: FederatedHPA) -> Tolerance:
    """The FederatedHPA's tolerance per direction; 0.1 where its behavior does not set one."""
    behavior = fhpa.spec.behavior
    if behavior is None:
        return Tolerance()
    return Tolerance(up=_side(behavior.scale_up), down=_side(behavior.scale_down))


def _side(rules: HPAScalingRules | None) -> Decimal:
    if rules is None or rules.tolerance is None:
        return DEFAULT
    try:
        return parse_quantity(rules.tolerance)
    except QuantityError:  # admission refuses it; an object that got past it keeps the native band
        return DEFAULT
