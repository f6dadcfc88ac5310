"""Sharding FederatedHPAs across controller replicas: which shard an object is in, and what one replica
should do with the shard Leases it sees. Pure functions only; controller.runtime.shard_elector does the
Lease reads and writes.

The partition: an object ``namespace/name`` is in shard ``sha256("namespace/name") mod K``. A digest,
not Python's ``hash()``, because every replica (any process, any Python version, any PYTHONHASHSEED)
must put an object in the same shard, or two replicas would reconcile it.

The spread rule, evaluated by every replica on every Lease round from what the K Leases say:

- a replica renews the shards it holds, and takes at most one free or expired shard per round, and only
  while it holds fewer than its fair share ``ceil(K / replicas seen)``. Replicas seen are the live
  holders, the replicas asking for a shard (below) and itself. At least one live replica is always under
  its share while a shard is free (the counts sum to less than K), so a shard is never orphaned;
- a replica that holds at least two shards fewer than some other holder (a newcomer holds none) asks
  that holder for one: it writes its identity in an annotation of one of the holder's Leases;
- the holder honours a request when it still holds at least two more than the asker: it writes the
  asker in as the holder (a hand-over; it stops acting for that shard before the write). Every renewal
  removes the request, so a request from a replica that has since died lives one round at most.

So replicas converge to holding K/replicas shards each, give or take one, without any new API
object: the Leases are the membership list. A standby (more replicas than shards) holds none and
waits. Replicas configured with a different K would cut the objects differently, so a replica that
sees a live Lease written with another shard count, or the single-leader Lease held, acts on nothing
until that is gone (a rollout that changes ``--shards``).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

SHARD_COUNT_ANNOTATION = "autoscaling.karmada.io/shard-count"
REQUESTED_BY_ANNOTATION = "autoscaling.karmada.io/shard-requested-by"


def shard_of(namespace: str, name: str, shards: int) -> int:
    """The shard of ``namespace/name`` among ``shards``: the same in every process and Python version."""
    if shards < 1:
        raise ValueError(f"the number of shards must be at least 1, got {shards}")
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards


def shard_lease_name(base: str, shard: int, shards: int) -> str:
    """One shard: the Lease of today's single leader, by its name (upgrades keep it); else one per shard."""
    return base if shards == 1 else f"{base}-shard-{shard}"


def preference(identity: str, shard: int) -> int:
    """How much ``identity`` prefers ``shard`` (rendezvous hashing): replicas racing for free shards
    mostly pick different ones, so fewer of their writes conflict."""
    return int.from_bytes(hashlib.sha256(f"{identity}/{shard}".encode()).digest()[:8], "big")


@dataclass(frozen=True)
class ShardLease:
    """One shard's Lease as a replica judged it on this round.

    ``holder`` is "" when the Lease is absent, released, or expired by the reader's clock;
    ``readable`` is False when the read failed (the shard is then left alone this round)."""

    shard: int
    holder: str = ""
    requested_by: str = ""
    shard_count: int | None = None
    readable: bool = True


@dataclass(frozen=True)
class ShardPlan:
    """What one replica writes on this round."""

    renew: frozenset[int] = frozenset()
    acquire: int | None = None
    hand_over: Mapping[int, str] = field(default_factory=dict)  # shard -> the asker it goes to
    request: int | None = None  # ask the holder of this shard for it
    release: frozenset[int] = frozenset()
    waiting: str = ""  # why this replica holds nothing and takes nothing ("" when it does)


def holder_counts(leases: Sequence[ShardLease]) -> Counter[str]:
    """Shards per live holder."""
    return Counter(lease.holder for lease in leases if lease.readable and lease.holder)


def replicas_seen(leases: Sequence[ShardLease], me: str) -> set[str]:
    """Live holders, replicas asking for a shard on a live Lease, and ``me``."""
    seen = {me, *holder_counts(leases)}
    seen.update(lease.requested_by for lease in leases if lease.holder and lease.requested_by)
    return seen


def fair_share(shards: int, replicas: int) -> int:
    return math.ceil(shards / max(1, replicas))


def foreign_configuration(leases: Sequence[ShardLease], me: str, shards: int) -> str:
    """Why this replica must not act (a live Lease written with another shard count), or ""."""
    for lease in leases:
        if lease.holder and lease.holder != me and lease.shard_count not in (None, shards):
            return (
                f"shard Lease {lease.shard} is held by {lease.holder} with {lease.shard_count} shards, "
                f"this replica runs with {shards}"
            )
    return ""


def plan_shards(me: str, shards: int, leases: Sequence[ShardLease], foreign: str = "") -> ShardPlan:
    """One replica's round: renew, hand over, take at most one free shard, or ask for one.

    ``foreign`` (the single-leader Lease held, or replicas with another shard count) means: hold
    nothing; every shard this replica holds is released."""
    mine = frozenset(lease.shard for lease in leases if lease.readable and lease.holder == me)
    foreign = foreign or foreign_configuration(leases, me, shards)
    if foreign:
        return ShardPlan(release=mine, waiting=f"waiting: {foreign}")
    counts = holder_counts(leases)
    hand_over = _hand_over(leases, me, counts)
    renew = mine - set(hand_over)
    acquire = _acquire(leases, me, shards, counts)
    request = None if acquire is not None or hand_over else _request(leases, me, counts)
    waiting = ""
    if not renew and acquire is None:
        holders = ", ".join(sorted(counts)) or "nobody"
        waiting = f"waiting for a shard Lease ({len(leases)} shards held by {holders})"
    return ShardPlan(renew=renew, acquire=acquire, hand_over=hand_over, request=request, waiting=waiting)


def _hand_over(leases: Sequence[ShardLease], me: str, counts: Counter[str]) -> dict[int, str]:
    """At most one of my shards to a replica that asked for it and holds two or more fewer than I do."""
    for lease in sorted(leases, key=lambda lease: lease.shard):
        asker = lease.requested_by
        if (
            lease.readable
            and lease.holder == me
            and asker
            and asker != me
            and counts[me] - counts[asker] >= 2
        ):
            return {lease.shard: asker}
    return {}


def _acquire(leases: Sequence[ShardLease], me: str, shards: int, counts: Counter[str]) -> int | None:
    """The free shard I prefer, while I hold fewer than my fair share."""
    free = [lease.shard for lease in leases if lease.readable and not lease.holder]
    if not free or counts[me] >= fair_share(shards, len(replicas_seen(leases, me))):
        return None
    return max(free, key=lambda shard: preference(me, shard))


def _request(leases: Sequence[ShardLease], me: str, counts: Counter[str]) -> int | None:
    """A shard of the busiest holder with two or more more than I have, unless I already asked."""
    if any(lease.requested_by == me for lease in leases if lease.holder):
        return None  # one request at a time; the holder answers it on its next renewal
    others = [(count, holder) for holder, count in counts.items() if holder != me]
    if not others:
        return None
    count, busiest = max(others, key=lambda item: (item[0], item[1]))
    if count - counts[me] < 2:
        return None
    askable = [lease.shard for lease in leases if lease.holder == busiest and not lease.requested_by]
    if not askable:
        return None
    return max(askable, key=lambda shard: preference(me, shard))
