"""Burst assist against the real v1.20 HPA: the replicas it starts survive the member HPA.

A member HPA left alone takes away replicas none of its recommendations asked for as soon as its
downscale window lets it (bench/burst_interplay.py measured it). The controller holds the member HPA's
minReplicas at the count it wrote for that window, so the real HPA keeps them.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.kube.test_controller import KubeWorld, world  # noqa: F401  (the fixture)
from tests.support.kube_load import LoadModel
from tests.support.kubemember import wait_for

pytestmark = [pytest.mark.kube, pytest.mark.realapi, pytest.mark.slow]

MEMBER_WINDOW_S = 10.0  # the kube tier's --horizontal-pod-autoscaler-downscale-stabilization


def test_assisted_replicas_outlive_the_member_hpas_downscale_window(
    world: KubeWorld,  # noqa: F811
    kube_load: LoadModel,
) -> None:
    from bench.burst_interplay import BURST_DEMAND, POD_MILLI, fhpa_spec

    m1, m2 = world.members["m1"], world.members["m2"]
    m1.create_deployment(world.ns, "web", replicas=1, cpu=f"{POD_MILLI}m")
    m2.create_deployment(world.ns, "web", replicas=0, cpu=f"{POD_MILLI}m")
    world.start_controller()
    # m2 waits at 0 (scalingToZero), where its HPA cannot scale: only the assist starts pods there, once
    # m1 runs its max; the spill's delay is long, so the assist, not the spill, answers first
    world.create_fhpa({**fhpa_spec(), "scalingToZero": True, "autoscaleMultiClusterDelay": 120})
    wait_for(lambda: all(world.bounds().values()), 60, "member HPAs on both members")
    kube_load.set_demand(world.ns, "web", BURST_DEMAND)

    def held() -> tuple[str, int] | None:
        rows = ((world.fhpa() or {}).get("status") or {}).get("clusters") or []
        return next(((r["name"], r["pinnedMinReplicas"]) for r in rows if r.get("assistHeldUntil")), None)

    name, written = wait_for(held, 120, "a burst assist held in status")
    wait_for(lambda: (b := world.bounds().get(name)) and b[0] == written, 30, "the member HPA's min raised")
    member = world.members[name]
    since = time.monotonic()

    def shortfall() -> int:
        """Assisted replicas missing now, of those the member HPA's max still allows: a max the
        controller lowers (m1 capped at the pods its node holds) is not the HPA taking them."""
        deployment = member.get(f"/apis/apps/v1/namespaces/{world.ns}/deployments/web")
        bounds = world.bounds().get(name)
        allowed = min(written, bounds[1]) if bounds else written
        return max(0, allowed - int(deployment["spec"]["replicas"]))

    # past the member HPA's window and a few of its syncs, the written replicas are all still there
    worst = 0
    while time.monotonic() - since < MEMBER_WINDOW_S + 3 * 2.0:
        worst = max(worst, shortfall())
        time.sleep(0.5)
    assert worst == 0, f"{name}: the member HPA took {worst} of the {written} assisted replicas away"
