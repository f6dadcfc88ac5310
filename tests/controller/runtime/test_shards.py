"""The shard partition and the spread rule, as pure functions (controller.runtime.shards).

The last tests run the rule as a protocol: replicas taking turns over a model of the K Leases (each
turn reads the Leases as they are and writes with the API server's compare-and-swap), with replicas
joining and dying, and check that every shard ends up held by one live replica, the holders within one
shard of each other, and nothing moving any more.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.runtime.shards import (
    ShardLease,
    fair_share,
    plan_shards,
    shard_lease_name,
    shard_of,
)

# -- the partition ---------------------------------------------------------------------------------


def test_the_shard_of_an_object_is_pinned_to_sha256_of_namespace_slash_name() -> None:
    # fixed values: a change of hash, encoding or separator would move every object to another replica
    assert [shard_of("default", "web", k) for k in (3, 7, 64)] == [2, 2, 36]
    assert [shard_of("shop", "checkout", k) for k in (3, 7, 64)] == [2, 2, 46]
    assert [shard_of("a", "b", k) for k in (3, 7, 64)] == [2, 6, 29]
    assert shard_of("anything", "at-all", 1) == 0


def test_the_shard_is_the_same_in_processes_with_different_hash_seeds() -> None:
    """Python's hash() of a str differs per process (PYTHONHASHSEED); the shard must not."""
    code = "from controller.runtime.shards import shard_of; print(shard_of('ns-1', 'obj-9', 1000))"
    seen = set()
    for seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        seen.add(out.stdout.strip())
    assert seen == {str(shard_of("ns-1", "obj-9", 1000))}


@given(st.text(min_size=1, max_size=20), st.text(min_size=1, max_size=20), st.integers(1, 200))
def test_every_object_falls_in_one_of_the_k_shards(namespace: str, name: str, shards: int) -> None:
    assert 0 <= shard_of(namespace, name, shards) < shards


def test_objects_spread_evenly_over_the_shards() -> None:
    counts = Counter(shard_of(f"ns-{i % 17}", f"fhpa-{i}", 8) for i in range(8000))
    assert set(counts) == set(range(8))
    assert max(counts.values()) < 1.1 * 1000 and min(counts.values()) > 0.9 * 1000


def test_one_shard_keeps_todays_lease_name_and_more_get_numbered_names() -> None:
    assert shard_lease_name("federated-hpa-controller", 0, 1) == "federated-hpa-controller"
    assert [shard_lease_name("fc", i, 3) for i in range(3)] == ["fc-shard-0", "fc-shard-1", "fc-shard-2"]


def test_a_bad_shard_count_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        shard_of("a", "b", 0)


# -- the rule, one decision at a time --------------------------------------------------------------


def leases(*holders: str, requested: dict[int, str] | None = None) -> list[ShardLease]:
    requested = requested or {}
    return [ShardLease(i, holder=h, requested_by=requested.get(i, "")) for i, h in enumerate(holders)]


def test_fair_share_rounds_up() -> None:
    assert [fair_share(6, n) for n in (1, 2, 3, 4, 6, 7)] == [6, 3, 2, 2, 1, 1]


def test_a_replica_alone_takes_one_free_shard_per_round() -> None:
    plan = plan_shards("a", 3, leases("", "", ""))
    assert plan.acquire in (0, 1, 2) and not plan.renew and plan.waiting == ""


def test_a_holder_renews_and_takes_no_more_than_its_fair_share() -> None:
    plan = plan_shards("a", 4, leases("a", "a", "b", ""))
    assert plan.renew == {0, 1} and plan.acquire is None  # two replicas seen: 2 each


def test_under_its_fair_share_a_holder_takes_a_free_shard() -> None:
    plan = plan_shards("b", 4, leases("a", "a", "b", ""))
    assert plan.renew == {2} and plan.acquire == 3


def test_replicas_pick_different_free_shards_mostly() -> None:
    picks = {plan_shards(f"replica-{i}", 16, leases(*[""] * 16)).acquire for i in range(8)}
    assert len(picks) >= 4  # rendezvous preference, not "the lowest free shard" for everybody


def test_a_newcomer_asks_the_busiest_holder_and_waits() -> None:
    plan = plan_shards("c", 4, leases("a", "a", "a", "b"))
    assert plan.request in (0, 1, 2) and plan.acquire is None
    assert plan.waiting.startswith("waiting for a shard Lease")


def test_a_replica_asks_once_until_the_holder_answered() -> None:
    plan = plan_shards("c", 4, leases("a", "a", "a", "b", requested={1: "c"}))
    assert plan.request is None


def test_no_request_when_the_difference_is_one() -> None:
    assert plan_shards("c", 2, leases("a", "b")).request is None  # a standby: more replicas than shards


