"""Node changes coalesced per member: a flood of them starts one low-lane pass a second, not one each."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from kubernetes import config as kube_config
from prometheus_client import CollectorRegistry

from controller.kube.control_plane import KubeControlPlane
from controller.kube.member_cache import Change
from controller.ports import ClusterIdentity
from controller.runtime.coalesce import Coalescer
from controller.runtime.fleet import FleetManager
from controller.runtime.manager import ManagerConfig, WatchEvent
from controller.runtime.member_events import NODE, RecentChanges, TargetIndex
from controller.runtime.metrics import Metrics
from tests.support.members import registry


def node_change(i: int) -> Change:
    return Change(NODE, ("", "n1"), {"allocatable": {"cpu": str(i)}}, {"allocatable": {"cpu": str(i + 1)}})


def test_a_node_flood_from_one_member_starts_one_pass_now_and_one_at_the_interval_end() -> None:
    passes: list[tuple[float, bool]] = []
    done = threading.Event()

    def node_pass(cluster: str) -> None:
        passes.append((time.monotonic(), cluster == "east"))
        if len(passes) == 2:
            done.set()

    fleet: Any = SimpleNamespace(
        leading=True,
        _leading_stop=threading.Event(),
        registry=SimpleNamespace(),
        targets=TargetIndex(),
        _recent=RecentChanges(60),
        metrics=Metrics(CollectorRegistry()),
        _node_pass=node_pass,
        _node_passes=Coalescer(0.3),
    )
    started = time.monotonic()
    for i in range(200):  # 200 node changes at once
        FleetManager._on_member_change(fleet, "east", node_change(i))
    assert len(passes) == 1 and passes[0][1] is True  # the first at once, for that member
    assert done.wait(10)
    time.sleep(0.5)
    assert len(passes) == 2  # the other 199 folded into one pass when the interval ended
    assert passes[1][0] - started >= 0.3 * 0.9


def test_members_are_coalesced_apart() -> None:
    ran: list[str] = []
    coalescer = Coalescer(60)
    for cluster in ("a", "b", "a", "b", "c"):
        coalescer.request(cluster, lambda c=cluster: ran.append(c))  # type: ignore[misc]
    coalescer.cancel()
    assert ran == ["a", "b", "c"]  # one member's flood never delays another's pass


def idle_manager(registry_: Any) -> FleetManager:
    """A FleetManager that is told it leads but runs nothing (no informer, worker or thread)."""
    api = kube_config.new_client_from_config_dict(
        {
            "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    )
    manager = FleetManager(
        KubeControlPlane(api, reporting_instance="t"),
        registry_,
        ManagerConfig(namespace="fhpa-system", leader_elect=False),
        metrics=Metrics(CollectorRegistry()),
    )
    manager.leading = True
    return manager


def fhpa(name: str, clusters: list[str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": {"kind": "Deployment", "name": name}, "maxReplicas": 4}
    if clusters is not None:
        spec["clusterAffinity"] = {"clusterNames": clusters}
    return {"metadata": {"name": name, "namespace": "default", "generation": 1}, "spec": spec}


def test_a_node_change_enqueues_only_the_federated_hpas_that_select_its_member() -> None:
    members = {c: SimpleNamespace(identity=ClusterIdentity(name=c)) for c in ("east", "west")}
    manager = idle_manager(SimpleNamespace(members=lambda: members))
    objects = {
        "east-only": fhpa("east-only", ["east"]),
        "west-only": fhpa("west-only", ["west"]),
        "anywhere": fhpa("anywhere", None),
        "unreadable": {"metadata": {"name": "unreadable"}, "spec": {"clusterAffinity": {"clusterNames": 7}}},
    }
    for name, obj in objects.items():
        manager._on_fhpa(WatchEvent("ADDED", ("default", name), obj))
    informer: Any = SimpleNamespace(keys=lambda: [("default", n) for n in objects])
    manager.informers = {"federatedhpas": informer}
    manager.queue = manager._new_queue()
    FleetManager._on_member_change(manager, "east", node_change(1))
    queued = set()
    while (key := manager.queue.get(timeout=0.01)) is not None:
        queued.add(key[2])
    assert queued == {"east-only", "anywhere", "unreadable"}  # west-only never reads east's capacity
    manager._node_passes.cancel()


def test_losing_the_lease_drops_the_node_pass_not_yet_due() -> None:
    manager = idle_manager(registry("fhpa-system"))
    manager._node_passes = Coalescer(0.3)
    ran: list[str] = []
    manager._node_passes.request("east", lambda: ran.append("now"))
    manager._node_passes.request("east", lambda: ran.append("at the interval end"))
    manager._on_lease_lost()
    manager._stop_leading()
    time.sleep(0.6)
    assert ran == ["now"]  # the pending pass would enqueue keys for a term that is over
    assert not manager.leading
