"""The running controller: leader election, watches, a work queue, workers, cron timers and resync.

How the pieces fit (one process, a handful of threads):

    LeaderElector.run (main thread) ── on leading ──► start:
        Watcher(FederatedHPA), Watcher(CronFederatedHPA), Watcher(member Secrets)   (one thread each)
            └─ every event enqueues its key; a Secret change updates the registry and enqueues every
               FederatedHPA, since the candidate clusters changed
        probe thread: registry.probe_all() every probe period; a health flip enqueues every FederatedHPA
        WorkQueue ──► workers: FederatedHPA keys → finalizer / reconcile_federated_hpa
                               CronFederatedHPA keys → CronController.reconcile → TimerQueue
        timer thread: TimerQueue.pop_due(now) → WorkQueue (one heap for all cron rules)
        resync thread: every resync period, every known key → WorkQueue (a missed event heals)
    ── on stop (SIGTERM) ──► stop the watches at once (a socket shutdown: an idle watch never holds
       shutdown up), stop handing out keys, let each worker finish the reconcile in flight (at most
       --shutdown-grace), then release the Lease (LeaderElector does it after on_stopped_leading).
    ── on Lease loss ──► nothing waits: every write is fenced (controller.runtime.fence) from the renew
       deadline on, so the reconciles in flight are abandoned at their next write; run() returns 1.

Start: no worker takes a key before every watch has listed once. The member-Secret watch's first list
feeds the registry before it reports synced, so no FederatedHPA is planned while some of its clusters
are still unknown. Later on, a member Secret the watch has seen but the registry has not registered
(its credentials still loading, or its registration failed) makes the cluster unknown, not absent:
FederatedHPA reconciles wait and retry rather than plan without it (which would move its share and
lose the state kept in status).

Namespaces (security review M5): an object in a namespace ``ManagerConfig.namespaces`` refuses
(``--allow-namespaces``/``--deny-namespaces``) is not acted on: no member is read or written, no
finalizer is added, no cron rule runs; its status says Ready=False (NamespaceNotAllowed) with a Warning
Event, once.

Member Secrets that need attention (``registry.problems()``: unusable; ``registry.warnings()``: an opt-in
insecure setting in use) get a Warning Event (``MemberUnusable``, ``InsecureMemberCredentials``) on the
member's Secret, since a member cluster has no object of its own on the management cluster: once per
change of what is wrong, from the probe loop (never from the watch handler, which must stay quick). The
message is the registry's text, which never quotes the kubeconfig, with any URL credentials masked.

Keys are ``(kind, namespace, name)``. The queue guarantees one reconcile per key at a time; several
workers reconcile different objects in parallel. Every reconcile reads the object fresh from the API
(the watch only says *which* object to look at), so a stale watch cache never drives an action.

Before every reconcile, and before every write within one (the fence), a worker asks the elector
whether the Lease is still ours (renewed within the renew deadline, which is shorter than the lease
duration); a process that lost it stops writing at once and the caller exits.

Shards (``ManagerConfig.shards`` > 1, docs/sharding.md): the elector is a ShardedElector holding some
of K shard Leases, and "ours" is asked per object (``owns()``): the work loop skips a key whose shard
another replica holds, and the fence refuses a write for an object whose shard this replica no longer
holds, so losing one shard leaves the others running (the process does not exit). Watches and caches
stay global: every replica watches every object and filters by shard. A shard won enqueues every key.

Probes: ``ready()`` means "this process can do its job": the control-plane API answered within the
contact window (a Lease read, a watch list/open, or, without leader election, a GET /version every
``api_ping_seconds``), and on the leader every watch has synced its first list. ``alive()`` means "no
loop is wedged or dead": every loop beats a ``Heartbeats`` entry each turn, and a down API server only
slows the turns (every call has a timeout), so it never fails liveness.
"""

from __future__ import annotations

import gc
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from kubernetes.client import VersionApi

