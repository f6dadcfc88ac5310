"""Shard Leases over HTTP (FakeKube): replicas spread the shards, a newcomer gets work by asking, a lost
shard stops only its own objects, and a standby says it waits.

Time is a hand-driven monotonic clock shared by the electors, so an expiry is a step of the clock,
not a sleep; the Lease calls are real HTTP requests to the fake API server.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import config as kube_config

from controller.ports import NotLeaderError
from controller.runtime.fence import Fence, current_object, writes_for
from controller.runtime.leader import LeaderConfig, LeaderElector, LeaseClient
from controller.runtime.shard_elector import ShardedElector
from controller.runtime.shards import REQUESTED_BY_ANNOTATION, SHARD_COUNT_ANNOTATION, shard_of
from tests.support.fakekube import FakeKube

NS = "kube-system"
LEASES = "leases.coordination.k8s.io"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CutLeaseClient(LeaseClient):
    """Writes to the Leases named in ``cut`` fail, as from a replica partitioned from them."""

    def __init__(self, api: Any) -> None:
        super().__init__(api)
        self.cut: set[str] = set()

    def replace(self, namespace: str, name: str, body: dict) -> dict:
        if name in self.cut:
            raise ConnectionResetError("partitioned")
        return super().replace(namespace, name, body)


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube() as fake:
        yield fake


def config(
    identity: str, name: str = "fc", lease: float = 3.0, renew: float = 2.0, retry: float = 0.5
) -> LeaderConfig:
    return LeaderConfig(
        namespace=NS,
        name=name,
        identity=identity,
        lease_duration_seconds=lease,
        renew_deadline_seconds=renew,
        retry_period_seconds=retry,
    )


def sharded(
    fake: FakeKube, identity: str, clock: Clock, shards: int = 6, client: LeaseClient | None = None
) -> ShardedElector:
    client = client or LeaseClient(kube_config.new_client_from_config_dict(fake.kubeconfig()))
    return ShardedElector(client, config(identity), shards, monotonic=clock)


def rounds(electors: list[ShardedElector], clock: Clock, n: int) -> None:
    """``n`` Lease rounds: each replica steps, then a retry period passes."""
    for _ in range(n):
        for e in electors:
            e.step()
        clock.now += 0.5


def holders(fake: FakeKube, shards: int = 6) -> list[str]:
    return [fake.store.get(LEASES, NS, f"fc-shard-{i}")["spec"]["holderIdentity"] for i in range(shards)]


def test_three_replicas_share_six_shards_two_each_and_every_object_has_one_owner(fake: FakeKube) -> None:
    clock = Clock()
    replicas = [sharded(fake, name, clock) for name in ("a", "b", "c")]
    rounds(replicas, clock, 12)
    assert sorted(Counter(holders(fake)).values()) == [2, 2, 2]
    for i, lease_holder in enumerate(holders(fake)):
        lease = fake.store.get(LEASES, NS, f"fc-shard-{i}")
        assert lease["metadata"]["annotations"][SHARD_COUNT_ANNOTATION] == "6"
        assert {r.identity for r in replicas if r.holds(i)} == {lease_holder}
    objects = [("default", f"fhpa-{n}") for n in range(200)]
    for obj in objects:
        assert sum(r.owns(obj) for r in replicas) == 1
    assert sum(r.owns(None) for r in replicas) == 1  # chores: the holder of shard 0


def test_a_killed_replicas_shards_are_taken_over_a_lease_duration_after_its_last_renewal(
    fake: FakeKube,
) -> None:
    """The survivors wait out the lease duration (3 s) by their own clocks, then take the dead
    replica's two shards, one each, in the next round: never before, and at most two rounds after."""
    clock = Clock()
    replicas = [sharded(fake, name, clock) for name in ("a", "b", "c")]
    rounds(replicas, clock, 12)
    assert sorted(Counter(holders(fake)).values()) == [2, 2, 2]
    dead = replicas.pop()  # stops without releasing: its Leases keep naming it
    orphans = dead.held()
    last_renewal = clock.now - 0.5  # its step in the last round
    taken_at = None
    while taken_at is None and clock.now < last_renewal + 30:
        step_time = clock.now
        rounds(replicas, clock, 1)
        if all(any(r.holds(s) for r in replicas) for s in orphans):
            taken_at = step_time
    assert taken_at is not None
    assert 3.0 <= taken_at - last_renewal <= 3.0 + 2 * 0.5, taken_at - last_renewal
    assert sorted(len(r.held()) for r in replicas) == [3, 3]


