"""Event-driven reconcile (issue 13, item 2): a change in a member reaches the plan without a resync.

The manager runs with resync, probe and optimization periods of an hour, so nothing but a member event
can make it look at the FederatedHPA again. Pods of the workload turning Unschedulable in the preferred
member must then move capacity to the next member (a member HPA write) within seconds; and with the
member events switched off the same run writes nothing (the test's own control).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import config as kube_config

from controller.kube.control_plane import KubeControlPlane
from controller.planning.planner import PlannerConfig
from controller.runtime import manager as runtime_manager
from controller.runtime.fleet import FleetManager
from controller.runtime.manager import ManagerConfig
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import pod
from tests.support.manager_world import FHPA, GROUP, HPA, SYSTEM, control_plane_fake
from tests.support.members import member_cluster, member_secret, registry
from tests.support.waiting import wait_for

HOUR = 3600.0
WRITES = r"horizontalpodautoscalers|/scale$"


def prioritized() -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "autoscaleMultiClusterDelay": 0,
            "federatedHPAAssignment": {
                "federatedHPAAssignmentType": "Prioritized",
                "clusterAutoscalingPreference": [
                    {"targetCluster": {"clusterNames": ["member1"]}, "priority": 2},
                    {"targetCluster": {"clusterNames": ["member2"]}, "priority": 1},
                ],
            },
        },
    }


def writes(fake: FakeKube) -> int:
    return sum(len(fake.requests_matching(m, WRITES)) for m in ("POST", "PUT"))


@pytest.fixture(params=[True, False], ids=["events", "no-events"])
def fleet(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    cp = control_plane_fake()
    members = {"member1": member_cluster(replicas=2), "member2": member_cluster(replicas=0)}
    for i in range(2):
        members["member1"].store.create("pods", pod(f"web-{i}", labels={"app": "web"}, node_name="node-1"))
    for name, fake in members.items():
        cp.store.create("secrets", member_secret(name, fake, SYSTEM))
    reg = registry(SYSTEM)
    if not request.param:  # the control: member caches report changes to nobody
        reg.add_change_listener = lambda listener: None  # type: ignore[method-assign]
    plane = KubeControlPlane(kube_config.new_client_from_config_dict(cp.kubeconfig()), reporting_instance="t")
    manager = FleetManager(
        plane,
        reg,
        ManagerConfig(
            namespace=SYSTEM,
            leader_elect=False,
            planner=PlannerConfig(failover_grace_seconds=HOUR, optimization_period_seconds=HOUR),
            resync_seconds=HOUR,
            probe_seconds=HOUR,
            watch_timeout_seconds=5,
        ),
    )
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    yield {"cp": cp, "members": members, "manager": manager, "events": request.param}
    stop.set()
    thread.join(10)
    for fake in (cp, *members.values()):
        fake.stop()


def test_pods_turning_unschedulable_move_capacity_without_a_resync(fleet: dict[str, Any]) -> None:
    cp: FakeKube = fleet["cp"]
    m1, m2 = fleet["members"]["member1"], fleet["members"]["member2"]
    cp.store.create(FHPA, prioritized())
    wait_for(lambda: m1.store.find(HPA, "default", "web"), what="member1's HPA")

    def quiet_for(seconds: float) -> int:
        """Wait until no member write has arrived for ``seconds``; the write count then."""
        last, since = writes(m1) + writes(m2), time.monotonic()
        while time.monotonic() - since < seconds:
            time.sleep(0.1)
            now = writes(m1) + writes(m2)
            if now != last:
                last, since = now, time.monotonic()
        return last

    before = quiet_for(2.0)
    # the scheduler finds no room in member1: the HPA wants 4, two new pods stay Pending
    hpa = m1.store.get(HPA, "default", "web")
    hpa["status"] = {"currentReplicas": 4, "desiredReplicas": 4}
    m1.store.put(HPA, hpa)
    for i in (2, 3):
        m1.store.create("pods", pod(f"web-{i}", labels={"app": "web"}, unschedulable=True))
    if fleet["events"]:
        wait_for(lambda: writes(m1) + writes(m2) > before, timeout=15, what="a member write after the event")
        assert fleet["manager"].metrics.member_events.labels(resource="Pod")._value.get() >= 1
    else:
        time.sleep(3.0)
        assert writes(m1) + writes(m2) == before, "without member events nothing looks again for an hour"


class _NoMembers:
    def apply_event(self, event_type: str, secret: Any) -> Any:
        raise AssertionError("not used")

    def members(self) -> dict[str, Any]:
        return {}

    def probe_all(self) -> dict[str, Any]:
        return {}


def test_a_status_only_change_of_a_federated_hpa_does_not_enqueue_it_again() -> None:
    """Our own status write comes back through the watch: planning the object again for it would make
    every reconcile cause the next one. A spec, metadata or deletion change does enqueue it."""
    from controller.runtime.manager import WatchEvent

    cp = control_plane_fake()
    try:
        plane = KubeControlPlane(
            kube_config.new_client_from_config_dict(cp.kubeconfig()), reporting_instance="t"
        )
        manager = FleetManager(plane, _NoMembers(), ManagerConfig(namespace=SYSTEM, leader_elect=False))
        obj = prioritized()
        obj["metadata"].update({"generation": 1, "resourceVersion": "1"})
        key = ("default", "web")

        def taken() -> list[Any]:
            keys = []
            while (k := manager.queue.get(timeout=0)) is not None:
                keys.append(k)
                manager.queue.done(k)
            return keys

        manager._on_fhpa(WatchEvent("ADDED", key, obj))
        assert taken() == [("FederatedHPA", *key)]
        status_only = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "2"}, "status": {"x": 1}}
        manager._on_fhpa(WatchEvent("MODIFIED", key, status_only))
        assert taken() == []
        spec_change = {**status_only, "spec": {**obj["spec"], "maxReplicas": 12}}
        spec_change["metadata"] = {**status_only["metadata"], "generation": 2, "resourceVersion": "3"}
        manager._on_fhpa(WatchEvent("MODIFIED", key, spec_change))
        assert taken() == [("FederatedHPA", *key)]
        deleting = {
            **spec_change,
            "metadata": {**spec_change["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"},
        }
        manager._on_fhpa(WatchEvent("MODIFIED", key, deleting))
        assert taken() == [("FederatedHPA", *key)]
    finally:
        cp.stop()


def test_resync_gaps_cover_the_period_evenly() -> None:
    from controller.runtime.manager import resync_gaps

    assert resync_gaps(0, 300) == []
    gaps = resync_gaps(1000, 300)
    assert len(gaps) == 1000 and abs(sum(gaps) - 300) < 1e-6 and max(gaps) == min(gaps)


def test_the_resync_is_spread_over_its_period_in_the_low_lane() -> None:
    """A resync adds one key at a time, a period/N apart, to the low lane: never all at once."""

    class Snap:
        def __init__(self, keys: list[tuple[str, str]]) -> None:
            self._keys = keys

        def keys(self) -> list[tuple[str, str]]:
            return self._keys

    cp = control_plane_fake()
    try:
        plane = KubeControlPlane(
            kube_config.new_client_from_config_dict(cp.kubeconfig()), reporting_instance="t"
        )
        manager = FleetManager(
            plane, _NoMembers(), ManagerConfig(namespace=SYSTEM, leader_elect=False, resync_seconds=0.6)
        )
        manager.informers = {
            "federatedhpas": Snap([("default", f"f{i}") for i in range(6)]),
            "cronfederatedhpas": Snap([]),
            "member-secrets": Snap([]),
        }
        added: list[tuple[float, Any]] = []
        manager.queue.add_low = lambda key: added.append((time.monotonic(), key))  # type: ignore[method-assign]
        manager.queue.add = lambda key: pytest.fail(f"resync used the normal lane for {key}")  # type: ignore[method-assign]
        stop = threading.Event()
        gc.unfreeze()
        runtime_manager._thawed_until[0] = 0.0  # a member dropped by an earlier test keeps it unfrozen
        loop = threading.Thread(target=manager._resync_loop, args=(stop,), daemon=True)
        loop.start()
        wait_for(lambda: len(added) >= 6, timeout=30, what="one resync pass")
        stop.set()
        loop.join(5)
        # each pass first settles the heap: what is alive moves out of the cyclic collector's walk
        assert gc.get_freeze_count() > 0
        gc.unfreeze()
        first, last = added[0][0], added[5][0]
        assert [k for _, k in added[:6]] == [("FederatedHPA", "default", f"f{i}") for i in range(6)]
        assert last - first >= 5 * 0.1 * 0.9  # five gaps of period/6: spread, never a burst
    finally:
        cp.stop()
