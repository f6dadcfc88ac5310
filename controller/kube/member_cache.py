"""One watch-backed cache per member cluster: pods, nodes, HPAs and the targeted workloads, trimmed.

Shared by every FederatedHPA on the member (``KubeMemberCluster.observe`` reads it): instead of polling
the HPA list, the workload, its Scale, the pods by selector and every pod and node for each reconcile,
the cache lists each resource once (in pages) and then watches it (``controller.kube.listwatch``, one
family of loops per resource: ``controller.kube.member_watches``). Memory holds only what the
observation and the capacity estimate read (``controller.kube.member_trim``).

Scope: each resource is listed in every namespace; where the member's RBAC refuses that (403), the
resource is watched per namespace as FederatedHPAs ask for one (``ready_for``), and nodes or pods that
cannot be read in every namespace make capacity unknown. A refused list is retried every few minutes.

``synced`` is True only after every resource's first list completed; until then, and while any watch is
failing (the member went away), the member must be observed as UNKNOWN, never as empty or as it was: the
query methods raise ``CacheNotSyncedError`` or ``ClusterUnreachableError`` rather than answer from a
partial or past store. Each change of a trimmed object is reported to the listeners as a ``Change``
(resource, key, old, new); a change to a field not kept (a pod's annotations, say) is not reported,
nor is our own write, noted at once, or its echo (``controller.kube.own_writes``).
``controller.runtime.member_events`` decides which changes matter to which FederatedHPA.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from controller.backoff import ExponentialBackoff
from controller.errors import ClusterUnreachableError
from controller.kube.clients import KubeClient
from controller.kube.listwatch import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_WATCH_TIMEOUT_SECONDS,
    DROPPED,
    OWN,
    SYNC,
    ListWatch,
    ObjectKey,
    Transport,
    list_gate,
)
from controller.kube.member_budget import Caps, MemberBudget
from controller.kube.member_trim import AlreadyTrimmed, Interner, trim_hpa, trim_node, trim_pod, trim_workload
from controller.kube.member_watches import (
    HPA,
    NODE,
    POD,
    WORKLOAD,
    Change,
    ChangeListener,
    PathFor,
    WatchFamily,
    WorkloadKind,
)
from controller.kube.own_writes import OwnWrites
from controller.kube.watch_transport import KubeTransport
from controller.planning import capacity
from controller.planning.selectors import Requirement, parse_selector, selector_matches

log = logging.getLogger(__name__)

QUIET = (SYNC, DROPPED, OWN)
"""Handler event types that index or unindex an object without news for the listeners."""


class CacheNotSyncedError(ClusterUnreachableError):
    """The member's first lists have not all completed: what it holds is unknown, not empty."""