def test_a_newcomer_asks_and_the_busiest_replica_hands_a_shard_over(fake: FakeKube) -> None:
    clock = Clock()
    a = sharded(fake, "a", clock, shards=4)
    rounds([a], clock, 6)
    assert holders(fake, 4) == ["a"] * 4  # alone, it takes everything, one shard per round
    b = sharded(fake, "b", clock, shards=4)
    b.step()
    asked = [i for i in range(4) if REQUESTED_BY_ANNOTATION in _annotations(fake, i)]
    assert len(asked) == 1 and not b.held()
    shard = asked[0]
    a.step()  # a's round: hands the asked shard to b, and stops acting for it before the write
    assert not a.holds(shard) and a.is_leader()
    assert fake.store.get(LEASES, NS, f"fc-shard-{shard}")["spec"]["holderIdentity"] == "b"
    assert REQUESTED_BY_ANNOTATION not in _annotations(fake, shard)
    b.step()  # b renews what was handed to it: only now does it act for it
    assert b.holds(shard)
    rounds([a, b], clock, 6)
    assert sorted(Counter(holders(fake, 4)).values()) == [2, 2]


def _annotations(fake: FakeKube, shard: int) -> dict[str, str]:
    return fake.store.get(LEASES, NS, f"fc-shard-{shard}")["metadata"].get("annotations") or {}


def test_a_replica_that_loses_one_shard_keeps_acting_for_the_others(fake: FakeKube) -> None:
    clock = Clock()
    client = CutLeaseClient(kube_config.new_client_from_config_dict(fake.kubeconfig()))
    a = sharded(fake, "a", clock, shards=3, client=client)
    rounds([a], clock, 4)
    assert a.held() == {0, 1, 2}
    fence = Fence(lambda: a.owns(current_object()))
    lost_obj = next(("default", f"o{n}") for n in range(100) if shard_of("default", f"o{n}", 3) == 1)
    kept_obj = next(("default", f"o{n}") for n in range(100) if shard_of("default", f"o{n}", 3) == 0)
    client.cut.add("fc-shard-1")
    rounds([a], clock, 5)  # 2.5 s: past the 2 s renew deadline for shard 1
    assert a.held() == {0, 2} and a.is_leader()
    with writes_for(*kept_obj):
        fence.check("write")  # its shard is still held: allowed
    with writes_for(*lost_obj), pytest.raises(NotLeaderError):
        fence.check("write")
    # another replica takes shard 1 once its Lease has expired by its clock (3 s without a change)
    b = sharded(fake, "b", clock, shards=3)
    rounds([b], clock, 1)
    assert not b.holds(1)
    rounds([a, b], clock, 8)
    assert b.holds(1) and 1 not in a.held() and a.held()  # (b may also have asked a for one more)
    assert holders(fake, 3)[1] == "b"


def test_a_standby_says_once_that_it_waits_for_a_shard_lease(
    fake: FakeKube, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    a, b = sharded(fake, "a", clock, shards=2), sharded(fake, "b", clock, shards=2)
    rounds([a, b], clock, 4)
    c = sharded(fake, "c", clock, shards=2)
    with caplog.at_level(logging.INFO, logger="controller.runtime.shard_elector"):
        rounds([a, b, c], clock, 5)
    waiting = [r for r in caplog.records if r.getMessage() == "standing by: waiting for a shard Lease"]
    assert len(waiting) == 1 and waiting[0].identity == "c"  # type: ignore[attr-defined]
    assert not c.held() and len(a.held()) == len(b.held()) == 1


def test_a_sharded_replica_holds_nothing_while_the_single_leader_lease_is_held(fake: FakeKube) -> None:
    """An upgrade from one Lease to shards: the old leader acts for everything until it is gone."""
    clock = Clock()
    old = LeaderElector(
        LeaseClient(kube_config.new_client_from_config_dict(fake.kubeconfig())),
        config("old"),
        monotonic=clock,
    )
    assert old.try_acquire_or_renew()
    new = sharded(fake, "new", clock, shards=2)
    rounds([new], clock, 3)
    assert not new.held()
    old.release()
    rounds([new], clock, 3)
    assert new.held() == {0, 1}


def test_replicas_with_another_shard_count_make_a_replica_let_go(fake: FakeKube) -> None:
    clock = Clock()
    three = sharded(fake, "three", clock, shards=3)
    rounds([three], clock, 4)
    assert three.held() == {0, 1, 2}
    two = sharded(fake, "two", clock, shards=2)
    rounds([two], clock, 1)
    assert not two.held()  # shards 0 and 1 are live with a count of 3
    three.step()  # sees nothing foreign (shard 2 of "two" does not exist), keeps going
    assert three.held() == {0, 1, 2}


def test_run_starts_the_controllers_on_the_first_shard_and_releases_all_on_stop(fake: FakeKube) -> None:
    started, stopped, gained = threading.Event(), threading.Event(), []
    client = LeaseClient(kube_config.new_client_from_config_dict(fake.kubeconfig()))
    fast = config("a", lease=1.0, renew=0.6, retry=0.05)
    a = ShardedElector(
        client,
        fast,
        3,
        on_started_leading=started.set,
        on_stopped_leading=stopped.set,
        on_shards_gained=gained.append,
    )
    stop = threading.Event()
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(a.run(stop)))
    thread.start()
    assert started.wait(5)
    for _ in range(200):  # one shard per round: three rounds, given ten seconds on a loaded machine
        if len(a.held()) == 3:
            break
        stop.wait(0.05)
    stop.set()
    thread.join(5)
    assert result == [True] and stopped.is_set()
    assert sorted(s for g in gained for s in g) == [0, 1, 2]
    assert holders(fake, 3) == ["", "", ""]


