"""A cluster at its max beside a sibling of its tier that cannot grow: the cluster at 0 still wakes.

A rule that kept the cloud at 0 while a sibling with room said its load was above target (so would grow
into it) was tried and dropped: this sibling's new pods never turn Ready (an image that does not pull,
a probe that fails), its HPA holds them as not ready, it never calls itself, and the cloud was never
woken: 55.2% served for the hour of the burst (a review's fleet)."""

from __future__ import annotations

from simulator.engine import simulate
from simulator.report import summarize
from simulator.scenario import parse_scenario

FLEET = {
    "name": "sibling-never-ready",
    "duration": "2h",
    "clusters": [
        {"name": "dc1", "labels": {"tier": "onprem"}, "capacity": 15, "podStartup": "30s", "replicas": 8},
        {"name": "dc2", "labels": {"tier": "onprem"}, "capacity": 40, "podStartup": "3h", "replicas": 4},
        {"name": "cloud", "labels": {"tier": "cloud"}, "capacity": 200, "podStartup": "30s"},
    ],
    "load": {
        "podCapacity": 100,
        "trace": [
            {"at": "0m", "rps": 800},
            {"at": "20m", "rps": 800},
            {"at": "25m", "rps": 4000},
            {"at": "90m", "rps": 4000},
            {"at": "100m", "rps": 800},
        ],
    },
    "federatedHPA": {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 140,
            "scalingToZero": True,
            "federatedHPAAssignment": {
                "federatedHPAAssignmentType": "Prioritized",
                "clusterAutoscalingPreference": [
                    {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "onprem"}}}, "priority": 2},
                    {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "cloud"}}}, "priority": 1},
                ],
            },
        },
    },
}


def test_the_cloud_wakes_though_a_sibling_of_the_full_cluster_has_room_it_cannot_use() -> None:
    summary = summarize(simulate(parse_scenario(FLEET, "sibling")))
    assert summary["served_fraction"] >= 0.99, summary["served_fraction"]
