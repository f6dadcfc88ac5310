"""The running process: informers, controllers, workers, leader election, probes and a resync.

The manager knows no kind. A kind is registered as a reconciler (controller.result.Reconciler) with the
informer whose objects it reconciles (``register``); informers that feed no controller (``add_informer``)
and periodic loops (``add_loop``) are registered the same way. ``controller.runtime.fleet`` registers
this project's kinds; a new kind is a reconciler plus one ``register`` line there.

How the pieces fit (one process, a handful of threads):

    from process start, leader or standby (warm standby): the informers registered as ``standby`` (the
        member Secrets, and through them the registry's member caches); they only read, so a takeover
        costs the Lease and not a sync of every member
    LeaderElector.run (main thread) ── on leading ──► start:
        one ListWatch per informer (controller.kube.listwatch), one thread each: every change calls the
            informer's handler, by default "enqueue the object's key" for the kind it feeds
        WorkQueue ──► workers: each key to the Controller of its kind (controller.runtime.controller),
            whose Result becomes a delayed add (a cron rule's next fire, a plan's requeue_after)
        resync thread: every resync period, every known key → WorkQueue (a missed event heals)
        the registered loops (the member probes)
    ── on stop (SIGTERM) ──► stop the informers at once (a socket shutdown: an idle watch never holds
       shutdown up), stop handing out keys, let each worker finish the reconcile in flight (at most
       --shutdown-grace), then release the Lease (LeaderElector does it after on_stopped_leading).
    ── on Lease loss ──► nothing waits: every write is fenced (controller.runtime.fence) from the renew
       deadline on, so the reconciles in flight are abandoned at their next write; run() returns 1.

Start: no worker takes a key before every informer has listed once, and then, for at most
``member_sync_grace_seconds``, until ``warming_up()`` names nothing more to wait for.

Keys are ``(kind, namespace, name)``. The queue guarantees one reconcile per key at a time; several
workers reconcile different objects in parallel. The informers only say *which* object to look at; a
reconciler reads what it acts on fresh from the API.

Before every reconcile, and before every write within one (the fence), a worker asks the elector
whether the Lease is still ours (renewed within the renew deadline, which is shorter than the lease
duration); a process that lost it stops writing at once and the caller exits.

Shards (``ManagerConfig.shards`` > 1, docs/sharding.md): the elector is a ShardedElector holding some
of K shard Leases, and "ours" is asked per object (``owns()``): the work loop skips a key whose shard
another replica holds, and the fence refuses a write for an object whose shard this replica no longer
holds, so losing one shard leaves the others running (the process does not exit). Informers stay
global: every replica watches every object and filters by shard. A shard won enqueues every key.

Probes: ``ready()`` means "this process can do its job": the control-plane API answered within the
contact window (a Lease read, an informer's list or watch, or, without leader election, a GET /version
every ``api_ping_seconds``), and on the leader every informer has synced its first list. ``alive()``
means "no loop is wedged or dead": every loop beats a ``Heartbeats`` entry each turn, and a down API
server only slows the turns (every call has a timeout), so it never fails liveness.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import VersionApi

from controller import finalizer
from controller.backoff import ExponentialBackoff
from controller.kube.control_plane import KubeControlPlane
from controller.kube.listwatch import SYNC, ListWatch, ObjectKey, Trim, list_gate
from controller.planning.namespaces import NamespacePolicy
from controller.planning.planner import PlannerConfig
from controller.result import Reconciler
from controller.runtime.controller import Controller, Key
from controller.runtime.fence import Fence, FencedControlPlane, current_object
from controller.runtime.health import Heartbeats
from controller.runtime.leader import Elector, LeaderConfig, LeaderElector, LeaseClient
from controller.runtime.metrics import Metrics
from controller.runtime.shard_elector import ShardedElector
from controller.runtime.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

CONTROL_PLANE_DENIED_RETRY_SECONDS = 30.0
"""An informer the control plane refuses (RBAC) is retried this often: the controller can do nothing
without it, so it is worth more tries than a member's optional resource."""


@dataclass(frozen=True)
class WatchEvent:
    """One change an informer reports to its handler (the first list's objects come as ADDED)."""

    type: str  # ADDED, MODIFIED or DELETED
    key: ObjectKey
    obj: Mapping[str, Any]
    listed: bool = False  # an object of the informer's first list, not news of a change