def test_the_single_leader_waits_and_says_so_once(fake: FakeKube, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 15 item 5: a standby logs that it waits for the Lease, naming the holder."""
    api = kube_config.new_client_from_config_dict(fake.kubeconfig())
    leader = LeaderElector(LeaseClient(api), config("a", name="single"))
    assert leader.try_acquire_or_renew()
    fast = config("b", name="single", lease=30.0, renew=20.0, retry=0.05)
    standby = LeaderElector(LeaseClient(api), fast)
    stop = threading.Event()
    with caplog.at_level(logging.INFO, logger="controller.runtime.leader"):
        thread = threading.Thread(target=standby.run, args=(stop,))
        thread.start()
        stop.wait(0.5)  # about ten attempts
        stop.set()
        thread.join(5)
    waiting = [r for r in caplog.records if r.getMessage() == "standing by: waiting for the leader Lease"]
    assert len(waiting) == 1 and waiting[0].holder == "a"  # type: ignore[attr-defined]


def test_the_role_grants_every_lease_call_of_sharded_replicas_for_any_shard_count(fake: FakeKube) -> None:
    """Acquire, renew, ask, hand over and release, recorded as RBAC triples, against the Role. The
    Lease rule names no resourceNames: K and --lease-name choose the names, and `create` cannot be
    limited by name anyway (docs/sharding.md)."""
    from tests.manifests import test_controller_rbac as rbac

    clock = Clock()
    a = sharded(fake, "a", clock, shards=4)
    rounds([a], clock, 5)
    b = sharded(fake, "b", clock, shards=4)
    rounds([b, a, b], clock, 3)
    assert b.held()  # b asked, a handed a shard over
    for shard in sorted(a.held()):
        a._electors[shard].release()
    used = {t for t in rbac.calls(fake.requests) if t[1] == "leases"}
    assert {verb for _, _, verb in used} == {"get", "create", "update"}
    role = rbac.by_kind(rbac.render(), "Role")
    assert used <= rbac.granted(role)
    assert all("resourceNames" not in rule for rule in role["rules"] if "leases" in rule["resources"])


def test_a_manager_with_shards_but_no_leader_election_is_refused() -> None:
    from controller.runtime.fleet import FleetManager
    from controller.runtime.manager import ManagerConfig

    with pytest.raises(ValueError, match="shards need leader election"):
        FleetManager(None, None, ManagerConfig(namespace=NS, leader_elect=False, shards=3))  # type: ignore[arg-type]


class SlowLeaseClient(LeaseClient):
    """Every Lease read takes 10 s of the hand-driven clock (a server timing requests out)."""

    def __init__(self, api: Any, clock: Clock) -> None:
        super().__init__(api)
        self.clock = clock
        self.elector: ShardedElector | None = None
        self.loop_ages: list[float] = []

    def get(self, namespace: str, name: str) -> dict | None:
        assert self.elector is not None
        self.loop_ages.append(self.elector.loop_age())
        self.clock.now += 10
        return super().get(namespace, name)


def test_a_round_of_slow_lease_reads_still_counts_as_a_turning_loop(fake: FakeKube) -> None:
    """/healthz fails when loop_age() passes the stall limit; a round reads K + 1 Leases, so the loop
    beats after each read, not once per round (K request timeouts could pass the limit)."""
    clock = Clock()
    client = SlowLeaseClient(kube_config.new_client_from_config_dict(fake.kubeconfig()), clock)
    elector = sharded(fake, "a", clock, shards=6, client=client)
    client.elector = elector
    elector.step()
    assert len(client.loop_ages) == 7 and max(client.loop_ages) <= 10
