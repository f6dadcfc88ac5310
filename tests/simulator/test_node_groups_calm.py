"""Calm (promise 4) on fleets whose room is node groups: after a peak, the cluster autoscaler removes idle
nodes from each group in turn, and the maxes must not follow every node that goes."""

from __future__ import annotations

from typing import Any

from simulator.engine import Simulation
from simulator.scenario import parse_scenario


def two_node_groups_after_a_campaign() -> dict[str, Any]:
    """cloud-at-max in short, under Aggregated: a node group of 1 to 8 nodes and one of 0 to 30, a
    one-hour campaign that outgrows the first, then an hour and a quarter of flat demand."""
    return {
        "name": "two-node-groups-after-a-campaign",
        "duration": "3h30m",
        "clusters": [
            {
                "name": "cheap",
                "capacity": 20,
                "replicas": 10,
                "podStartup": "30s",
                "autoscaling": {
                    "podsPerNode": 10,
                    "minNodes": 1,
                    "maxNodes": 8,
                    "provisionSeconds": 120,
                    "idleSeconds": 600,
                },
            },
            {
                "name": "dear",
                "capacity": 0,
                "podStartup": "30s",
                "autoscaling": {
                    "podsPerNode": 10,
                    "minNodes": 0,
                    "maxNodes": 30,
                    "provisionSeconds": 180,
                    "idleSeconds": 600,
                },
            },
        ],
        "load": {
            "podCapacity": 100,
            "trace": [
                {"at": "0h", "rps": 2400},
                {"at": "30m", "rps": 2800},
                {"at": "45m", "rps": 12000},
                {"at": "1h45m", "rps": 12000},
                {"at": "2h15m", "rps": 2400},
                {"at": "3h30m", "rps": 2400},
            ],
        },
        "federatedHPA": {
            "apiVersion": "autoscaling.karmada.io/v1alpha1",
            "kind": "FederatedHPA",
            "metadata": {"name": "search", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "search"},
                "minReplicas": 2,
                "maxReplicas": 200,
                "scalingToZero": True,
                "federatedHPAAssignment": {"federatedHPAAssignmentType": "Aggregated"},
            },
        },
    }


def test_node_groups_losing_idle_nodes_in_turn_do_not_turn_the_maxes_around() -> None:
    result = Simulation(parse_scenario(two_node_groups_after_a_campaign())).run()
    assert [v for v in result.violations if v.kind == "churn"] == []
    # the campaign did outgrow the small group, and its idle nodes did go afterwards
    peak = max(s.clusters["cheap"].nodes for s in result.steps)
    assert peak == 8 and result.steps[-1].clusters["cheap"].nodes < peak
    assert max(s.clusters["dear"].nodes for s in result.steps) > 0