@dataclass(frozen=True)
class InformerSpec:
    """What an informer lists and watches on the control plane, what its store keeps, who hears of it."""

    name: str  # the watch's name in logs and readiness ("waiting for <name>")
    path: str  # the collection's API path
    trim: Trim
    resource: str  # the metrics label of its relists
    handler: Callable[[WatchEvent], None] | None = None  # None: enqueue the key for the kind it feeds
    label_selector: str | None = None
    on_full: Callable[[str, Mapping[str, Any]], None] | None = None  # controller.kube.listwatch
    # kept from process start, leader or standby (ManagerConfig.warm_standby): its handler must only
    # read and keep state, since a standby may not write; informers that feed a kind never are
    standby: bool = False


_HEAP_LOCK = threading.Lock()
THAW_SECONDS = 30.0
_thawed_until = [0.0]  # monotonic time until which settle_heap collects without freezing


def settle_heap() -> None:
    """Collect garbage once, then move every object alive now out of reach of the cyclic collector
    (``gc.freeze``). The member caches hold millions of small long-lived objects; a full collection
    walks them all (about a second at 1,000 FederatedHPAs over 10 members of 10,000 pods) and holds the
    interpreter meanwhile, which is what a member event would wait for. Frozen objects are still freed
    by reference counting when dropped; called after the caches sync and at each resync pass, so what
    the collector walks stays what changed since."""
    if not _HEAP_LOCK.acquire(blocking=False):
        return
    try:
        gc.collect()
        if time.monotonic() >= _thawed_until[0]:
            gc.freeze()
    finally:
        _HEAP_LOCK.release()


def release_heap() -> None:
    """Give what ``settle_heap`` froze back to the cyclic collector, and keep it unfrozen for a while.

    Called when a member's client and caches are dropped (its Secret rotated or removed). A cache holds
    reference cycles (its watch threads, callbacks, the client's pool), and a frozen cycle is never
    collected, so without this each rotation kept a whole member cache alive for the life of the
    process. The dropped member's threads may take a few seconds to end (a read in progress), so the
    heap stays unfrozen for ``THAW_SECONDS``: the collections meanwhile (settle_heap's included) reach
    it once they have. The price is that those collections walk the whole heap; Secret changes are rare."""
    with _HEAP_LOCK:
        _thawed_until[0] = time.monotonic() + THAW_SECONDS
        gc.unfreeze()


def resync_gaps(count: int, period: float) -> list[float]:
    """The wait after each of ``count`` resync adds so that they cover ``period`` evenly (the last wait
    ends the period, so one pass starts where the previous one ended)."""
    if count <= 0:
        return []
    return [period / count] * count


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


@dataclass
class ManagerConfig:
    namespace: str  # the controller's own namespace: member Secrets and the Lease live here
    leader_elect: bool = True
    lease: LeaderConfig | None = None
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    default_time_zone: str = "UTC"
    workers: int = 2
    # a safety net only: member and control-plane changes enqueue at once, and a plan asks for the time
    # it needs (requeue_after); a full pass over a thousand objects costs a core for seconds
    resync_seconds: float = 300.0
    probe_seconds: float = 10.0  # member health probes (failover counts from the first failed one)
    watch_timeout_seconds: int = 300
    cleanup_give_up_seconds: float = finalizer.DEFAULT_GIVE_UP_AFTER_SECONDS
    shutdown_grace_seconds: float = 30.0
    retry_base_seconds: float = 0.2
    retry_max_seconds: float = 120.0
    api_ping_seconds: float = 2.0  # without leader election: how often GET /version shows the API answers
    api_contact_window_seconds: float | None = None  # None: three Lease retry periods (or ping periods)
    liveness_stall_seconds: float = 300.0  # a loop (or one reconcile) stuck this long fails /healthz
    # --allow-namespaces / --deny-namespaces: objects elsewhere are not acted on (security review M5)
    namespaces: NamespacePolicy = field(default_factory=NamespacePolicy)
    # at start, how long workers wait for the member caches' first lists before planning without them
    member_sync_grace_seconds: float = 30.0
    shards: int = 1  # --shards: 1 is the single leader Lease; K > 1 shard Leases (docs/sharding.md)
    # --warm-standby: the informers marked ``standby`` (and what they feed: the member caches) run from
    # process start, so a standby that takes over finds them synced; False starts them with leading
    warm_standby: bool = True

    def contact_window(self) -> float:
        """How long without an answer from the control-plane API before the process is not ready."""
        if self.api_contact_window_seconds is not None:
            return self.api_contact_window_seconds
        if self.leader_elect and self.lease is not None:
            return 3 * self.lease.retry_period_seconds
        return 3 * self.api_ping_seconds