from controller import finalizer
from controller.cron_controller import CronController
from controller.errors import ConflictError, PortError
from controller.kube.control_plane import CRON_FEDERATED_HPA_PLURAL, FEDERATED_HPA_PLURAL, KubeControlPlane
from controller.planning.member_hpa import LABEL_OWNER_UID
from controller.planning.namespaces import (
    REASON_NAMESPACE_NOT_ALLOWED,
    NamespacePolicy,
    is_refused,
    refused_conditions,
)
from controller.planning.planner import PlannerConfig
from controller.ports import MemberCluster, NotLeaderError
from controller.reconcile import reconcile_federated_hpa
from controller.runtime.fence import Fence, FencedControlPlane, FencedMember, current_object, writes_for
from controller.runtime.health import Heartbeats
from controller.runtime.leader import Elector, LeaderConfig, LeaderElector, LeaseClient
from controller.runtime.member_events import ALL, TargetIndex, concerned, target_of
from controller.runtime.metrics import Metrics, TimedMember
from controller.runtime.shard_elector import ShardedElector
from controller.runtime.timers import TimerQueue
from controller.runtime.watch import Watcher, WatchEvent
from controller.runtime.workqueue import ExponentialBackoff, ShutDown, WorkQueue
from fhpa_api import CRON_FEDERATED_HPA, FEDERATED_HPA
from fhpa_api.models import FederatedHPA, FederatedHPAStatus

log = logging.getLogger(__name__)

REASON_MEMBER_UNUSABLE = "MemberUnusable"
REASON_INSECURE_MEMBER = "InsecureMemberCredentials"
MAX_MEMBER_EVENT_MESSAGE = 512
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")

MEMBER_SECRET_LABEL = "autoscaling.karmada.io/member-cluster"
Key = tuple[str, str, str]  # (kind, namespace, name)

_RECONCILING: ContextVar[tuple[str, str] | None] = ContextVar("fhpa_reconciling", default=None)