class MemberCache:
    """Pods, nodes, HPAs and the targeted workloads of one member cluster, listed once and then watched.

    ``start()`` runs one thread per list/watch; ``stop()`` ends them. Thread-safe reads. Workload kinds
    are watched as FederatedHPAs reference them (``watch_workloads``).

    Indexes kept as events arrive, so a read costs what it returns, not the cluster's size: pods by
    namespace and by label (a selector's first equality picks the candidates), HPAs by the workload they
    target, and the requests bound to each node (the capacity estimate's "used"), with the estimate per
    pod template memoised node by node (:meth:`fit`: only the nodes whose bound pods changed are counted
    again).
    """

    def __init__(
        self,
        cluster: str,
        transport: Transport,
        *,
        hpa_version: str | Callable[[], str] = "v2",
        page_size: int = DEFAULT_PAGE_SIZE,
        timeout_seconds: int = DEFAULT_WATCH_TIMEOUT_SECONDS,
        read_slack_seconds: float = 30.0,
        backoff: ExponentialBackoff | None = None,
        min_watch_interval: float = 1.0,
        denied_retry_seconds: float = 300.0,
        on_change: ChangeListener | None = None,
        budget: MemberBudget | None = None,
    ) -> None:
        self.cluster = cluster
        self.transport = transport
        self.budget = budget or MemberBudget(cluster)
        self.options: dict[str, Any] = {
            "page_size": page_size,
            "timeout_seconds": timeout_seconds,
            "read_slack_seconds": read_slack_seconds,
            "backoff": backoff,
            "min_watch_interval": min_watch_interval,
            "denied_retry_seconds": denied_retry_seconds,
            "gate": list_gate(),  # this member's resources list in turn; other members are not held
            "budget": self.budget,  # what this member's caches may hold together
        }
        self._listeners: list[ChangeListener] = [on_change] if on_change is not None else []
        self.own_writes = OwnWrites()  # the echoes of our writes in flight are not news either
        self._interner = Interner()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = False
        # indexes (under _lock)
        self._pods_by_ns: dict[str, dict[str, dict[str, Any]]] = {}
        self._pods_by_label: dict[tuple[str, str, str], set[str]] = {}
        self._used: dict[str, capacity.ResourceList] = {}
        self._bound: dict[ObjectKey, tuple[str, capacity.ResourceList]] = {}
        self._requests_memo: dict[str, capacity.ResourceList] = {}
        self._hpas_by_target: dict[tuple[str, str, str, str], set[str]] = {}
        self._generation = 0
        self._node_infos: tuple[int, list[capacity.NodeInfo]] | None = None
        self._node_generation = 0  # bumped by node events alone: which nodes admit a template, their size
        self._fit_memo: dict[str, _FitMemo] = {}
        WorkloadRef = tuple[WorkloadKind, str]
        self._selectors: dict[
            tuple[str, WorkloadRef], tuple[list[Requirement], tuple[str, str, str] | None]
        ] = {}
        self._workloads_by_label: dict[tuple[str, str, str], set[WorkloadRef]] = {}
        self._unindexed: dict[str, set[WorkloadRef]] = {}
        version = hpa_version

        def hpa_paths() -> PathFor:
            chosen = version() if callable(version) else version
            return _paths(f"/apis/autoscaling/{chosen}", "horizontalpodautoscalers")

        self._pods = WatchFamily(
            self,
            "pods",
            lambda: _paths("/api/v1", "pods"),
            lambda p: trim_pod(p, self._interner),
            self._pod_changed,
            per_namespace=True,
            resource=POD,
        )
        self._nodes = WatchFamily(
            self,
            "nodes",
            lambda: lambda _ns: "/api/v1/nodes",
            trim_node,
            self._node_changed,
            per_namespace=False,
            resource=NODE,
        )
        self._hpas = WatchFamily(
            self, "hpas", hpa_paths, trim_hpa, self._hpa_changed, per_namespace=True, resource=HPA
        )
        self._workloads: dict[WorkloadKind, WatchFamily] = {}
        self._families = [self._pods, self._nodes, self._hpas]

    @classmethod
    def for_client(cls, client: KubeClient, *, caps: Caps | None = None, **kwargs: Any) -> MemberCache:
        """A cache of ``client``'s cluster whose requests and store keep within ``caps``."""
        budget = MemberBudget(client.cluster, caps)
        return cls(client.cluster, KubeTransport(client, budget), budget=budget, **kwargs)

    # -- lifecycle ------------------------------------------------------------------------------------

    def spawn(self, name: str, target: Callable[[threading.Event], None]) -> None:
        thread = threading.Thread(target=target, args=(self._stop,), name=name, daemon=True)
        thread.start()
        with self._lock:
            self._threads.append(thread)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        for family in self._families:
            family.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for lw in self.watches:
            lw.close()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)

    @property
    def watches(self) -> list[ListWatch]:
        return [lw for family in list(self._families) for lw in family.watches()]

    @property
    def pods_watch(self) -> ListWatch:
        return self._wait_cluster_watch(self._pods)

    @property
    def nodes_watch(self) -> ListWatch:
        return self._wait_cluster_watch(self._nodes)

    @property
    def hpas_watch(self) -> ListWatch:
        return self._wait_cluster_watch(self._hpas)

    def _wait_cluster_watch(self, family: WatchFamily) -> ListWatch:
        """The family's cluster-wide ListWatch (made at once, when not started: tests drive it by hand)."""
        if family.cluster is None and not self._started and family._path_for is None:
            family._path_for = family._paths()
            family.cluster = family._watch(family._path_for(None), f"{self.cluster}/{family.name}")
        while family.cluster is None and not self._stop.is_set():
            self._stop.wait(0.01)
        assert family.cluster is not None
        return family.cluster

    def watch_workloads(self, kind: WorkloadKind, api_prefix: str, plural: str) -> None:
        """Watch a workload kind (once): ``api_prefix`` is "/apis/<group>/<version>" from discovery."""
        with self._lock:
            if kind in self._workloads:
                return
            family = WatchFamily(
                self,
                f"{plural}.{kind[0] or 'core'}",
                lambda: _paths(api_prefix, plural),
                lambda o: trim_workload(o, self._interner),
                self._workload_handler(kind),
                per_namespace=True,
                resource=WORKLOAD,
                kind=kind,
            )
            self._workloads[kind] = family
            self._families.append(family)
        if self._started:
            family.start()

    # -- our own writes --------------------------------------------------------------------------------

    def note_hpa(
        self, namespace: str, name: str, written: Mapping[str, Any] | None, since: str | None
    ) -> None:
        """A member HPA we created or replaced (the server's answer), or deleted (None), by a write
        conditional on ``since`` (None: a create)."""
        for lw in self._hpas.watches():
            lw.apply_local(written if isinstance(written, Mapping) else None, (namespace, name), since=since)

    def note_scale(
        self, kind: WorkloadKind, namespace: str, name: str, scale: Mapping[str, Any], since: str
    ) -> None:
        """A Scale we wrote, conditional on the workload's ``since``: the cached workload takes its
        replicas and resourceVersion at once."""
        family = self._workloads.get(kind)
        if family is None or not isinstance(scale, Mapping):
            return
        rv = (scale.get("metadata") or {}).get("resourceVersion")
        for lw in family.watches():
            current = lw.get((namespace, name))
            if current is None:
                continue
            updated = {
                **current,
                "metadata": {**current["metadata"], "resourceVersion": rv},
                "spec": {**current["spec"], "replicas": (scale.get("spec") or {}).get("replicas")},
            }
            lw.apply_local(AlreadyTrimmed(updated), since=since)

    # -- liveness -------------------------------------------------------------------------------------

    def retry_failing(self) -> None:
        """The member answered (a probe): failing watches retry now instead of at the end of a backoff."""
        for lw in self.watches:
            if lw.failing or lw.denied.is_set():
                lw.retry_now()

    def streaming(self) -> bool:
        """Synced, no watch failing, every watch open (or between two requests): connected, as far as
        TCP keepalive can tell, though perhaps quiet."""
        if not self.synced:
            return False
        open_watches = [lw for lw in self.watches if not lw.denied.is_set()]
        return bool(open_watches) and not any(lw.failing for lw in open_watches)

    def live(self, max_silence: float) -> bool:
        """Synced, every watch open now (a refused one aside: the member answered it), and one of them
        carried a line within ``max_silence`` seconds: the member answers, as a probe would show."""
        if not self.synced:
            return False
        now = time.monotonic()
        open_watches = [lw for lw in self.watches if not lw.denied.is_set()]
        if not open_watches or any(lw.failing for lw in open_watches):
            return False
        # between two watch requests (one ended by the server, the next being opened) a watch is not
        # streaming for a moment; it counts while its last answer is recent
        if not all(lw.streaming or now - lw.last_contact <= max_silence for lw in open_watches):
            return False
        return now - max(lw.last_contact for lw in open_watches) <= max_silence

    # -- change hook ----------------------------------------------------------------------------------

    def add_listener(self, listener: ChangeListener) -> None:
        """``listener(change)`` after each change of a trimmed object; it must be quick."""
        self._listeners.append(listener)

    def fire(self, change: Change) -> None:
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:
                log.exception(
                    "member cache listener failed", extra={"cluster": self.cluster, "kind": change.resource}
                )

    def _node_changed(self, _type: str, key: ObjectKey, old: Any, new: Any) -> None:
        with self._lock:
            self._generation += 1
            self._node_generation += 1
            self._node_infos = None
        if _type not in QUIET:
            self.fire(Change(NODE, key, old, new))

    def _hpa_changed(self, _type: str, key: ObjectKey, old: Any, new: Any) -> None:
        namespace, name = key
        with self._lock:
            if old is not None:
                target = _hpa_target(namespace, old)
                names = self._hpas_by_target.get(target)
                if names is not None:
                    names.discard(name)
                    if not names:
                        del self._hpas_by_target[target]
            if new is not None:
                self._hpas_by_target.setdefault(_hpa_target(namespace, new), set()).add(name)
        if _type not in QUIET:
            self.fire(Change(HPA, key, old, new))

    def _workload_handler(self, kind: WorkloadKind) -> Callable[[str, ObjectKey, Any, Any], None]:
        def handler(_type: str, key: ObjectKey, old: Any, new: Any) -> None:
            with self._lock:
                self._index_selector(kind, key, new)
            if _type not in QUIET:
                self.fire(Change(WORKLOAD, key, old, new, kind))

        return handler

    def _index_selector(self, kind: WorkloadKind, key: ObjectKey, workload: dict[str, Any] | None) -> None:
        """Under ``_lock``: index the workload's selector by its first equality (or as unindexed)."""
        namespace, name = key
        ref = (kind, name)
        previous = self._selectors.pop((namespace, ref), None)
        if previous is not None:
            slot = previous[1]
            bucket = self._workloads_by_label.get(slot) if slot else self._unindexed.get(namespace)
            if bucket is not None:
                bucket.discard(ref)
        if workload is None:
            return
        reqs = parse_selector((workload.get("spec") or {}).get("selector"))
        if not reqs:
            return
        exact = next(((k, next(iter(v))) for k, op, v in reqs if op == "In" and len(v) == 1), None)
        slot = (namespace, exact[0], exact[1]) if exact else None
        self._selectors[(namespace, ref)] = (reqs, slot)
        if slot is not None:
            self._workloads_by_label.setdefault(slot, set()).add(ref)
        else:
            self._unindexed.setdefault(namespace, set()).add(ref)

    def workloads_selecting(
        self, namespace: str, labels: Mapping[str, str]
    ) -> list[tuple[WorkloadKind, str]]:
        """The watched workloads of ``namespace`` whose selector picks a pod with ``labels``."""
        with self._lock:
            candidates = set(self._unindexed.get(namespace, ()))
            for k, v in labels.items():
                candidates |= self._workloads_by_label.get((namespace, k, v), set())
            found = []
            for ref in candidates:
                entry = self._selectors.get((namespace, ref))
                if entry is not None and selector_matches(entry[0], labels):
                    found.append(ref)
        return sorted(found)

    def _pod_changed(self, _type: str, key: ObjectKey, old: Any, new: dict[str, Any] | None) -> None:
        namespace, name = key
        with self._lock:
            if old is not None:
                for k, v in (old["metadata"].get("labels") or {}).items():
                    names = self._pods_by_label.get((namespace, k, v))
                    if names is not None:
                        names.discard(name)
                        if not names:
                            del self._pods_by_label[(namespace, k, v)]
            if new is None:
                pods = self._pods_by_ns.get(namespace)
                if pods is not None:
                    pods.pop(name, None)
                    if not pods:
                        del self._pods_by_ns[namespace]
            else:
                self._pods_by_ns.setdefault(namespace, {})[name] = new
                for k, v in (new["metadata"].get("labels") or {}).items():
                    self._pods_by_label.setdefault((namespace, k, v), set()).add(name)
            self._rebind(key, new)
        if _type not in QUIET:
            self.fire(Change(POD, key, old, new))

    def _rebind(self, key: ObjectKey, pod: dict[str, Any] | None) -> None:
        """Keep ``_used`` (requests bound per node) equal to the sum over non-terminal bound pods.
        Under ``_lock``; the per-node dicts are replaced, never changed, so a reader's copy stays whole."""
        before = self._bound.pop(key, None)
        after: tuple[str, capacity.ResourceList] | None = None
        if pod is not None and pod["spec"].get("nodeName") and not capacity.is_terminal(pod):
            after = (pod["spec"]["nodeName"], self._pod_requests(pod["spec"]))
        if before == after:
            if after is not None:
                self._bound[key] = after
            return
        if before is not None:
            node, req = before
            left = {r: q - req.get(r, Decimal(0)) for r, q in self._used.get(node, {}).items()}
            self._used[node] = left
        if after is not None:
            node, req = after
            total = dict(self._used.get(node, {}))
            for r, q in req.items():
                total[r] = total.get(r, Decimal(0)) + q
            self._used[node] = total
            self._bound[key] = after
        self._generation += 1

    def _pod_requests(self, spec: Mapping[str, Any]) -> capacity.ResourceList:
        memo_key = json.dumps(
            [spec.get(k) for k in ("containers", "initContainers", "overhead")], sort_keys=True
        )
        found = self._requests_memo.get(memo_key)
        if found is None:
            if len(self._requests_memo) > 10_000:
                self._requests_memo.clear()
            found = self._requests_memo[memo_key] = capacity.pod_requests(spec)
        return found

    # -- queries --------------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """Every cluster-wide list completed (or was refused: then per-namespace stores stand in)."""
        return all(
            f.cluster is not None and (f.cluster.synced.is_set() or f.cluster.denied.is_set())
            for f in (self._pods, self._nodes, self._hpas)
        )

    def wait_synced(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.synced:
            if end is not None and time.monotonic() >= end:
                return False
            if self._stop.wait(0.01):
                return False
        return True

    def _require_synced(self) -> None:
        """Answer only from a store that is whole and current: not before the first lists, not while a
        watch is failing (the member went away: what the store holds is the past, not the present), and
        not while one lists again after its watch expired (deletions meanwhile are not in the store)."""
        over = [lw for lw in self.watches if lw.unusable]
        if over:  # it sent more than its budget: what it held was given up
            raise CacheNotSyncedError(self.cluster, f"member over its budget: {over[0].unusable}")
        failing = [lw for lw in self.watches if lw.failing and not lw.denied.is_set()]
        if not self.synced:
            waiting = ", ".join(f.name for f in (self._pods, self._nodes, self._hpas) if f.waiting(None))
            why = f"; {failing[0].name}: {failing[0].last_error}" if failing else ""
            raise CacheNotSyncedError(self.cluster, f"member cache not synced (waiting for {waiting}{why})")
        if failing:
            lw = failing[0]
            raise ClusterUnreachableError(self.cluster, f"watch {lw.name} failing: {lw.last_error}")
        late = [lw for lw in self.watches if lw.late]
        if late:  # it trickles its answers: what the store holds may be long past
            raise ClusterUnreachableError(self.cluster, f"watch {late[0].name} cut off: {late[0].late}")
        relisting = [lw.name for lw in self.watches if lw.relisting]
        if relisting:  # its watch expired: the old store may still hold what was deleted meanwhile
            raise CacheNotSyncedError(self.cluster, f"member cache relisting {', '.join(relisting)}")

    def _source(self, family: WatchFamily, namespace: str | None) -> ListWatch:
        self._require_synced()
        if namespace is not None:
            family.ensure(namespace)
        found = family.source(namespace)
        if found is None:
            where = f" in namespace {namespace}" if namespace else ""
            raise CacheNotSyncedError(
                self.cluster, f"member cache not synced (waiting for {family.name}{where})"
            )
        return found

    def ready_for(self, namespace: str, kind: WorkloadKind | None = None, timeout: float = 0.0) -> bool:
        """Whether ``namespace`` (and ``kind``) can be answered now; starts what is missing and waits up to
        ``timeout`` seconds for it (a kind or namespace first asked for)."""
        families = [self._pods, self._hpas] + ([self._workloads[kind]] if kind in self._workloads else [])
        end = time.monotonic() + timeout
        while True:
            if self.synced:
                for family in families:
                    family.ensure(namespace)
                if all(f.source(namespace) is not None for f in families):
                    return True
            if time.monotonic() >= end or self._stop.wait(0.02):
                return False

    def pods_matching(self, namespace: str, selector: Any) -> list[dict[str, Any]]:
        """The pods of ``namespace`` a LabelSelector (dict) or selector string picks; an empty or
        unreadable selector picks none (a workload without a selector owns no pods we can count)."""
        self._source(self._pods, namespace)
        reqs = parse_selector(selector)
        if not reqs:
            return []
        with self._lock:
            pods = self._pods_by_ns.get(namespace) or {}
            exact = [(k, next(iter(v))) for k, op, v in reqs if op == "In" and len(v) == 1]
            if exact:
                names = min((self._pods_by_label.get((namespace, k, v), set()) for k, v in exact), key=len)
                candidates = [pods[n] for n in names if n in pods]
            else:
                candidates = list(pods.values())
        return [p for p in candidates if selector_matches(reqs, (p["metadata"].get("labels") or {}))]

    def all_pods(self) -> list[dict[str, Any]]:
        return self._source(self._pods, None).items()

    def nodes(self) -> list[dict[str, Any]]:
        return self._source(self._nodes, None).items()

    def hpas(self, namespace: str) -> list[dict[str, Any]]:
        lw = self._source(self._hpas, namespace)
        return [h for h in lw.items() if h["metadata"].get("namespace") == namespace]

    def hpa(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._source(self._hpas, namespace).get((namespace, name))

    def hpas_targeting(self, namespace: str, group: str, kind: str, name: str) -> list[dict[str, Any]]:
        lw = self._source(self._hpas, namespace)
        with self._lock:
            names = sorted(self._hpas_by_target.get((namespace, group, kind, name), ()))
        return [h for h in (lw.get((namespace, n)) for n in names) if h is not None]

    def workload(self, kind: WorkloadKind, namespace: str, name: str) -> dict[str, Any] | None:
        """The trimmed workload, or None when it does not exist; CacheNotSyncedError while unknown."""
        family = self._workloads.get(kind)
        if family is None:
            raise CacheNotSyncedError(self.cluster, f"member cache does not watch {kind[1]} yet")
        return self._source(family, namespace).get((namespace, name))

    def capacity_known(self) -> bool:
        """Nodes and every namespace's pods are readable (RBAC may withhold them: capacity unknown)."""
        self._require_synced()
        return not self._nodes.denied and not self._pods.denied

    def fit(self, template_spec: Mapping[str, Any]) -> int | None:
        """How many more pods of this template fit on the nodes that admit it; None when unknown.

        Memoised per template node by node: a pod event changes the requests bound to one node (the
        index replaces that node's entry, it never edits it in place), so only the nodes whose entry
        is not the one the memo was made from are counted again, and a node event counts them all.
        That is exact whatever the pods that came or went request, and a burst of pod events does not
        recount every node for every FederatedHPA. (A memo reused whole for two seconds across pod
        events, as before, counted each pod bound since twice beside a fresh count of running pods:
        a real member whose node held four pods read as room for six during a burst.)"""
        if not self.capacity_known():
            return None
        key = json.dumps(template_spec, sort_keys=True, default=str)
        with self._lock:
            used = dict(self._used)
            node_generation = self._node_generation
            memo = self._fit_memo.get(key)
        if memo is None or memo.node_generation != node_generation:
            admitted = tuple(n for n in self._node_infos_now() if capacity.node_admits(n, template_spec))
            memo = _FitMemo(node_generation, {}, admitted)
            nodes = list(admitted)
        else:
            nodes = [n for n in memo.nodes if used.get(n.name) is not memo.per_node[n.name][0]]
        if nodes:
            request = capacity.pod_requests(template_spec)
            per_node = dict(memo.per_node)
            for n in nodes:
                bound = used.get(n.name)
                per_node[n.name] = (
                    bound,
                    capacity.replicas_that_fit(capacity.free_on(n, bound or {}), request),
                )
            memo = _FitMemo(node_generation, per_node, memo.nodes)
            with self._lock:
                if len(self._fit_memo) > 10_000:
                    self._fit_memo.clear()
                self._fit_memo[key] = memo
        return sum(fit for _, fit in memo.per_node.values())

    def _node_infos_now(self) -> list[capacity.NodeInfo]:
        with self._lock:
            cached = self._node_infos
            generation = self._generation
        if cached is not None:
            return cached[1]
        infos = [capacity.node_info(n) for n in self.nodes()]
        with self._lock:
            if self._generation == generation:
                self._node_infos = (generation, infos)
        return infos


@dataclass(frozen=True)
class _FitMemo:
    """A template's fit node by node: per admitting node, the bound-requests entry it was counted from
    (identity, see :meth:`MemberCache.fit`) and the pods that fit there; ``nodes`` the admitting nodes
    as they were at ``node_generation``."""

    node_generation: int
    per_node: dict[str, tuple[capacity.ResourceList | None, int]]
    nodes: tuple[capacity.NodeInfo, ...]


def _paths(prefix: str, plural: str) -> PathFor:
    def path(namespace: str | None) -> str:
        return f"{prefix}/namespaces/{namespace}/{plural}" if namespace else f"{prefix}/{plural}"

    return path


def _hpa_target(namespace: str, hpa: Mapping[str, Any]) -> tuple[str, str, str, str]:
    ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    group = str(ref.get("apiVersion") or "").rpartition("/")[0]
    return (namespace, group, str(ref.get("kind") or ""), str(ref.get("name") or ""))
