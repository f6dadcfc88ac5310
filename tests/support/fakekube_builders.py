"""Builders of the objects tests compose clusters from (nodes, pods, Deployments, CronFederatedHPAs), and
a reader of a raw watch stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

Obj = dict[str, Any]


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    unschedulable: bool = False,
    ready: bool = True,
    taints: list[Obj] | None = None,
    labels: dict[str, str] | None = None,
) -> Obj:
    return {
        "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
        "spec": {"unschedulable": unschedulable, **({"taints": taints} if taints else {})},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    cpu: str | None = "100m",
    memory: str | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    phase: str | None = None,
) -> Obj:
    """A pod as the scheduler and kubelet would leave it: bound and Ready, or Pending and Unschedulable."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    conditions: list[Obj]
    if unschedulable:
        conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
        phase = phase or "Pending"
    else:
        conditions = [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True" if ready else "False"},
        ]
        phase = phase or "Running"
    spec: Obj = {"containers": [{"name": "app", "image": "app", "resources": {"requests": requests}}]}
    if node_name and not unschedulable:
        spec["nodeName"] = node_name
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }


def deployment(
    name: str,
    namespace: str = "default",
    replicas: int = 1,
    labels: dict[str, str] | None = None,
    cpu: str | None = "100m",
    memory: str | None = None,
    kind: str = "Deployment",
) -> Obj:
    labels = labels or {"app": name}
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "app", "image": "app", "resources": {"requests": requests}}]
                },
            },
        },
        "status": {"replicas": replicas},
    }


def cron_federated_hpa(name: str = "c", namespace: str = "default") -> Obj:
    """A CronFederatedHPA with one rule ``r`` that scales Deployment ``web`` to 3 every minute."""
    return {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "CronFederatedHPA",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "rules": [{"name": "r", "schedule": "* * * * *", "targetReplicas": 3}],
        },
    }


def iter_watch_lines(raw: bytes) -> Iterator[Obj]:
    """Parse a watch body (newline-delimited JSON) into events: for tests that read streams directly."""
    for line in raw.splitlines():
        if line.strip():
            yield json.loads(line)