def _install_reconcile_log_context() -> None:
    """Every log record made while a worker reconciles carries ``reconcile_kind`` and
    ``reconcile_object`` ("namespace/name"), whichever module logs it and whatever extras it passed.

    A record factory rather than a handler filter, because logs.configure() replaces the handlers; and
    keys of its own, because the logging module refuses an ``extra=`` key already on the record, so
    setting ``object`` here would break the callers that pass it.
    """
    previous = logging.getLogRecordFactory()
    if getattr(previous, "fhpa_reconcile_context", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        current = _RECONCILING.get()
        if current is not None:
            record.reconcile_kind, record.reconcile_object = current
        return record

    factory.fhpa_reconcile_context = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


@contextmanager
def reconciling(kind: str, namespace: str, name: str) -> Iterator[None]:
    """Tag the log records of this thread with the object being reconciled, for the block's length."""
    _install_reconcile_log_context()
    token = _RECONCILING.set((kind, f"{namespace}/{name}"))
    try:
        yield
    finally:
        _RECONCILING.reset(token)


class RegistryChange(Protocol):
    @property
    def changed(self) -> bool: ...


class Registry(Protocol):
    """The member-cluster registry as the manager drives it (controller.kube.registry.MemberRegistry)."""

    def apply_event(self, event_type: str, secret: Any) -> RegistryChange:
        """One Secret watch event: a cluster added, its client rebuilt, relabelled or removed."""
        ...

    def members(self) -> Mapping[str, MemberCluster]: ...

    def probe_all(self) -> Mapping[str, Any]:
        """Probe every cluster (GET /readyz, short timeout); the reconcile reads the results."""
        ...


@dataclass(frozen=True)
class _SecretMeta:
    name: str
    namespace: str
    uid: str | None = None
    resource_version: str | None = None


@dataclass(frozen=True)
class SecretRef:
    """A member's Secret as the involved object of an Event (what ``emit_event`` reads of an object:
    kind, apiVersion and metadata; never the Secret's data)."""

    metadata: _SecretMeta
    api_version: str = "v1"
    kind: str = "Secret"


def member_event_message(cluster: str, what: str) -> str:
    """The Event text for a member's problem: URL credentials masked, bounded."""
    text = _URL_USERINFO.sub(r"\1***@", f"member cluster {cluster}: {what}")
    if len(text) > MAX_MEMBER_EVENT_MESSAGE:
        text = text[: MAX_MEMBER_EVENT_MESSAGE - 1] + "…"
    return text


_HEAP_LOCK = threading.Lock()


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
        gc.freeze()
    finally:
        _HEAP_LOCK.release()


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

    def contact_window(self) -> float:
        """How long without an answer from the control-plane API before the process is not ready."""
        if self.api_contact_window_seconds is not None:
            return self.api_contact_window_seconds
        if self.leader_elect and self.lease is not None:
            return 3 * self.lease.retry_period_seconds
        return 3 * self.api_ping_seconds


class Manager:
    def __init__(
        self,
        control_plane: KubeControlPlane,
        registry: Registry,
        config: ManagerConfig,
        *,
        metrics: Metrics | None = None,
        lease_client: LeaseClient | None = None,
        clock: SystemClock | None = None,
    ) -> None:
        self.cp = control_plane
        self.registry = registry
        self.config = config
        self.metrics = metrics or Metrics()
        self.clock = clock or SystemClock()
        self.fence = Fence(lambda: self.owns(current_object()))
        self.writer: Any = FencedControlPlane(control_plane, self.fence)  # reconciles write through this
        self.cron = CronController(
            self.writer,
            config.default_time_zone,
            namespaces=config.namespaces,
            on_fire=self.metrics.on_cron_fire,
        )
        self.elector: Elector | None = None
        if config.shards != 1 and not config.leader_elect:
            raise ValueError("shards need leader election: the shard Leases are how replicas split the work")
        if config.leader_elect:
            if lease_client is None or config.lease is None:
                raise ValueError("leader election needs a lease client and a lease configuration")
            self.elector = self._elector(lease_client, config.lease, config.shards)
        self._leading_stop = threading.Event()
        self._lease_lost = False
        self._threads: list[threading.Thread] = []
        self._workers: list[threading.Thread] = []
        self._watchers: list[Watcher] = []
        self._timers: TimerQueue[Key] = TimerQueue()
        self._timers_lock = threading.Lock()
        self.queue: WorkQueue[Key] = self._new_queue()
        self.leading = False
        self.heartbeats = Heartbeats()
        self._contact_lock = threading.Lock()
        self._last_contact = float("-inf")
        self._members_lock = threading.Lock()
        self._member_secrets: dict[str, SecretRef] = {}  # from the Secret watch: the Events' objects
        self._member_reported: dict[str, tuple[str, str]] = {}  # cluster -> (reason, message) sent
        self.targets = TargetIndex()  # workload -> the FederatedHPAs that scale it (member events)
        self._fhpa_seen: dict[tuple[str, str], Any] = {}  # what of each object a new event must change
        listen = getattr(registry, "add_change_listener", None)
        if callable(listen):
            listen(self._on_member_change)

    # -- lifecycle ----------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> int:
        """Block until ``stop``; 0 after a clean shutdown, 1 when the leader Lease was lost."""
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
        with self._timers_lock:
            self._timers = TimerQueue()
        timeout = self.config.watch_timeout_seconds

        def relisted(resource: str) -> Callable[[], None]:
            return self.metrics.watch_relists.labels(resource=resource).inc

        self._watchers = [
            Watcher(
                self._contacting(self.cp.list_func(FEDERATED_HPA_PLURAL)),
                self._on_fhpa,
                name="federatedhpas",
                timeout_seconds=timeout,
                on_relist=relisted("federatedhpas"),
            ),
            Watcher(
                self._contacting(self.cp.list_func(CRON_FEDERATED_HPA_PLURAL)),
                self._on_cron,
                name="cronfederatedhpas",
                timeout_seconds=timeout,
                on_relist=relisted("cronfederatedhpas"),
            ),
            Watcher(
                self._contacting(self.cp.secret_list_func(self.config.namespace)),
                self._on_secret,
                name="member-secrets",
                label_selector=f"{MEMBER_SECRET_LABEL}=true",
                timeout_seconds=timeout,
                on_relist=relisted("secrets"),
            ),
        ]
        stop = self._leading_stop
        self._threads = [self._thread(f"watch-{w.name}", w.run, stop) for w in self._watchers]
        self._threads.append(self._thread("cron-timers", self._timer_loop, stop))
        self._threads.append(self._thread("resync", self._resync_loop, stop))
        self._threads.append(self._thread("member-probes", self._probe_loop, stop))
        self._workers = [self._thread(f"worker-{i}", self._worker_loop) for i in range(self.config.workers)]

    def _stop_leading(self) -> None:
        """Stop the watches, finish the reconciles in flight, then the rest (the Lease is released after).

        After a SIGTERM the workers get up to ``shutdown_grace_seconds`` to finish. After a Lease loss
        nobody waits: the fence already refuses every write, so a worker still running only reads, and
        the process exits (the elector returns False) without letting it finish.
        """
        lost = self._lease_lost
        log.info("stopping controllers", extra={"lease_lost": lost})
        self._leading_stop.set()
        self.queue.shut_down()
        for watcher in self._watchers:
            watcher.close()  # never blocks (a socket shutdown), so an idle watch cannot hold up shutdown
        grace = 0.0 if lost else self.config.shutdown_grace_seconds
        deadline = time.monotonic() + grace
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        for thread in self._threads:
            thread.join(0.5)
        for thread in (*self._workers, *self._threads):
            self.heartbeats.forget(thread.name)
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

    def _wait_for_caches(self, stop: threading.Event) -> bool:
        """Block a worker until every watch has listed once (False: stopped first), then until every
        member cache has, for at most ``member_sync_grace_seconds``: a restart should not plan with
        members whose caches are still listing (they would be observed as unreachable), but one member
        that cannot be listed must not hold up the others."""
        watchers = list(self._watchers)
        member_deadline: float | None = None
        while not stop.is_set():
            self.heartbeats.beat(threading.current_thread().name, 0.5 + self.config.liveness_stall_seconds)
            if all(w.synced.is_set() for w in watchers):
                if member_deadline is None:
                    member_deadline = time.monotonic() + self.config.member_sync_grace_seconds
                if time.monotonic() >= member_deadline or not self.unsynced_members():
                    settle_heap()
                    return True
            stop.wait(0.05)
        return False

    def unsynced_members(self) -> list[str]:
        """Members whose watch-backed cache has not completed its first lists."""
        state = getattr(self.registry, "cache_state", None)
        return [] if not callable(state) else sorted(n for n, ok in state().items() if not ok)

    def unknown_clusters(self) -> list[str]:
        """Member Secrets the watch has seen whose cluster the registry has not registered (yet)."""
        if len(self._watchers) < 3:
            return []
        seen = {name for _, name in self._watchers[2].snapshot()}
        return sorted(seen - set(self.registry.members()))

    def caches_synced(self) -> tuple[bool, str]:
        """On the leader, every watch has listed once; a standby keeps no caches and passes."""
        if not self.leading:
            return True, "standby (not the leader)"
        waiting = [w.name for w in self._watchers if not w.synced.is_set()]
        return (not waiting), ("caches synced" if not waiting else f"waiting for {', '.join(waiting)}")

    def api_contact_age(self) -> float:
        """Seconds since the control-plane API last answered us (inf: never)."""
        with self._contact_lock:
            own = time.monotonic() - self._last_contact
        return min(own, self.elector.contact_age()) if self.elector is not None else own

    def alive(self) -> tuple[bool, str]:
        """Fails only for a wedged or dead loop, never because the API server is down."""
        problems = [f"{name} stuck for {late:.1f}s" for name, late in self.heartbeats.overdue().items()]
        if self.elector is not None:
            allowed = self.elector.config.retry_period_seconds * 1.2 + self.config.liveness_stall_seconds
            late = self.elector.loop_age() - allowed
            if late > 0:
                problems.append(f"leader-election stuck for {late:.1f}s")
        if self.leading and not self._leading_stop.is_set():
            dead = [t.name for t in (*self._workers, *self._threads) if not t.is_alive()]
            if dead:
                problems.append(f"threads ended: {', '.join(dead)}")
        return (not problems), ("; ".join(sorted(problems)) or "ok")

    def _note_contact(self) -> None:
        with self._contact_lock:
            self._last_contact = time.monotonic()

    def _contacting(self, list_func: Callable[..., Any]) -> Callable[..., Any]:
        """A list/watch call that records the API's answer (a list, or a watch stream opened)."""

        def call(*args: Any, **kwargs: Any) -> Any:
            response = list_func(*args, **kwargs)
            self._note_contact()
            return response

        return call

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

    # -- watch handlers -----------------------------------------------------------------------------

    def _on_fhpa(self, event: WatchEvent) -> None:
        """Enqueue a FederatedHPA whose spec, metadata or existence changed; a change of its status alone
        (our own status write, coming back through the watch) is not a reason to plan it again."""
        if event.type == "DELETED":
            self.targets.remove(event.key)
            self._fhpa_seen.pop(event.key, None)
            self.queue.add((FEDERATED_HPA, *event.key))
            return
        self.targets.update(event.key, target_of(event.obj))
        meta = event.obj.get("metadata") or {}
        seen = (
            meta.get("generation"),
            meta.get("deletionTimestamp"),
            tuple(meta.get("finalizers") or ()),
            repr(sorted((meta.get("labels") or {}).items())),
            repr(sorted((meta.get("annotations") or {}).items())),
            event.obj.get("spec"),
        )
        if event.type == "MODIFIED" and self._fhpa_seen.get(event.key) == seen:
            return
        self._fhpa_seen[event.key] = seen
        self.queue.add((FEDERATED_HPA, *event.key))

    def _on_member_change(self, cluster: str, change: Any) -> None:
        """A member cache saw a change: enqueue the FederatedHPAs it concerns (member_events)."""
        if not self.leading:
            return
        selecting = getattr(self.registry, "workloads_selecting", None)

        def workloads(namespace: str, labels: Mapping[str, str]) -> Any:
            return selecting(cluster, namespace, labels) if callable(selecting) else ()

        refs = concerned(change, self.targets, workloads)
        if not refs:
            return
        self.metrics.member_events.labels(resource=change.resource).inc()
        if refs == set(ALL):  # a node: every plan on the member may change, none urgently
            self._enqueue_all(FEDERATED_HPA, low=True)
            return
        for namespace, name in refs:
            self.queue.add((FEDERATED_HPA, namespace, name))

    def _on_cron(self, event: WatchEvent) -> None:
        key: Key = (CRON_FEDERATED_HPA, *event.key)
        if event.type == "DELETED":
            with self._timers_lock:
                self._timers.cancel(key)
            return
        self.queue.add(key)

    def _on_secret(self, event: WatchEvent) -> None:
        meta = event.obj.get("metadata") or {}
        name = event.key[1]
        with self._members_lock:
            if event.type == "DELETED":
                self._member_secrets.pop(name, None)
            else:
                self._member_secrets[name] = SecretRef(
                    _SecretMeta(
                        name,
                        event.key[0] or self.config.namespace,
                        meta.get("uid"),
                        meta.get("resourceVersion"),
                    )
                )
        change = self.registry.apply_event(event.type, event.obj)
        if change.changed:
            log.info(
                "member cluster registry changed",
                extra={"cluster": event.key[1], "change": event.type.lower()},
            )
            self._enqueue_all(FEDERATED_HPA)

    # -- periodic work ------------------------------------------------------------------------------

    def _enqueue_all(self, kind: str | None = None, low: bool = False) -> None:
        """Every known key; ``low`` puts them in the resync lane, behind keys that events asked for."""
        if not self._watchers:
            return
        sources = {FEDERATED_HPA: self._watchers[0], CRON_FEDERATED_HPA: self._watchers[1]}
        add = self.queue.add_low if low else self.queue.add
        for kind_name, watcher in sources.items():
            if kind is None or kind == kind_name:
                for namespace, name in watcher.snapshot():
                    add((kind_name, namespace, name))

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

    def _all_keys(self) -> list[Key]:
        if not self._watchers:
            return []
        sources = {FEDERATED_HPA: self._watchers[0], CRON_FEDERATED_HPA: self._watchers[1]}
        return [(kind, ns, name) for kind, watcher in sources.items() for ns, name in watcher.snapshot()]

    def _probe_loop(self, stop: threading.Event) -> None:
        """Probe members; a cluster whose health flips gets every FederatedHPA looked at again."""
        before: dict[str, Any] = {}
        while not stop.is_set():
            within = self.config.probe_seconds + self.config.liveness_stall_seconds
            self.heartbeats.beat("member-probes", within)
            try:
                health = self.registry.probe_all()
                self.metrics.observe_member_health(health)
            except Exception:  # a probe must never end the loop
                log.exception("member probes failed")
                health = before
            now = {name: getattr(h, "healthy", None) for name, h in health.items()}
            if now != before:
                self._enqueue_all(FEDERATED_HPA)
            before = now
            self._report_member_secrets()
            stop.wait(self.config.probe_seconds)

    def _report_member_secrets(self) -> None:
        """A Warning Event on the Secret of each member that is unusable or uses an insecure opt-in, once
        per change of what is wrong (an Event that could not be sent is tried again next turn)."""
        try:
            problems = dict(getattr(self.registry, "problems", dict)())
            warnings = dict(getattr(self.registry, "warnings", dict)())
        except Exception:  # reporting must never end the probe loop
            log.exception("cannot read the member registry's problems")
            return
        wanted = {
            name: (REASON_MEMBER_UNUSABLE, member_event_message(name, p)) for name, p in problems.items()
        }
        for name, warning in warnings.items():
            wanted.setdefault(name, (REASON_INSECURE_MEMBER, member_event_message(name, warning)))
        with self._members_lock:
            for name in [n for n in self._member_reported if n not in wanted]:
                del self._member_reported[name]  # fixed or gone: a later problem is news again
            todo = [
                (name, self._member_secrets.get(name), reason, message)
                for name, (reason, message) in sorted(wanted.items())
                if self._member_reported.get(name) != (reason, message)
            ]
        for name, ref, reason, message in todo:
            ref = ref or SecretRef(_SecretMeta(name, self.config.namespace))
            try:
                self.writer.emit_event(ref, "Warning", reason, message)
            except Exception as exc:  # best effort (and fenced: only the leader reports)
                log.info("event not recorded", extra={"cluster": name, "error": str(exc)})
                continue
            with self._members_lock:
                self._member_reported[name] = (reason, message)

    def _timer_loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.heartbeats.beat("cron-timers", 1.0 + self.config.liveness_stall_seconds)
            now = self.clock.now()
            with self._timers_lock:
                due = self._timers.pop_due(now)
                upcoming = self._timers.next_time()
            for key in due:
                self.queue.add(key)
            wait = 1.0 if upcoming is None else min(1.0, max(0.01, (upcoming - now).total_seconds()))
            stop.wait(wait)

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
                    with reconciling(*key), writes_for(key[1], key[2]):
                        self._process(queue, key)
                elif self.config.shards > 1:
                    log.debug("another replica's shard; not acting", extra={"object": f"{key[1]}/{key[2]}"})
                else:
                    log.warning("not the leader; not acting", extra={"object": f"{key[1]}/{key[2]}"})
            finally:
                queue.done(key)

    def _process(self, queue: WorkQueue[Key], key: Key) -> None:
        kind, namespace, name = key
        ref = f"{namespace}/{name}"
        start = time.perf_counter()
        try:
            if kind == FEDERATED_HPA:
                requeue = self._reconcile_fhpa(namespace, name)
            else:
                requeue = self._reconcile_cron(key)
        except NotLeaderError as exc:
            log.warning(
                "reconcile abandoned: not the leader", extra={"object": ref, "kind": kind, "error": str(exc)}
            )
            self.metrics.reconciles.labels(kind=kind, result="abandoned").inc()
            return
        except ConflictError as exc:
            self._failed(queue, key, "conflict", exc)
            return
        except PortError as exc:
            self._failed(queue, key, "error", exc)
            return
        except Exception as exc:  # a bug must not kill the worker; it shows in logs and metrics
            log.exception("reconcile crashed", extra={"object": ref, "kind": kind})
            self._failed(queue, key, "error", exc)
            return
        finally:
            self.metrics.reconcile_seconds.labels(kind=kind).observe(time.perf_counter() - start)
        self.metrics.reconciles.labels(kind=kind, result="success").inc()
        log.debug("reconciled", extra={"object": ref, "kind": kind, "requeue_after_seconds": requeue})
        queue.forget(key)
        if requeue is not None:
            queue.add_after(key, requeue)

    def _failed(self, queue: WorkQueue[Key], key: Key, result: str, exc: BaseException) -> None:
        self.metrics.reconciles.labels(kind=key[0], result=result).inc()
        if result == "error":
            self.metrics.reconcile_errors.labels(kind=key[0]).inc()
        delay = queue.add_rate_limited(key)
        log.info(
            "reconcile failed; retrying",
            extra={
                "object": f"{key[1]}/{key[2]}",
                "kind": key[0],
                "error": str(exc),
                "retry_in_seconds": round(delay, 3),
            },
        )

    def _members(self) -> dict[str, MemberCluster]:
        return {
            name: FencedMember(TimedMember(m, self.metrics), self.fence)
            for name, m in self.registry.members().items()
        }

    def _reconcile_fhpa(self, namespace: str, name: str) -> float | None:
        """One pass for one FederatedHPA; returns when to look again (None: on the next event/resync)."""
        fhpa = self.cp.get_federated_hpa(namespace, name)
        if fhpa is None:
            return None
        refusal = self.config.namespaces.refusal(namespace)
        if refusal is not None:  # before anything touches a member: no observe, no HPA, no scale
            self._refuse_fhpa(fhpa, refusal)
            return None
        unknown = self.unknown_clusters()
        if unknown:  # unknown is not absent: planning now would move their share away
            raise PortError(f"member clusters not registered yet: {', '.join(unknown)}; waiting for them")
        members = self._members()
        writer = self.writer
        if finalizer.is_deleting(fhpa):
            cleaned = finalizer.clean_up(
                fhpa, members, writer, writer, self.clock.now(), self.config.cleanup_give_up_seconds
            )
            for cluster in cleaned.removed:
                self.metrics.on_action("delete", cluster, True)
            self.metrics.on_cleanup(cleaned)
            return cleaned.requeue_after_seconds
        fhpa = finalizer.ensure_finalizer(fhpa, writer)
        the_plan, result = reconcile_federated_hpa(
            fhpa,
            members,
            writer,
            self.clock,
            self.config.planner,
            on_action=self.metrics.on_action,
            on_pass=self.metrics.on_pass,
        )
        if result.conflict:
            where = (
                "member objects changed since they were observed: " + ", ".join(sorted(result.stale))
                if result.stale
                else "it changed during the reconcile"
            )
            raise ConflictError(f"FederatedHPA {namespace}/{name}: {where}; replanning")
        if result.failed:
            raise PortError("; ".join(f"{k}: {v}" for k, v in sorted(result.failed.items())))
        return the_plan.requeue_after_seconds

    def _refuse_fhpa(self, fhpa: FederatedHPA, message: str) -> None:
        """A FederatedHPA in a namespace the controller may not act in: say so, touch no member.

        No finalizer is added. One being deleted that still carries ours (it was made while its
        namespace was allowed) has the finalizer released without cleaning the members, and the
        Warning Event names the label that finds any member HPA left behind.
        """
        writer = self.writer
        ref = f"{fhpa.metadata.namespace}/{fhpa.metadata.name}"
        if finalizer.is_deleting(fhpa):
            if finalizer.has_finalizer(fhpa):
                remaining = [f for f in fhpa.metadata.finalizers or [] if f != finalizer.FINALIZER]
                writer.set_finalizers(fhpa, remaining)
                self._warn(
                    fhpa,
                    f"{message}. Finalizer released without cleaning member clusters; a member HPA made "
                    f"earlier has the label {LABEL_OWNER_UID}={fhpa.metadata.uid}",
                )
            return
        previous = fhpa.status.conditions if fhpa.status else None
        if is_refused(previous, message):
            return  # already reported
        status = fhpa.status.model_copy(deep=True) if fhpa.status else FederatedHPAStatus()
        status.conditions = refused_conditions(previous, message, self.clock.now())
        status.observed_generation = fhpa.metadata.generation
        writer.update_federated_hpa_status(fhpa, status)
        log.warning("namespace not allowed; not acting", extra={"object": ref, "kind": FEDERATED_HPA})
        self._warn(fhpa, message)

    def _warn(self, fhpa: FederatedHPA, message: str) -> None:
        try:
            self.writer.emit_event(fhpa, "Warning", REASON_NAMESPACE_NOT_ALLOWED, message)
        except PortError as exc:  # an Event is best effort; status is the record
            log.info("event not recorded", extra={"object": fhpa.metadata.name, "error": str(exc)})

    def _reconcile_cron(self, key: Key) -> float | None:
        _, namespace, name = key
        wake = self.cron.reconcile(namespace, name, self.clock.now())
        with self._timers_lock:
            if wake is None:
                self._timers.cancel(key)
            else:
                self._timers.schedule(key, wake)
        return None
