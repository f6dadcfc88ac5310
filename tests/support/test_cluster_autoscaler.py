"""The cluster-autoscaler stand-in against FakeKube, read back by the controller's own capacity signals:
nodes asked for and joining after the provision time, the status ConfigMap in both formats, and the pod
Events (TriggeredScaleUp, then NotTriggerScaleUp at the group's max)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from controller.kube.capacity_signals import CapacitySignals
from controller.kube.clients import KubeClient, Timeouts, build_api_client
from controller.planning.node_autoscaling import NodeGroup, pending_reasons
from tests.support.cluster_autoscaler import GROUP_LABEL, ClusterAutoscalerStandIn, NodeGroupSpec
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import node, pod


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    fk = FakeKube(namespaces=("default", "kube-system"))
    fk.start()
    yield fk
    fk.stop()


def requester(fake: FakeKube) -> Any:
    url = urlsplit(fake.url)

    def request(method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
        try:
            headers = {"Accept": "application/json", "Content-Type": content_type}
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"{}")
        finally:
            conn.close()

    return request


@pytest.mark.parametrize("status_format", ["text", "yaml"])
def test_pending_pods_bring_nodes_then_hit_the_max(fake: FakeKube, status_format: str) -> None:
    clock = [1_000.0]
    group = NodeGroupSpec("cloud-a", max_size=2, pods_per_node=2)

    def add_node(group_name: str, name: str) -> None:
        fake.store.create("nodes", node(name, cpu="2", labels={GROUP_LABEL: group_name}))

    standin = ClusterAutoscalerStandIn(
        "m1",
        requester(fake),
        add_node,
        [group],
        provision_seconds=60,
        status_format=status_format,
        clock=lambda: clock[0],
    )
    for name in ("web-1", "web-2", "web-3"):
        fake.store.create("pods", pod(name, labels={"app": "web"}, unschedulable=True))
    standin.sync_once()
    config = fake.kubeconfig()
    config["users"][0]["user"] = {}
    signals = CapacitySignals(
        "m1", KubeClient("m1", build_api_client(config), Timeouts()), ttl_seconds=0, events_ttl_seconds=0
    )
    assert signals.node_groups() == [NodeGroup("cloud-a", 0, 2, 2, 0, "InProgress")]
    events = signals.scale_up_events("default")
    seen = pending_reasons(["web-1", "web-2", "web-3"], events)
    assert (seen.coming, seen.stuck) == (3, 0)  # 2 nodes of 2 pods asked for
    assert fake.store.find("nodes", None, "cloud-a-1") is None

    fake.store.create("pods", pod("web-4", labels={"app": "web"}, unschedulable=True))
    fake.store.create("pods", pod("web-5", labels={"app": "web"}, unschedulable=True))
    clock[0] += 61
    standin.sync_once()
    assert fake.store.find("nodes", None, "cloud-a-2") is not None  # joined after the provision time
    assert signals.node_groups() == [NodeGroup("cloud-a", 0, 2, 2, 2, "NoActivity")]
    seen = pending_reasons([f"web-{i}" for i in range(1, 6)], signals.scale_up_events("default"))
    assert (seen.coming, seen.stuck) == (3, 2)  # the group is at its max: no node for the 4th and 5th
