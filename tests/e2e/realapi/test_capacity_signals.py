"""Karpenter's NodePools read from a real API server: the ``karpenter.sh`` group found through discovery
(v1 preferred over v1beta1), the cluster-scoped list, and a status written through its subresource.

The NodePool CRD here is a stand-in written for this test (a schema that keeps unknown fields): what is
tested is the reading of limits against status.resources over real discovery and a real list, not
Karpenter's own validation. ResourceQuotas, ConfigMaps and Events are core/v1, which this server does
not serve; those signals are tested against FakeKube (tests/controller/kube/test_capacity_signals.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from controller.kube.capacity_signals import CapacitySignals
from controller.kube.clients import KubeClient, Timeouts
from controller.planning.node_autoscaling import karpenter_room
from tests.support.realapi import RealAPIServer

pytestmark = [pytest.mark.realapi]

OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def version(name: str, storage: bool) -> dict[str, Any]:
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": OPEN, "status": OPEN}}},
    }


NODEPOOL_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "nodepools.karpenter.sh"},
    "spec": {
        "group": "karpenter.sh",
        "scope": "Cluster",
        "names": {
            "kind": "NodePool",
            "listKind": "NodePoolList",
            "plural": "nodepools",
            "singular": "nodepool",
        },
        "versions": [version("v1beta1", storage=False), version("v1", storage=True)],
    },
}


def test_node_pools_over_real_discovery_and_list(realapi_factory: Callable[..., RealAPIServer]) -> None:
    server = realapi_factory(name="karpenter", crds=(NODEPOOL_CRD,))
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {"limits": {"cpu": "100", "memory": "400Gi"}, "template": {"spec": {"requirements": []}}},
    }
    status, created = server.request("POST", "/apis/karpenter.sh/v1/nodepools", pool)
    assert status == 201, created
    created["status"] = {"resources": {"cpu": "40", "memory": "160Gi", "nodes": "5"}}
    status, body = server.request("PUT", "/apis/karpenter.sh/v1/nodepools/default/status", created)
    assert status == 200, body

    client = KubeClient("karpenter", server.api_client(), Timeouts(connect=2, read=10, probe=2))
    signals = CapacitySignals("karpenter", client)
    pools = signals.node_pools()
    assert pools is not None and [p["metadata"]["name"] for p in pools] == ["default"]
    assert pools[0]["apiVersion"] == "karpenter.sh/v1"
    template = {"containers": [{"resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}
    room = karpenter_room(pools, template)
    assert room is not None and (room.pods, room.source) == (30, "karpenter")
    client.close()


def test_a_server_without_karpenter_has_no_node_pools(realapi: RealAPIServer) -> None:
    client = KubeClient("plain", realapi.api_client(), Timeouts(connect=2, read=10, probe=2))
    assert CapacitySignals("plain", client).node_pools() is None
    client.close()