def test_the_holder_hands_the_requested_shard_over_when_it_has_two_more() -> None:
    plan = plan_shards("a", 4, leases("a", "a", "a", "b", requested={1: "c"}))
    assert dict(plan.hand_over) == {1: "c"} and plan.renew == {0, 2}


def test_the_holder_keeps_a_requested_shard_when_that_would_not_even_out() -> None:
    plan = plan_shards("a", 3, leases("a", "a", "b", requested={1: "b"}))
    assert not plan.hand_over and plan.renew == {0, 1}  # renewing clears the request


def test_a_live_lease_with_another_shard_count_makes_a_replica_release_everything() -> None:
    view = [ShardLease(0, holder="a"), ShardLease(1, holder="old", shard_count=2), ShardLease(2)]
    plan = plan_shards("a", 3, view)
    assert plan.release == {0} and plan.acquire is None and not plan.renew
    assert "2 shards" in plan.waiting


def test_the_single_leader_lease_held_makes_a_replica_hold_nothing() -> None:
    plan = plan_shards("a", 2, leases("a", ""), foreign="the single-leader Lease x is held by old")
    assert plan.release == {0} and plan.acquire is None and "single-leader" in plan.waiting


def test_an_unreadable_lease_is_left_alone() -> None:
    view = [ShardLease(0, readable=False), ShardLease(1, holder="b")]
    plan = plan_shards("a", 2, view)
    assert plan.acquire is None and not plan.renew


# -- the rule as a protocol ------------------------------------------------------------------------

EXPIRY_ROUNDS = 2  # a Lease not renewed for this many rounds reads as free (the lease duration)


@dataclass
class Lease:
    holder: str = ""
    requested_by: str = ""
    renewed: int = 0  # the round of the holder's last write


@dataclass
class World:
    """The K Leases. Each replica's turn is one read of every Lease then its writes (a compare-and-swap
    on what it read, as a PUT with the resourceVersion), turns in any order."""

    shards: int
    leases: list[Lease] = field(default_factory=list)
    round: int = 0

    def __post_init__(self) -> None:
        self.leases = [Lease() for _ in range(self.shards)]

    def view(self) -> list[ShardLease]:
        out = []
        for i, lease in enumerate(self.leases):
            live = bool(lease.holder) and self.round - lease.renewed < EXPIRY_ROUNDS
            out.append(ShardLease(i, lease.holder if live else "", lease.requested_by if live else ""))
        return out

    def turn(self, me: str) -> None:
        plan = plan_shards(me, self.shards, self.view())
        for shard in plan.renew:
            self._write(shard, me)
        for shard, successor in plan.hand_over.items():
            self._write(shard, successor)
        if plan.acquire is not None:
            self._write(plan.acquire, me)
        if plan.request is not None:
            self.leases[plan.request].requested_by = me
        for shard in plan.release:
            self.leases[shard] = Lease()

    def _write(self, shard: int, holder: str) -> None:
        self.leases[shard] = Lease(holder=holder, renewed=self.round)  # every write answers a request

    def holders(self) -> list[str]:
        return [lease.holder if lease.holder else "" for lease in self.view()]


def balanced(world: World, live: list[str]) -> bool:
    holders = world.holders()
    if "" in holders or any(h not in live for h in holders):
        return False
    counts = [holders.count(r) for r in live]
    return max(counts) - min(counts) <= 1


events = st.lists(st.sampled_from(["join", "kill", "round"]), min_size=0, max_size=30)


@given(
    shards=st.integers(2, 12),
    first=st.integers(1, 5),
    history=events,
    rng=st.randoms(use_true_random=False),
)
def test_replicas_joining_and_dying_converge_to_an_even_spread_and_stay_there(
    shards: int, first: int, history: list[str], rng: random.Random
) -> None:
    world = World(shards)
    live = [f"r{i}" for i in range(first)]
    born = first

    def round_() -> None:
        world.round += 1
        for me in rng.sample(live, len(live)):
            world.turn(me)

    for event in history:
        if event == "join":
            live.append(f"r{born}")
            born += 1
        elif event == "kill" and len(live) > 1:
            live.remove(rng.choice(live))  # dies without releasing: its Leases expire
        round_()
    # from here nobody joins or dies: it must settle, then stay put
    limit = 4 * shards + 2 * EXPIRY_ROUNDS + 4
    for _ in range(limit):
        if balanced(world, live):
            break
        round_()
    assert balanced(world, live), f"not settled after {limit} rounds: {world.holders()} over {live}"
    settled = world.holders()
    for _ in range(3):
        round_()
    assert world.holders() == settled, "a settled spread kept moving"
