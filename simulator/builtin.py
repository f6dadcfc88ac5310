"""The built-in scenario `fhpa simulate` runs when given none: on-prem first, cloud for the overflow.

An on-prem cluster (idc, 30 pods) is preferred; a cloud cluster (300 pods, slower to start pods) takes
what idc cannot hold. Demand bursts well past idc's capacity, and in the middle of the burst the cloud
cluster has a 10-minute outage. It shows the Prioritized policy spilling to the cloud and coming back,
and with ``--compare`` what an equal static split (each cluster's own HPA, no help) and Duplicated do.
"""

from __future__ import annotations

from typing import Any

import yaml

from simulator.scenario import Scenario, parse_scenario

BUILTIN_YAML = """\
name: builtin-burst-idc-cloud
description: >-
  On-prem idc (30 pods) preferred over cloud (300 pods); a burst to 9000 rps spills to the cloud,
  the cloud has a 10-minute outage at the top of the burst, and after the burst the cloud drains first.
start: 2026-11-23T00:00:00Z
duration: 2h
clusters:
  - {name: idc, labels: {location: idc}, capacity: 30, podStartup: 30s, replicas: 20}
  - name: cloud
    labels: {location: cloud}
    capacity: 300
    podStartup: 60s
    outages: [{at: 70m, for: 10m}]
load:
  podCapacity: 100
  trace:
    - {at: 0m, rps: 1500}
    - {at: 20m, rps: 1500}
    - {at: 30m, rps: 9000}
    - {at: 85m, rps: 9000}
    - {at: 95m, rps: 1500}
federatedHPA:
  apiVersion: autoscaling.karmada.io/v1alpha1
  kind: FederatedHPA
  metadata: {name: shop, namespace: default}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: shop}
    minReplicas: 2
    maxReplicas: 100
    metrics:
      - type: Resource
        resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
    federatedHPAAssignment:
      federatedHPAAssignmentType: Prioritized
      clusterAutoscalingPreference:
        - {targetCluster: {labelSelector: {matchLabels: {location: idc}}}, priority: 2}
        - {targetCluster: {labelSelector: {matchLabels: {location: cloud}}}, priority: 1}
"""


def builtin_document() -> dict[str, Any]:
    data = yaml.safe_load(BUILTIN_YAML)
    assert isinstance(data, dict)
    return data


def builtin_scenario() -> Scenario:
    return parse_scenario(builtin_document(), "<built-in scenario>")
