"""A warm standby: a replica that does not hold the Lease keeps the member caches synced, writes nothing,
says so on /readyz, and takes over without listing the members again.

One FleetManager with leader election over a FakeKube control plane and two FakeKube members; another
elector (identity ``other``) holds the Lease first and releases it when told.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import config as kube_config

from controller.kube.clients import Timeouts
from controller.kube.control_plane import KubeControlPlane
from controller.kube.member_cache import POD, Change, trim_pod
from controller.kube.registry import MemberRegistry, default_factory
from controller.planning.plan import ReplicaWrite
from controller.ports import NotLeaderError
from controller.runtime.fleet import FleetManager
from controller.runtime.leader import LeaderConfig, LeaderElector, LeaseClient
from controller.runtime.manager import ManagerConfig, WatchEvent
from controller.runtime.member_events import ClusterSelection, RecentChanges, TargetIndex
from fhpa_api import FEDERATED_HPA
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import pod
from tests.support.manager_world import FHPA, SYSTEM, control_plane_fake, fhpa
from tests.support.members import member_cluster, member_secret
from tests.support.waiting import wait_for

from .test_member_events import fhpa_obj

HPA = "horizontalpodautoscalers.autoscaling"
LIST = re.compile(r"^/api/v1/(pods|nodes)$")


def lease(identity: str) -> LeaderConfig:
    """Long enough that a busy machine does not take the Lease from either side; the hand-over is a
    release, which the standby sees at its next retry."""
    return LeaderConfig(
        namespace=SYSTEM,
        name="federated-hpa-controller",
        identity=identity,
        lease_duration_seconds=30.0,
        renew_deadline_seconds=20.0,
        retry_period_seconds=0.2,
    )


def patient_registry() -> MemberRegistry:
    """The real registry, with timeouts a loaded machine does not hit (a timed-out list is a relist)."""
    timeouts = Timeouts(connect=5, read=15, probe=2)
    return MemberRegistry(SYSTEM, timeouts, factory=default_factory(timeouts))


def member_lists(fake: FakeKube) -> int:
    """Full lists of pods and nodes (not watches) the member has served."""
    with fake._requests_lock:
        return sum(
            1
            for r in fake.requests
            if r.method == "GET" and LIST.match(r.path) and (r.query.get("watch") or [""])[0] != "true"
        )


def writes(fake: FakeKube, but: str = "$^") -> list[str]:
    with fake._requests_lock:
        return [
            f"{r.method} {r.path}" for r in fake.requests if r.method != "GET" and not re.search(but, r.path)
        ]


@pytest.fixture
def standby(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    warm: bool = request.param
    cp = control_plane_fake()
    members = {"member1": member_cluster(), "member2": member_cluster()}
    for name, fake in members.items():
        cp.store.create("secrets", member_secret(name, fake, SYSTEM))
    api = kube_config.new_client_from_config_dict(cp.kubeconfig())
    other_stop, stop = threading.Event(), threading.Event()
    other = LeaderElector(LeaseClient(api), lease("other"))
    other_thread = threading.Thread(target=other.run, args=(other_stop,), daemon=True)
    other_thread.start()
    wait_for(other.is_leader, timeout=60, what="the other replica leading")
    manager = FleetManager(
        KubeControlPlane(api, reporting_instance="test"),
        patient_registry(),
        ManagerConfig(
            namespace=SYSTEM,
            lease=lease("me"),
            watch_timeout_seconds=5,
            member_sync_grace_seconds=0 if not warm else 30,
            warm_standby=warm,
        ),
        lease_client=LeaseClient(api),
    )
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    yield {"cp": cp, "members": members, "manager": manager, "hand_over": other_stop}
    stop.set()
    other_stop.set()
    thread.join(10)
    other_thread.join(5)
    for fake in (cp, *members.values()):
        fake.stop()


@pytest.mark.parametrize("standby", [True], indirect=True)
def test_a_standby_syncs_the_member_caches_writes_nothing_and_takes_over_without_a_relist(
    standby: dict[str, Any],
) -> None:
    cp: FakeKube = standby["cp"]
    members: dict[str, FakeKube] = standby["members"]
    manager: FleetManager = standby["manager"]
    cp.store.create(FHPA, fhpa())
    wait_for(
        lambda: manager.caches_synced() == (True, "standby (not the leader): caches synced"),
        timeout=60,
        what="the standby's caches synced",
    )
    assert not manager.leading
    assert manager.registry.cache_state() == {"member1": True, "member2": True}
    time.sleep(0.5)  # a standby that planned would have written by now
    assert all(not writes(fake) for fake in members.values())
    assert writes(cp, but=r"/leases") == []
    lists = {name: member_lists(fake) for name, fake in members.items()}
    assert all(lists.values())

    standby["hand_over"].set()  # the other replica stops and releases the Lease
    wait_for(lambda: manager.leading, timeout=60, what="the standby taking the Lease")
    found = wait_for(
        lambda: all(f.store.find(HPA, "default", "web") for f in members.values()),
        timeout=60,
        what="the new leader's member writes",
    )
    assert found
    assert {name: member_lists(fake) for name, fake in members.items()} == lists  # no relist


@pytest.mark.parametrize("standby", [True], indirect=True)
def test_the_fence_refuses_a_standbys_member_write(standby: dict[str, Any]) -> None:
    manager: FleetManager = standby["manager"]
    synced = {"member1": True, "member2": True}
    wait_for(lambda: manager.registry.cache_state() == synced, timeout=60, what="caches")
    member = manager._members()["member1"]
    with pytest.raises(NotLeaderError):
        member.write(None, ReplicaWrite(cluster="member1", replicas=3, reason="test"))  # type: ignore[arg-type]
    assert manager.fence.refused == 1
    assert not writes(standby["members"]["member1"])


@pytest.mark.parametrize("standby", [False], indirect=True)
def test_a_cold_standby_keeps_no_caches_and_says_so(standby: dict[str, Any]) -> None:
    manager: FleetManager = standby["manager"]
    members: dict[str, FakeKube] = standby["members"]
    time.sleep(1.0)
    assert manager.caches_synced() == (True, "standby (not the leader): keeps no caches")
    assert manager.registry.members() == {}
    assert all(member_lists(fake) == 0 for fake in members.values())


class Lanes:
    """A work queue that records which lane each key was put in."""

    def __init__(self) -> None:
        self.high: list[Any] = []
        self.low: list[Any] = []

    def add(self, key: Any) -> None:
        self.high.append(key)

    def add_low(self, key: Any) -> None:
        self.low.append(key)


def test_a_takeover_plans_first_what_changed_in_the_members_while_it_stood_by() -> None:
    """A standby cannot tell whom a member change concerns (it has no FederatedHPA watch), so a takeover
    used to plan every object in list order, and the one whose pods had just turned Unschedulable waited
    behind a thousand others (49.6 s at 1,000 x 10 x 10,000). What a change touched is now remembered,
    and the FederatedHPA list puts the objects it touched in the front lane, the rest in the resync lane."""
    deploy = ("apps", "Deployment")
    fleet: Any = SimpleNamespace(
        leading=False,
        _leading_stop=threading.Event(),
        registry=SimpleNamespace(
            workloads_selecting=lambda cluster, ns, labels: [(deploy, labels["app"])] if ns == "shop" else []
        ),
        targets=TargetIndex(),
        selections=ClusterSelection(),
        _fhpa_seen={},
        _recent=RecentChanges(300),
        queue=Lanes(),
    )
    pending = trim_pod(pod("w-1", namespace="shop", labels={"app": "web"}, unschedulable=True))
    FleetManager._on_member_change(fleet, "member1", Change(POD, ("shop", "w-1"), None, pending))
    assert fleet.queue.high == fleet.queue.low == []  # a standby plans nothing

    fleet.leading = True  # the takeover: the FederatedHPA informer's first list
    for name, target in (("api", "api"), ("web", "web"), ("zeta", "batch")):
        obj = fhpa_obj(name, target)
        FleetManager._on_fhpa(fleet, WatchEvent("ADDED", ("shop", name), obj, listed=True))
    assert fleet.queue.high == [(FEDERATED_HPA, "shop", "web")]
    assert fleet.queue.low == [(FEDERATED_HPA, "shop", "api"), (FEDERATED_HPA, "shop", "zeta")]

    created = fhpa_obj("new", "other")  # created after the list: news, the front lane
    FleetManager._on_fhpa(fleet, WatchEvent("ADDED", ("shop", "new"), created))
    assert fleet.queue.high[-1] == (FEDERATED_HPA, "shop", "new")
