"""The planner reads the member HPAs' metrics with the FederatedHPA's own tolerance (DESIGN §4 Tolerance).

Checked against the simulator's native HPA given the member spec the planner renders: at a ratio where
the member scales up, the planner sees a cluster pressing for more; where it scales down, the planner
sees fewer replicas asked for; inside the band, neither.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from controller.planning import burst
from controller.planning.external_share import moved
from controller.planning.fleet import Fleet, Slot
from controller.planning.member_hpa import render_spec
from controller.planning.observation import MemberHPAObservation
from controller.planning.tolerance import Tolerance, tolerance_of
from simulator.native_hpa import NativeHPA
from simulator.replica_calculator import PodReadings
from tests.support.planning_builders import T0, fhpa, obs

TARGET_UTILIZATION = 50
READY = 40
MAX = 100
CPU = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
    }
]


def with_tolerance(up: str | None, down: str | None) -> Any:
    behavior: dict[str, Any] = {"scaleDown": {"stabilizationWindowSeconds": 0}, "scaleUp": {}}
    if up is not None:
        behavior["scaleUp"]["tolerance"] = up
    if down is not None:
        behavior["scaleDown"]["tolerance"] = down
    return fhpa("StaticWeighted", 1, MAX, weights={"a": 1}, metrics=CPU, behavior=behavior)


def native_replicas(f: Any, ratio: float) -> int:
    """What the simulator's native HPA, given the member spec the planner writes, does at ``ratio``."""
    hpa = NativeHPA("web", render_spec(f, 1, MAX))
    usage = round(READY * 1000 * TARGET_UTILIZATION / 100 * ratio)
    pods = PodReadings(ready=READY, usage_total=usage, request_per_pod=1000)
    return hpa.sync(T0 + timedelta(seconds=15), READY, pods).replicas


def planner_fleet(f: Any, ratio: float) -> tuple[Fleet, Slot]:
    hpa = MemberHPAObservation(
        name="web", owned=True, min_replicas=1, max_replicas=READY, current_replicas=READY, metric_ratio=ratio
    )
    slot = Slot(cluster=obs("a", READY, hpa=hpa), min_replicas=1, max_replicas=READY)
    return Fleet(fhpa=f, now=T0, slots={"a": slot}), slot


CASES = [
    # tolerance 0.02 each way: 5% off target is outside the band
    ("20m", 1.05, "up"),
    ("20m", 1.01, "none"),
    ("20m", 0.95, "down"),
    ("20m", 0.99, "none"),
    # tolerance 0.3: 20% off target is inside it
    ("300m", 1.2, "none"),
    ("300m", 1.4, "up"),
    ("300m", 0.8, "none"),
    ("300m", 0.6, "down"),
]


@pytest.mark.parametrize(("tolerance", "ratio", "way"), CASES)
def test_the_planner_and_the_native_hpa_agree_on_the_band(tolerance: str, ratio: float, way: str) -> None:
    f = with_tolerance(tolerance, tolerance)
    replicas = native_replicas(f, ratio)
    assert {"up": replicas > READY, "down": replicas < READY, "none": replicas == READY}[way], replicas
    fleet, slot = planner_fleet(f, ratio)
    assert fleet.presses_for_more(slot) == (way == "up")
    assert (burst.deficit(fleet) > 0) == (way == "up")
    assert (burst.surplus(fleet) > 0) == (way == "down")


def test_each_direction_has_its_own_tolerance() -> None:
    f = with_tolerance("20m", "300m")
    assert tolerance_of(f) == Tolerance(up=Decimal("0.02"), down=Decimal("0.3"))
    assert native_replicas(f, 1.05) > READY and native_replicas(f, 0.8) == READY
    fleet, _ = planner_fleet(f, 0.8)
    assert burst.surplus(fleet) == 0


def test_unset_is_the_native_tenth() -> None:
    assert tolerance_of(fhpa("StaticWeighted", 1, 10, weights={"a": 1})) == Tolerance(
        Decimal("0.1"), Decimal("0.1")
    )
    f = with_tolerance(None, "20m")
    assert tolerance_of(f).up == Decimal("0.1")
    fleet, slot = planner_fleet(f, 1.05)
    assert not fleet.presses_for_more(slot) and native_replicas(f, 1.05) == READY


def test_the_external_share_threshold_follows_the_narrower_tolerance() -> None:
    assert not moved(500, 549) and moved(500, 551)  # the native tenth
    assert moved(500, 530, Decimal("0.05")) and not moved(500, 549, Decimal("0.3"))
