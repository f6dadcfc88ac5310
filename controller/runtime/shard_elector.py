"""Holding shard Leases: the I/O side of controller.runtime.shards.

One ShardedElector per replica drives one LeaderElector per shard Lease (so every Lease follows the
client-go rules of controller.runtime.leader: expiry by our own clock, resourceVersion on every write, a
renew deadline shorter than the lease duration). Every ``retry_period`` it reads the K shard Leases and
the single-leader Lease, asks controller.runtime.shards.plan_shards what to do, and does it: renew,
take one free shard, hand one over to a replica that asked, ask for one, or release (another shard
count is live).

Unlike the single Lease, losing a shard Lease does not end the process: the replica stops acting for
that shard's objects (``owns()`` and the write fence ask per object) and keeps the others. The
controllers start when the first shard is won and run until shutdown, so a replica that lost every
shard keeps its caches warm and campaigns on. On shutdown every held shard is released, after the
caller's ``on_stopped_leading`` let the reconciles in flight finish.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from controller.runtime.leader import LeaderConfig, LeaderElector, LeaseClient, LeaseState, default_identity
from controller.runtime.shards import (
    REQUESTED_BY_ANNOTATION,
    SHARD_COUNT_ANNOTATION,
    ShardLease,
    ShardPlan,
    plan_shards,
    shard_lease_name,
    shard_of,
)

log = logging.getLogger(__name__)

_LEASE_ERRORS = (ApiException, Urllib3Error, OSError, ValueError)


def _shard_lease(shard: int, state: LeaseState | None) -> ShardLease:
    """A read (None: it failed) as the pure planner sees it."""
    if state is None:
        return ShardLease(shard, readable=False)
    annotations = state.annotations or {}
    count = annotations.get(SHARD_COUNT_ANNOTATION, "")
    return ShardLease(
        shard,
        holder=state.holder if state.live else "",
        requested_by=annotations.get(REQUESTED_BY_ANNOTATION, "") if state.live else "",
        shard_count=int(count) if count.isdigit() else None,
    )


class ShardedElector:
    """Campaigns for every shard Lease, holds a fair share of them, reports which it holds."""

    def __init__(
        self,
        client: LeaseClient,
        config: LeaderConfig,
        shards: int,
        *,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
        on_shards_gained: Callable[[frozenset[int]], None] = lambda gained: None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if shards < 2:
            raise ValueError("a sharded elector needs at least 2 shards (1 is the single leader Lease)")
        self.identity = config.identity or default_identity()
        self.config = replace(config, identity=self.identity)
        self.shards = shards
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_gained = on_shards_gained
        self._monotonic = monotonic
        self._electors = [
            LeaderElector(
                client,
                replace(self.config, name=shard_lease_name(config.name, i, shards)),
                monotonic=monotonic,
                annotations={SHARD_COUNT_ANNOTATION: str(shards)},
                drop_annotations=(REQUESTED_BY_ANNOTATION,),
            )
            for i in range(shards)
        ]
        self._single = LeaderElector(client, self.config, monotonic=monotonic)  # read, never written
        self._lock = threading.Lock()
        self._held: frozenset[int] = frozenset()
        self._waiting = ""
        self._last_tick = monotonic()
        self._rng = random.Random()

    # -- what the rest of the controller asks -------------------------------------------------------

    def holds(self, shard: int) -> bool:
        """We wrote this shard's Lease within the renew deadline."""
        return self._electors[shard].holds()

    def owns(self, obj: tuple[str, str] | None) -> bool:
        """May this replica act on ``(namespace, name)``? ``None`` is a chore that belongs to no object
        (a member Secret's Event): the holder of shard 0 does those, so exactly one replica does."""
        shard = 0 if obj is None else shard_of(obj[0], obj[1], self.shards)
        return self.holds(shard)

    def is_leader(self) -> bool:
        """Holds at least one shard."""
        return any(e.holds() for e in self._electors)

    def held(self) -> frozenset[int]:
        return frozenset(i for i, e in enumerate(self._electors) if e.holds())

    def contact_age(self) -> float:
        """Seconds since the API server last answered one of our Lease reads."""
        return min(e.contact_age() for e in (*self._electors, self._single))

    def loop_age(self) -> float:
        with self._lock:
            return self._monotonic() - self._last_tick

    # -- the loop -----------------------------------------------------------------------------------

    def run(self, stop: threading.Event, on_lost: Callable[[], None] = lambda: None) -> bool:
        """Campaign until ``stop``; a lost shard is not fatal, so this always returns True (after
        ``on_stopped_leading`` and the release of every held shard). ``on_lost`` is never called: it is
        there so the manager drives both electors alike."""
        started = False
        while not stop.is_set():
            self.step()
            if not started and self._held:
                started = True
                self._on_started()
            stop.wait(self.config.retry_period_seconds * (1 + self._rng.uniform(0, 0.2)))
        if started:
            self._on_stopped()
        for shard in sorted(self.held()):
            self._electors[shard].release()
        return True

    def step(self) -> ShardPlan:
        """One round: renew what we hold, read the other Leases, plan, write, report what changed.

        The held shards are read and renewed first, each right after its own read, so a round that
        reads many Leases from a slow server does not push their renewals towards the deadline."""
        renewed = {shard: self._renew(shard) for shard in sorted(self._held)}
        states = [renewed[i] if i in renewed else self._read(e) for i, e in enumerate(self._electors)]
        leases = [_shard_lease(i, state) for i, state in enumerate(states)]
        single = self._read(self._single)
        foreign = ""
        if single is not None and single.held_by_other(self.identity):
            foreign = f"the single-leader Lease {self.config.name} is held by {single.holder}"
        plan = plan_shards(self.identity, self.shards, leases, foreign)
        self._execute(replace(plan, renew=plan.renew - set(renewed)))
        self._report(plan)
        with self._lock:
            self._last_tick = self._monotonic()
        return plan

    def _renew(self, shard: int) -> LeaseState | None:
        """Read a shard we held last round and, while it still names us, renew it at once."""
        state = self._read(self._electors[shard])
        if state is not None and state.holder == self.identity:
            self._write(shard, "renew", self._electors[shard].take)
        return state

    def _read(self, elector: LeaderElector) -> LeaseState | None:
        """One Lease read; the loop counts as turning after each (liveness), since a round of K reads
        from a server that times every request out can take K request timeouts."""
        try:
            return elector.observe()
        except _LEASE_ERRORS as exc:
            log.info("shard lease read failed", extra={"lease": elector.config.name, "error": _why(exc)})
            return None
        finally:
            with self._lock:
                self._last_tick = self._monotonic()

    def _execute(self, plan: ShardPlan) -> None:
        for shard in sorted(plan.renew):
            self._write(shard, "renew", self._electors[shard].take)
        for shard, successor in plan.hand_over.items():
            if self._write(shard, "hand over", partial(self._electors[shard].hand_over, successor)):
                log.info("shard handed over", extra={"shard": shard, "to": successor, **self._who()})
        if plan.acquire is not None:
            self._write(plan.acquire, "acquire", self._electors[plan.acquire].take)
        if plan.request is not None:
            ask = partial(self._electors[plan.request].ask, REQUESTED_BY_ANNOTATION, self.identity)
            if self._write(plan.request, "request", ask):
                log.info("asked for a shard", extra={"shard": plan.request, **self._who()})
        for shard in sorted(plan.release):
            self._electors[shard].release()

    def _write(self, shard: int, what: str, call: Callable[[], bool]) -> bool:
        try:
            return call()
        except _LEASE_ERRORS as exc:
            log.info("shard lease write failed", extra={"shard": shard, "write": what, "error": _why(exc)})
            return False

    def _report(self, plan: ShardPlan) -> None:
        """Log what changed (a shard won or lost, waiting or not) and start the gained shards' work."""
        held = self.held()
        gained, lost = held - self._held, self._held - held - set(plan.hand_over) - plan.release
        self._held = held
        for shard in sorted(gained):
            log.info("shard lease acquired", extra={"shard": shard, "held": sorted(held), **self._who()})
        for shard in sorted(lost):
            log.error(
                "shard lease lost; its objects are left to the replica that takes it",
                extra={"shard": shard, "held": sorted(held), **self._who()},
            )
        if plan.waiting != self._waiting:
            self._waiting = plan.waiting
            if plan.waiting:
                log.info(
                    "standing by: waiting for a shard Lease", extra={"reason": plan.waiting, **self._who()}
                )
        if gained:
            self._on_gained(gained)

    def _who(self) -> dict[str, str]:
        return {"identity": self.identity, "lease": f"{self.config.namespace}/{self.config.name}-shard-*"}


def _why(exc: BaseException) -> str:
    return str(exc.status) if isinstance(exc, ApiException) else type(exc).__name__