class Manager:
    """Starts and stops what is registered, as the elector says; see the module docstring."""

    def __init__(
        self,
        control_plane: KubeControlPlane,
        config: ManagerConfig,
        *,
        metrics: Metrics | None = None,
        lease_client: LeaseClient | None = None,
        clock: SystemClock | None = None,
    ) -> None:
        self.cp = control_plane
        self.config = config
        self.metrics = metrics or Metrics()
        self.clock = clock or SystemClock()
        self.fence = Fence(lambda: self.owns(current_object()))
        self.writer: Any = FencedControlPlane(control_plane, self.fence)  # reconciles write through this
        self.elector: Elector | None = None
        if config.shards != 1 and not config.leader_elect:
            raise ValueError("shards need leader election: the shard Leases are how replicas split the work")
        if config.leader_elect:
            if lease_client is None or config.lease is None:
                raise ValueError("leader election needs a lease client and a lease configuration")
            self.elector = self._elector(lease_client, config.lease, config.shards)
        self.controllers: dict[str, Controller] = {}
        self._specs: list[tuple[InformerSpec, str | None]] = []  # (informer, the kind it feeds)
        self._loops: list[tuple[str, Callable[[threading.Event], None]]] = []
        self.informers: dict[str, ListWatch] = {}  # by name: every one while leading, else the standing
        self._standing: dict[str, ListWatch] = {}  # kept while a standby too (warm standby)
        self._standing_stop = threading.Event()
        self._standing_threads: list[threading.Thread] = []
        self._list_gate = list_gate(2)  # the control plane's own: no member's list can hold it
        self._sources: dict[str, str] = {}  # kind -> the name of the informer whose keys it reconciles
        self._leading_stop = threading.Event()
        self._lease_lost = False
        self._threads: list[threading.Thread] = []
        self._workers: list[threading.Thread] = []
        self.queue: WorkQueue[Key] = self._new_queue()
        self.leading = False
        self.heartbeats = Heartbeats()
        self._contact_lock = threading.Lock()
        self._last_contact = float("-inf")

    # -- registration -------------------------------------------------------------------------------

    def register(self, kind: str, reconciler: Reconciler, informer: InformerSpec) -> None:
        """A kind: its reconciler, and the informer whose objects are its keys."""
        self.controllers[kind] = Controller(kind, reconciler, self.metrics)
        self._sources[kind] = informer.name
        self._specs.append((informer, kind))

    def add_informer(self, informer: InformerSpec) -> None:
        """An informer that feeds no controller directly (its handler decides what to enqueue)."""
        self._specs.append((informer, None))

    def add_loop(self, name: str, loop: Callable[[threading.Event], None]) -> None:
        """A loop run in its own thread while leading; it must return soon after its event is set."""
        self._loops.append((name, loop))

    # -- lifecycle ----------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> int:
        """Block until ``stop``; 0 after a clean shutdown, 1 when the leader Lease was lost."""
        self._start_standing()
        try:
            if self.elector is None:
                pinger = self._thread("api-contact", self._ping_loop, stop)
                self._start_leading()
                stop.wait()
                self._stop_leading()
                pinger.join(1.0)
                self.heartbeats.forget("api-contact")
                return 0
            kept = self.elector.run(stop, on_lost=self._on_lease_lost)
            return 0 if kept else 1
        finally:
            self._stop_standing()

    def _start_standing(self) -> None:
        """Start the informers a standby keeps (warm standby): a takeover then costs the Lease, not a
        list of every member. They only read; the handlers they call keep state and never write."""
        if not self.config.warm_standby:
            return
        self._standing_stop = threading.Event()
        self._standing = {
            spec.name: self._informer(spec, kind)
            for spec, kind in self._specs
            if spec.standby and kind is None
        }
        self.informers = dict(self._standing)
        stop = self._standing_stop
        self._standing_threads = [
            self._thread(f"watch-{i.name}", i.run, stop) for i in self._standing.values()
        ]
        if self._standing:
            self._standing_threads.append(self._thread("standby-heap", self._standby_heap_loop, stop))

    def _stop_standing(self) -> None:
        self._standing_stop.set()
        for informer in self._standing.values():
            informer.close()
        for thread in self._standing_threads:
            thread.join(0.5)
        self._standing, self._standing_threads = {}, []

    def _standby_heap_loop(self, stop: threading.Event) -> None:
        """Settle the heap (``settle_heap``) once the standby's caches have synced, and at each resync
        period after: the leader does it when its workers start, a standby has no workers."""
        settled = False
        while not stop.wait(0.5 if not settled else self.config.resync_seconds):
            if self.leading:
                continue
            if settled or (all(i.synced.is_set() for i in self._standing.values()) and not self.warming_up()):
                settle_heap()
                settled = True

    def _elector(self, client: LeaseClient, lease: LeaderConfig, shards: int) -> Elector:
        if shards == 1:
            return LeaderElector(
                client, lease, on_started_leading=self._start_leading, on_stopped_leading=self._stop_leading
            )
        return ShardedElector(
            client,
            lease,
            shards,
            on_started_leading=self._start_leading,
            on_stopped_leading=self._stop_leading,
            on_shards_gained=lambda gained: self._enqueue_all(),
        )

    def _on_lease_lost(self) -> None:
        """Called by the elector before on_stopped_leading when the Lease was lost (not on SIGTERM)."""
        self._lease_lost = True

    def _new_queue(self) -> WorkQueue[Key]:
        backoff = ExponentialBackoff(
            base=self.config.retry_base_seconds, maximum=self.config.retry_max_seconds, jitter=0.1
        )
        return WorkQueue(backoff=backoff, on_depth=self.metrics.set_queue_depth)

    def _start_leading(self) -> None:
        log.info("starting controllers", extra={"workers": self.config.workers})
        self.leading = True
        self.metrics.leader.set(1)
        self._leading_stop = threading.Event()
        self.queue = self._new_queue()
        started = {
            spec.name: self._informer(spec, kind)
            for spec, kind in self._specs
            if spec.name not in self._standing
        }
        self.informers = {**self._standing, **started}
        stop = self._leading_stop
        self._threads = [self._thread(f"watch-{i.name}", i.run, stop) for i in started.values()]
        self._threads.append(self._thread("resync", self._resync_loop, stop))
        self._threads += [self._thread(name, loop, stop) for name, loop in self._loops]
        self._workers = [self._thread(f"worker-{i}", self._worker_loop) for i in range(self.config.workers)]

    def _informer(self, spec: InformerSpec, kind: str | None) -> ListWatch:
        timeout = self.config.watch_timeout_seconds
        handler = spec.handler or self._enqueuer(kind)

        def report(type_: str, key: ObjectKey, old: Any, new: Any) -> None:
            obj = new if new is not None else old
            handler(WatchEvent("ADDED" if type_ == SYNC else type_, key, obj, listed=type_ == SYNC))

        return ListWatch(
            self.cp.watch_transport(max(30.0, float(timeout))),
            spec.path,
            spec.trim,
            name=spec.name,
            handler=report,
            timeout_seconds=timeout,
            denied_retry_seconds=CONTROL_PLANE_DENIED_RETRY_SECONDS,
            on_relist=self.metrics.watch_relists.labels(resource=spec.resource).inc,
            on_full=spec.on_full,
            label_selector=spec.label_selector,
            gate=self._list_gate,
        )

    def _enqueuer(self, kind: str | None) -> Callable[[WatchEvent], None]:
        def enqueue(event: WatchEvent) -> None:
            if kind is not None:
                self.queue.add((kind, *event.key))

        return enqueue

    def _stop_leading(self) -> None:
        """Stop the informers, finish the reconciles in flight, then the rest (the Lease is released after).

        After a SIGTERM the workers get up to ``shutdown_grace_seconds`` to finish. After a Lease loss
        nobody waits: the fence already refuses every write, so a worker still running only reads, and
        the process exits (the elector returns False) without letting it finish.
        """
        lost = self._lease_lost
        log.info("stopping controllers", extra={"lease_lost": lost})
        self._leading_stop.set()
        self.queue.shut_down()
        for name, informer in self.informers.items():
            if name not in self._standing:  # a standby keeps those (warm standby)
                informer.close()  # never blocks (a socket shutdown), so an idle watch cannot hold up shutdown
        grace = 0.0 if lost else self.config.shutdown_grace_seconds
        deadline = time.monotonic() + grace
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        for thread in self._threads:
            thread.join(0.5)
        for thread in (*self._workers, *self._threads):
            self.heartbeats.forget(thread.name)
        self.informers = dict(self._standing)
        self.leading = False
        self.metrics.leader.set(0)

    def _thread(self, name: str, target: Callable[..., Any], *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        return thread

    # -- probes -------------------------------------------------------------------------------------

    def ready(self) -> tuple[bool, str]:
        """Both readiness conditions as one probe: the API answers, and (leader) the caches synced."""
        reachable, detail = self.api_reachable()
        if not reachable:
            return False, detail
        synced, cache_detail = self.caches_synced()
        return synced, f"{detail}; {cache_detail}"

    def api_reachable(self) -> tuple[bool, str]:
        """The control-plane API answered within the contact window (leader or standby alike)."""
        age, window = self.api_contact_age(), self.config.contact_window()
        if age <= window:
            return True, "control-plane API reachable"
        if age == float("inf"):
            return False, "control-plane API not reached yet"
        return False, f"control-plane API not reached for {age:.1f}s (window {window:g}s)"

    def warming_up(self) -> list[str]:
        """What, beyond the informers, the workers wait for at start (at most the sync grace)."""
        return []

    def _wait_for_caches(self, stop: threading.Event) -> bool:
        """Block a worker until every informer has listed once (False: stopped first), then while
        ``warming_up()`` names something, for at most ``member_sync_grace_seconds``: a restart should not
        plan with members whose caches are still listing (they would be observed as unreachable), but
        one member that cannot be listed must not hold up the others."""
        informers = list(self.informers.values())
        deadline: float | None = None
        while not stop.is_set():
            self.heartbeats.beat(threading.current_thread().name, 0.5 + self.config.liveness_stall_seconds)
            if all(i.synced.is_set() for i in informers):
                if deadline is None:
                    deadline = time.monotonic() + self.config.member_sync_grace_seconds
                if time.monotonic() >= deadline or not self.warming_up():
                    settle_heap()
                    return True
            stop.wait(0.05)
        return False

    def caches_synced(self) -> tuple[bool, str]:
        """On the leader, every informer has listed once. A standby passes whatever its caches are
        doing (it is doing what it should), and says it: synced, or which caches are still syncing."""
        if not self.leading:
            return True, self.standby_state()
        waiting = [name for name, i in self.informers.items() if not i.synced.is_set()]
        return (not waiting), ("caches synced" if not waiting else f"waiting for {', '.join(waiting)}")

    def standby_state(self) -> str:
        """What a standby's caches are doing, for ``/readyz``."""
        if not self._standing:
            return "standby (not the leader): keeps no caches"
        waiting = [name for name, i in self._standing.items() if not i.synced.is_set()]
        waiting += self.warming_up()
        if waiting:
            return f"standby (not the leader): syncing {', '.join(waiting)}"
        return "standby (not the leader): caches synced"

    def api_contact_age(self) -> float:
        """Seconds since the control-plane API last answered us (inf: never)."""
        with self._contact_lock:
            last = max([self._last_contact, *(i.last_contact for i in list(self.informers.values()))])
        own = time.monotonic() - last
        return min(own, self.elector.contact_age()) if self.elector is not None else own

    def alive(self) -> tuple[bool, str]:
        """Fails only for a wedged or dead loop, never because the API server is down."""
        problems = [f"{name} stuck for {late:.1f}s" for name, late in self.heartbeats.overdue().items()]
        if self.elector is not None:
            allowed = self.elector.config.retry_period_seconds * 1.2 + self.config.liveness_stall_seconds
            late = self.elector.loop_age() - allowed
            if late > 0:
                problems.append(f"leader-election stuck for {late:.1f}s")
        threads = [*self._workers, *self._threads] if self.leading and not self._leading_stop.is_set() else []
        if not self._standing_stop.is_set():
            threads += self._standing_threads
        dead = [t.name for t in threads if not t.is_alive()]
        if dead:
            problems.append(f"threads ended: {', '.join(dead)}")
        return (not problems), ("; ".join(sorted(problems)) or "ok")

    def _note_contact(self) -> None:
        with self._contact_lock:
            self._last_contact = time.monotonic()

    def _ping_loop(self, stop: threading.Event) -> None:
        """Without leader election nothing else talks to the API on a quiet cluster: GET /version."""
        period = self.config.api_ping_seconds
        version = VersionApi(self.cp.api_client)
        while not stop.is_set():
            self.heartbeats.beat("api-contact", period + self.config.liveness_stall_seconds)
            try:
                version.get_code(_request_timeout=(5.0, 10.0))
            except Exception as exc:  # down or erroring: readiness reports it, the loop goes on
                log.debug("control-plane API ping failed", extra={"error": type(exc).__name__})
            else:
                self._note_contact()
            stop.wait(period)

    def acting(self) -> bool:
        """True while this process may act: it holds the Lease, or a shard of them (or runs without
        leader election)."""
        return self.elector.is_leader() if self.elector is not None else self.leading

    def owns(self, obj: tuple[str, str] | None) -> bool:
        """May this process act on ``(namespace, name)`` now (None: a chore of no object)? With one
        Lease the same as ``acting()``; with shards, it holds that object's shard (shard 0 for chores)."""
        return self.elector.owns(obj) if self.elector is not None else self.leading

    # -- keys ---------------------------------------------------------------------------------------

    def keys(self, kind: str) -> list[ObjectKey]:
        """The keys of ``kind`` its informer knows now (none while not leading)."""
        informer = self.informers.get(self._sources.get(kind, ""))
        return list(informer.keys()) if informer is not None else []

    def _all_keys(self, kinds: Iterable[str] | None = None) -> list[Key]:
        return [(kind, *key) for kind in (kinds or self.controllers) for key in self.keys(kind)]

    def _enqueue_all(self, kind: str | None = None, low: bool = False) -> None:
        """Every known key; ``low`` puts them in the resync lane, behind keys that events asked for."""
        add = self.queue.add_low if low else self.queue.add
        for key in self._all_keys(None if kind is None else [kind]):
            add(key)

    def _resync_loop(self, stop: threading.Event) -> None:
        """Every key once per resync period, spread evenly over the period (``resync_gaps``), in the low
        lane: a thousand objects become a few reconciles a second, never a burst that holds the workers
        (and the interpreter) while a member event waits."""
        period = self.config.resync_seconds
        within = period + self.config.liveness_stall_seconds
        self.heartbeats.beat("resync", within)
        if stop.wait(period):
            return
        while not stop.is_set():
            settle_heap()
            keys = self._all_keys()
            if not keys:
                self.heartbeats.beat("resync", within)
                if stop.wait(period):
                    return
                continue
            for key, gap in zip(keys, resync_gaps(len(keys), period), strict=True):
                self.queue.add_low(key)
                self.heartbeats.beat("resync", within)
                if stop.wait(gap):
                    return

    # -- workers ------------------------------------------------------------------------------------

    def _worker_loop(self) -> None:
        queue = self.queue
        name = threading.current_thread().name
        if not self._wait_for_caches(self._leading_stop):
            return
        while True:
            self.heartbeats.beat(name, 0.5 + self.config.liveness_stall_seconds)  # covers one reconcile
            try:
                key = queue.get(timeout=0.5)
            except ShutDown:
                return
            if key is None:
                continue
            try:
                if self.owns((key[1], key[2])):
                    self.controllers[key[0]].handle(queue, key)
                elif self.config.shards > 1:
                    log.debug("another replica's shard; not acting", extra={"object": f"{key[1]}/{key[2]}"})
                else:
                    log.warning("not the leader; not acting", extra={"object": f"{key[1]}/{key[2]}"})
            finally:
                queue.done(key)

    def _process(self, queue: WorkQueue[Key], key: Key) -> None:
        """One key, as a worker that owns it would run it (without the log and fence scope)."""
        self.controllers[key[0]].process(queue, key)
