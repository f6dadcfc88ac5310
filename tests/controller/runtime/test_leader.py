"""Leader election on a Lease: one holder at a time, takeover after expiry, release on shutdown."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from kubernetes import config as kube_config

from controller.ports import NotLeaderError
from controller.runtime.fence import Fence
from controller.runtime.leader import LeaderConfig, LeaderElector, LeaseClient
from tests.support.fakekube import FakeKube


def fast_config(identity: str) -> LeaderConfig:
    return LeaderConfig(
        namespace="kube-system",
        identity=identity,
        lease_duration_seconds=1.0,
        renew_deadline_seconds=0.6,
        retry_period_seconds=0.1,
    )


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube() as fake:
        yield fake


def elector(fake: FakeKube, identity: str, **cb: object) -> LeaderElector:
    client = LeaseClient(kube_config.new_client_from_config_dict(fake.kubeconfig()))
    return LeaderElector(client, fast_config(identity), **cb)  # type: ignore[arg-type]


def test_the_first_candidate_creates_the_lease_and_the_second_waits(fake: FakeKube) -> None:
    a, b = elector(fake, "a"), elector(fake, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.try_acquire_or_renew()  # renew
    lease = fake.store.get("leases.coordination.k8s.io", "kube-system", "federated-hpa-controller")
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseTransitions"] == 0


def test_an_expired_lease_is_taken_over_by_the_waiting_candidate(fake: FakeKube) -> None:
    a, b = elector(fake, "a"), elector(fake, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    time.sleep(1.1)  # a stopped renewing; by b's clock the record has not moved for a lease duration
    assert b.try_acquire_or_renew()
    lease = fake.store.get("leases.coordination.k8s.io", "kube-system", "federated-hpa-controller")
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()  # a sees b's fresh record


def test_racing_writers_cannot_both_win_thanks_to_resource_version(fake: FakeKube) -> None:
    a = elector(fake, "a")
    assert a.try_acquire_or_renew()
    fake.faults.add("PUT", "leases", status=409)
    assert not a.try_acquire_or_renew()


def test_release_lets_a_successor_take_over_at_once(fake: FakeKube) -> None:
    a, b = elector(fake, "a"), elector(fake, "b")
    assert a.try_acquire_or_renew()
    a.release()
    assert not a.is_leader()
    assert b.try_acquire_or_renew()


def test_run_leads_renews_and_releases_on_stop(fake: FakeKube) -> None:
    started, stopped = threading.Event(), threading.Event()
    a = elector(fake, "a", on_started_leading=started.set, on_stopped_leading=stopped.set)
    stop = threading.Event()
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(a.run(stop)))
    t.start()
    assert started.wait(3)
    time.sleep(0.5)
    assert a.is_leader()
    stop.set()
    t.join(3)
    assert stopped.is_set() and result == [True]
    lease = fake.store.get("leases.coordination.k8s.io", "kube-system", "federated-hpa-controller")
    assert lease["spec"]["holderIdentity"] == ""


class CutOffLeaseClient(LeaseClient):
    """A LeaseClient whose writes start failing when ``cut`` is set: a leader cut off from the server."""

    cut = False

    def replace(self, namespace: str, name: str, body: dict) -> dict:
        if self.cut:
            raise ConnectionResetError("network partition")
        return super().replace(namespace, name, body)


def test_a_leader_that_cannot_renew_stops_acting_before_anyone_else_can_start(fake: FakeKube) -> None:
    lost = threading.Event()
    client = CutOffLeaseClient(kube_config.new_client_from_config_dict(fake.kubeconfig()))
    a = LeaderElector(client, fast_config("a"), on_stopped_leading=lost.set)
    b = elector(fake, "b")
    stop = threading.Event()
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(a.run(stop)))
    t.start()
    deadline = time.monotonic() + 3
    while not a.is_leader() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert a.is_leader()
    # a's worker keeps writing (a ConfigMap per write, through the write fence the manager uses)
    fence = Fence(a.is_leader)
    a_writes: list[float] = []
    writing = threading.Event()

    def worker() -> None:
        n = 0
        while not writing.is_set():
            try:
                fence.check("write")
            except NotLeaderError:
                time.sleep(0.01)
                continue
            n += 1
            fake.store.create("configmaps", {"metadata": {"name": f"a-{n}", "namespace": "kube-system"}})
            a_writes.append(time.monotonic())
            time.sleep(0.01)

    w = threading.Thread(target=worker, daemon=True)
    w.start()
    time.sleep(0.1)
    client.cut = True
    b_since: float | None = None
    while time.monotonic() < deadline + 3 and b_since is None:
        if b.try_acquire_or_renew():
            b_since = time.monotonic()
        time.sleep(0.02)
    time.sleep(0.3)
    writing.set()
    w.join(2)
    t.join(3)
    assert b_since is not None, "b takes over once the lease expired"
    assert a_writes, "a wrote while it led"
    assert max(a_writes) < b_since, "a wrote after b took the Lease"
    assert fence.refused > 0  # a's worker was still trying when it was cut off
    assert lost.is_set() and result == [False]
    stop.set()


def test_inconsistent_timings_are_refused() -> None:
    with pytest.raises(ValueError, match="renew deadline"):
        LeaderConfig(namespace="x", lease_duration_seconds=5, renew_deadline_seconds=10)
