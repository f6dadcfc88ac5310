"""Prioritized's take-back on the simulator: room that returns to the preferred cluster takes load back up
from a node group below, through a pin of the preferred HPA's min that holds while the lower HPA sheds."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from simulator.engine import Simulation
from simulator.scenario import parse_scenario


def room_returns_to_on_prem() -> dict[str, Any]:
    """On-prem holds 14 pods for the first half hour (nodes drained), then 30; the cloud node group (10-pod
    nodes, its min keeps one) ran the other 14 on two nodes. The load is flat at 27 pods' worth."""
    tier = {"onprem": 2, "cloud": 1}
    return {
        "name": "room-returns-to-on-prem",
        "duration": "1h30m",
        "clusters": [
            {
                "name": "onprem",
                "labels": {"tier": "onprem"},
                "capacity": 30,
                "replicas": 14,
                "podStartup": "30s",
                "capacityChanges": [{"at": "0m", "capacity": 14}, {"at": "30m", "capacity": 30}],
            },
            {
                "name": "cloud",
                "labels": {"tier": "cloud"},
                "capacity": 20,
                "replicas": 14,
                "podStartup": "30s",
                "autoscaling": {
                    "podsPerNode": 10,
                    "minNodes": 1,
                    "maxNodes": 10,
                    "provisionSeconds": 120,
                    "idleSeconds": 300,
                },
            },
        ],
        "load": {"podCapacity": 100, "trace": [{"at": "0m", "rps": 2160}, {"at": "1h30m", "rps": 2160}]},
        "federatedHPA": {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "FederatedHPA",
            "metadata": {"name": "shop", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop"},
                "minReplicas": 2,
                "maxReplicas": 60,
                "federatedHPAAssignment": {
                    "federatedHPAAssignmentType": "Prioritized",
                    "clusterAutoscalingPreference": [
                        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": t}}}, "priority": p}
                        for t, p in tier.items()
                    ],
                },
            },
        },
    }


def test_room_back_on_prem_takes_the_clouds_extra_node_without_pinning_and_releasing_by_turns() -> None:
    """Before the take-back pin held for the cloud HPA's scale-down window, it was released 15 s after it
    was set (the cloud's HPA still wanted its 14: on-prem's new pods were not even Ready), then set
    again: 4 pins and 4 releases for 4 pods, each release one pass after its pin."""
    result = Simulation(parse_scenario(room_returns_to_on_prem())).run()
    end = result.steps[-1].clusters
    assert (end["cloud"].replicas, end["cloud"].nodes) == (10, 1)  # its second node went
    assert end["onprem"].replicas >= 17
    t0 = result.events[0].at
    pins = [e for e in result.events if e.reason in ("Pinned", "Unpinned")]
    assert len(pins) <= 4
    for pin, release in pairwise(pins):
        if pin.reason == "Pinned" and "room for" in pin.message:
            assert release.reason == "Unpinned"
            assert (release.at - pin.at).total_seconds() >= 300, [(e.at - t0, e.message) for e in pins]
    assert result.violations == []
