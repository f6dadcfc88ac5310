"""/readyz and /healthz of the running manager: ready means "can do its job" (the control-plane API
answered recently; on the leader, the caches synced); alive means "no loop wedged or dead", and a down
API server never fails liveness."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import config as kube_config

from controller.kube.control_plane import KubeControlPlane
from controller.runtime.fleet import FleetManager
from controller.runtime.health import HealthServer
from controller.runtime.leader import LeaderConfig, LeaseClient
from controller.runtime.manager import ManagerConfig
from controller.runtime.metrics import Metrics
from tests.controller.runtime.test_health import get
from tests.support.fakekube import FakeKube
from tests.support.manager_world import SYSTEM, control_plane_fake
from tests.support.members import registry
from tests.support.waiting import wait_for

LEASES = "leases.coordination.k8s.io"


def other_holds_the_lease(cp: FakeKube) -> None:
    """Another replica holds a long Lease, so the manager under test stays a standby."""
    cp.store.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "federated-hpa-controller", "namespace": SYSTEM},
            "spec": {"holderIdentity": "the-other-replica", "leaseDurationSeconds": 3600},
        },
    )


def lease_config() -> LeaderConfig:
    return LeaderConfig(
        namespace=SYSTEM, lease_duration_seconds=3, renew_deadline_seconds=2, retry_period_seconds=0.1
    )


class Running:
    """A manager run in a thread with its health server; ``code`` is /readyz's or /healthz's status."""

    def __init__(self, manager: FleetManager) -> None:
        self.manager = manager
        self.stop = threading.Event()
        self.result: list[int] = []
        self.server = HealthServer(
            "127.0.0.1:0",
            Metrics(),
            liveness={"loops": manager.alive},
            readiness={"control-plane-api": manager.api_reachable, "informers": manager.caches_synced},
        )
        self.port = self.server.start()
        self.thread = threading.Thread(target=lambda: self.result.append(manager.run(self.stop)), daemon=True)
        self.thread.start()

    def code(self, path: str) -> int:
        return get(self.port, path)[0]

    def body(self, path: str) -> str:
        return get(self.port, path)[1]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.server.stop()


@pytest.fixture
def cp() -> Iterator[FakeKube]:
    fake = control_plane_fake()
    yield fake
    fake.stop()


@pytest.fixture
def start() -> Iterator[Callable[..., Running]]:
    running: list[Running] = []

    def make(cp: FakeKube, **config: Any) -> Running:
        api = kube_config.new_client_from_config_dict(cp.kubeconfig())
        leader_elect = config.pop("leader_elect", True)
        manager = FleetManager(
            KubeControlPlane(api, request_timeout=(1.0, 2.0)),
            registry(SYSTEM),
            ManagerConfig(
                namespace=SYSTEM,
                leader_elect=leader_elect,
                lease=lease_config() if leader_elect else None,
                watch_timeout_seconds=5,
                **config,
            ),
            lease_client=LeaseClient(api, request_timeout=(1.0, 2.0)) if leader_elect else None,
        )
        running.append(Running(manager))
        return running[-1]

    yield make
    for r in running:
        r.close()


def test_a_standby_is_ready_only_while_it_can_reach_the_api_and_stays_alive(
    cp: FakeKube, start: Callable[..., Running]
) -> None:
    other_holds_the_lease(cp)
    r = start(cp)
    wait_for(lambda: r.code("/readyz") == 200, what="the standby ready")
    assert not r.manager.leading
    cp.vanish()
    wait_for(lambda: r.code("/readyz") == 503, what="the standby not ready with the API gone")
    assert "[-]control-plane-api failed: control-plane API not reached for" in r.body("/readyz")
    assert r.code("/healthz") == 200  # restarting would not bring the API server back
    cp.reappear()
    wait_for(lambda: r.code("/readyz") == 200, what="ready again once the API answers")


def test_a_standby_that_never_reached_the_api_is_not_ready(
    cp: FakeKube, start: Callable[..., Running]
) -> None:
    cp.faults.add("GET", "leases", status=500, times=-1)  # the API answers, but only with errors
    cp.faults.add("GET", "secrets", status=500, times=-1)  # (a warm standby lists the member Secrets)
    r = start(cp)
    wait_for(lambda: cp.faults.pending[0].hits >= 3, what="several lease attempts")
    code, body = get(r.port, "/readyz")
    assert code == 503 and "control-plane API not reached yet" in body
    assert r.code("/healthz") == 200


def test_the_leader_is_ready_once_synced_and_not_while_the_api_is_down(
    cp: FakeKube, start: Callable[..., Running]
) -> None:
    r = start(cp, leader_elect=False, api_ping_seconds=0.1)
    wait_for(lambda: r.code("/readyz") == 200, what="the leader ready")
    assert r.manager.leading
    cp.vanish()
    wait_for(lambda: r.code("/readyz") == 503, what="not ready with the API gone")
    assert r.code("/healthz") == 200
    cp.reappear()
    wait_for(lambda: r.code("/readyz") == 200, what="ready again")


def test_the_leader_is_not_ready_until_its_watches_listed(
    cp: FakeKube, start: Callable[..., Running]
) -> None:
    cp.faults.add("GET", "federatedhpas", status=500, times=-1)
    r = start(cp, leader_elect=False, api_ping_seconds=0.1)
    wait_for(lambda: r.manager.leading and r.manager.api_reachable()[0], what="leading, API reachable")
    code, body = get(r.port, "/readyz")
    assert code == 503 and "waiting for federatedhpas" in body
    cp.faults.clear()
    wait_for(lambda: r.code("/readyz") == 200, timeout=30, what="ready after the first list")


def test_a_deadlocked_loop_fails_liveness(cp: FakeKube, start: Callable[..., Running]) -> None:
    r = start(cp, leader_elect=False, api_ping_seconds=0.1, liveness_stall_seconds=0.5, probe_seconds=0.1)
    wait_for(lambda: r.code("/readyz") == 200, what="ready")
    assert r.code("/healthz") == 200
    release = threading.Event()
    probe_all = r.manager.registry.probe_all

    def wedged() -> Any:
        release.wait(30)
        return probe_all()

    r.manager.registry.probe_all = wedged  # type: ignore[method-assign]
    try:  # the member probe loop blocks in a probe: wedged, yet still alive
        wait_for(lambda: r.code("/healthz") == 503, what="liveness failing")
        assert "member-probes stuck for" in r.body("/healthz")
    finally:
        r.manager.registry.probe_all = probe_all  # type: ignore[method-assign]
        release.set()
    wait_for(lambda: r.code("/healthz") == 200, what="alive again once the loop turns")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_crashed_loop_fails_liveness(cp: FakeKube, start: Callable[..., Running]) -> None:
    r = start(cp, leader_elect=False, api_ping_seconds=0.1, probe_seconds=0.1)
    wait_for(lambda: r.code("/readyz") == 200, what="ready")

    def crash() -> None:
        raise RuntimeError("a bug in the member probe loop")

    r.manager._report_member_secrets = crash  # type: ignore[method-assign]
    wait_for(lambda: r.code("/healthz") == 503, what="liveness failing")
    assert "threads ended: member-probes" in r.body("/healthz")


class StuckLeaseClient(LeaseClient):
    """A Lease read that never returns (no timeout): the election loop is wedged."""

    release = threading.Event()
    stuck = False

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        if self.stuck:
            self.release.wait(30)
        return super().get(namespace, name)


def test_a_wedged_election_loop_fails_liveness(cp: FakeKube) -> None:
    other_holds_the_lease(cp)
    api = kube_config.new_client_from_config_dict(cp.kubeconfig())
    client = StuckLeaseClient(api)
    manager = FleetManager(
        KubeControlPlane(api),
        registry(SYSTEM),
        ManagerConfig(namespace=SYSTEM, lease=lease_config(), liveness_stall_seconds=0.5),
        lease_client=client,
    )
    r = Running(manager)
    try:
        wait_for(lambda: r.code("/readyz") == 200, what="the standby ready")
        client.stuck = True
        wait_for(lambda: r.code("/healthz") == 503, what="liveness failing")
        assert "leader-election stuck for" in r.body("/healthz")
    finally:
        client.release.set()
        r.close()
