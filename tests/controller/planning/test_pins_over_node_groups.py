"""Pins over clusters whose nodes come and go with their pods (DESIGN §3 Capacity, §4 Prioritized
scale-down): when the load falls, the node groups shed first, and only down to the nodes their mins
keep."""

from __future__ import annotations

import pytest

from controller.planning import priority
from controller.planning.fleet import Fleet, Slot
from controller.planning.observation import CapacityObservation
from tests.support.planning_builders import T0, fhpa, obs, owned_hpa

NODE_GROUP = CapacityObservation(firm=60, elastic=340, source="cluster-autoscaler", pods_per_node=10)
FIXED = CapacityObservation(firm=40, source="quota")


def after_a_burst(
    policy: str, cloud_runs: int, scaling_to_zero: bool = False
) -> tuple[Fleet, dict[str, Slot]]:
    """On-prem (fixed room, 40) and a cloud node group running ``cloud_runs``; the load falls (the
    cloud's HPA wants half of what it runs)."""
    extra = {"priorities": {"onprem": 2, "cloud": 1}} if policy == "Prioritized" else {}
    f = fhpa(policy, 2, 200, scalingToZero=scaling_to_zero, **extra)
    slots = {
        "onprem": Slot(
            cluster=obs("onprem", 40, 40, hpa=owned_hpa(f, 1, 40, 40), capacity=FIXED),
            min_replicas=1,
            max_replicas=40,
        ),
        "cloud": Slot(
            cluster=obs(
                "cloud",
                cloud_runs,
                400,
                hpa=owned_hpa(f, 1, 160, cloud_runs, desired=cloud_runs // 2),
                capacity=NODE_GROUP,
            ),
            min_replicas=1,
            max_replicas=160,
        ),
    }
    return Fleet(fhpa=f, now=T0, slots=slots), slots


@pytest.mark.parametrize("policy", ["StaticWeighted", "DynamicWeighted", "Aggregated"])
def test_the_divided_policies_pin_fixed_room_while_a_node_group_sheds(policy: str) -> None:
    """Found by the hybrid-quota-cloud bench fleet: after the campaign both member HPAs shed side by
    side, and the cloud kept 2 to 3 nodes for hours while on-prem ran 8 pods under a quota of 40."""
    fleet, slots = after_a_burst(policy, 60)
    priority.pin_and_release(fleet)
    assert slots["onprem"].pin == 40
    assert slots["cloud"].pin is None
    # down to the node its min keeps, the cloud frees nothing more: on-prem is let go
    fleet, slots = after_a_burst(policy, 8)
    slots["onprem"].pin = 40
    assert priority.pin_and_release(fleet)
    assert slots["onprem"].pin is None


def test_duplicated_takes_no_such_pin() -> None:
    """Under Duplicated nothing moves between clusters: each member HPA sheds on its own."""
    fleet, slots = after_a_burst("Duplicated", 60)
    priority.pin_and_release(fleet)
    assert slots["onprem"].pin is None


def test_a_prioritized_pin_is_let_go_once_the_node_group_below_runs_within_its_kept_node() -> None:
    """The pods on the node the cloud's min keeps cost nothing more there: holding on-prem pinned for
    them only moves them onto on-prem (found on hybrid-quota-cloud: the cloud went to 5 pods on its
    one node while on-prem, pinned, ran some 10 more than the load needed for 16 minutes)."""
    fleet, slots = after_a_burst("Prioritized", 30)
    priority.pin_and_release(fleet)
    assert slots["onprem"].pin == 40  # the cloud's 30 need 3 nodes: their shedding frees 2
    fleet, slots = after_a_burst("Prioritized", 8)
    slots["onprem"].pin = 40
    assert priority.pin_and_release(fleet)
    assert slots["onprem"].pin is None
    # under scalingToZero the kept node goes too once the cloud sits at its min: the pin stays for it
    fleet, slots = after_a_burst("Prioritized", 8, scaling_to_zero=True)
    slots["onprem"].pin = 40
    priority.pin_and_release(fleet)
    assert slots["onprem"].pin == 40


def test_a_pin_on_fixed_room_holds_while_the_node_group_sheds() -> None:
    """The load falls to 0.3 of the target (70 pods ask for 21): a pin on on-prem's fixed room is not
    lowered to follow it, as one on a node group is. Held there, the peak costs nothing more, and
    lowered, on-prem's HPA would shed beside the cloud's instead of before it, leaving the burst's pods
    on the cloud's nodes."""
    fleet, slots = after_a_burst("DynamicWeighted", 30)
    for slot in slots.values():
        hpa = slot.cluster.hpa
        assert hpa is not None
        cluster = slot.cluster.model_copy(update={"hpa": hpa.model_copy(update={"metric_ratio": 0.3})})
        slot.cluster = cluster
    slots["onprem"].pin = 40
    priority.pin_and_release(fleet)
    assert slots["onprem"].pin == 40
