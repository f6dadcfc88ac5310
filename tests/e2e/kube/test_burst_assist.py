"""Burst assist against the real v1.20 HPA: the replicas it starts survive the member HPA.

A member HPA left alone takes away replicas none of its recommendations asked for as soon as its
downscale window lets it (bench/burst_interplay.py measured it). The controller holds the member HPA's
minReplicas at the count it wrote for that window, so the real HPA keeps them.
"""

from __future__ import annotations

import re
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

    for member in world.members.values():
        member.create_deployment(world.ns, "web", replicas=1, cpu=f"{POD_MILLI}m")
    world.start_controller()
    world.create_fhpa(fhpa_spec())
    wait_for(lambda: all(world.bounds().values()), 60, "member HPAs on both members")
    kube_load.set_demand(world.ns, "web", BURST_DEMAND)

    def assisted() -> tuple[str, int] | None:
        for event in world.core.store.list_objects("events", world.ns)[0]:
            if event.get("reason") == "BurstAssisted":
                name, count = re.findall(r"(\S+) -> (\d+)", event["message"])[-1]
                return name, int(count)
        return None

    name, written = wait_for(assisted, 120, "a BurstAssisted write")
    member = world.members[name]
    held = wait_for(lambda: (b := world.bounds().get(name)) and b[0] >= written and b, 30, "minReplicas held")
    assert held[0] == written
    since = time.monotonic()

    def replicas() -> int:
        return int(member.get(f"/apis/apps/v1/namespaces/{world.ns}/deployments/web")["spec"]["replicas"])

    # past the member HPA's window and a few of its syncs, the written replicas are all still there
    lowest = written
    while time.monotonic() - since < MEMBER_WINDOW_S + 3 * 2.0:
        lowest = min(lowest, replicas())
        time.sleep(0.5)
    assert lowest >= written, f"{name}: the member HPA took {written - lowest} assisted replicas away"
