"""Member clusters for controller tests: FakeKube "clusters" with a node and a workload, their Secrets,
and a minimal registry double (Secret dict in, KubeMemberCluster out) for the manager when the real
registry is not under test."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Mapping
from typing import Any

from controller.kube.clients import KubeClient, Timeouts, build_api_client
from controller.kube.member import KubeMemberCluster
from controller.ports import ClusterIdentity, MemberCluster
from tests.support.fakekube import FakeKube, deployment, node

MEMBER_LABEL = "autoscaling.karmada.io/member-cluster"


def member_cluster(namespace: str = "default", replicas: int = 1, name: str = "web") -> FakeKube:
    """A started FakeKube with one roomy node and a Deployment ``name`` in ``namespace``."""
    namespaces = tuple(dict.fromkeys(("default", "kube-system", namespace)))
    fake = FakeKube(namespaces=namespaces, watch_max_seconds=5.0)
    fake.start()
    fake.store.create("nodes", node("node-1", cpu="8", memory="16Gi"))
    fake.store.create("deployments.apps", deployment(name, namespace, replicas=replicas))
    return fake


def member_secret(cluster: str, fake: FakeKube, namespace: str, labels: dict[str, str] | None = None) -> dict:
    kubeconfig = json.dumps(fake.kubeconfig(cluster=cluster)).encode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": cluster,
            "namespace": namespace,
            "labels": {MEMBER_LABEL: "true", **(labels or {})},
        },
        "type": "Opaque",
        "data": {"kubeconfig": base64.b64encode(kubeconfig).decode()},
    }


class DictRegistry:
    """The manager's MemberRegistry, kept minimal: one KubeMemberCluster per member Secret."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._members: dict[str, MemberCluster] = {}

    def apply_secret(self, secret: dict[str, Any]) -> None:
        meta = secret["metadata"]
        raw = base64.b64decode(secret["data"]["kubeconfig"])
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != MEMBER_LABEL}
        client = KubeClient(meta["name"], build_api_client(raw), Timeouts(connect=1, read=3, probe=1))
        member = KubeMemberCluster(
            ClusterIdentity(name=meta["name"], labels=labels), client, capacity_ttl_seconds=0.5
        )
        with self._lock:
            self._members[meta["name"]] = member

    def remove(self, name: str) -> None:
        with self._lock:
            self._members.pop(name, None)

    def members(self) -> Mapping[str, MemberCluster]:
        with self._lock:
            return dict(self._members)
