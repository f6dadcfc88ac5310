"""This controller's kinds and member clusters, registered on the kind-agnostic manager.

``FleetManager`` is ``Manager`` with: the FederatedHPA controller (controller.federated_hpa_controller)
and the CronFederatedHPA controller (controller.cron_controller), each fed by its informer; the member
Secrets' informer, which keeps the member registry (controller.kube.registry) up to date; the member
probe loop; and member-cache events (controller.runtime.member_events) turned into FederatedHPA keys.

What each informer keeps (its trim): a FederatedHPA's metadata and spec (what says whether a change is
news, and which workload it scales), a CronFederatedHPA's identity, a member Secret's metadata only.
The kubeconfig in a Secret reaches the registry as the list or watch reads it and is never kept in a
store of the manager's: the registry holds the clients built from it, and nothing else needs it.

Start: the member-Secret informer feeds the registry during its first list, before it reports synced,
so no FederatedHPA is planned while some of its clusters are still unknown. Later on, a member Secret
the informer has seen but the registry has not registered (its credentials still loading, or its
registration failed) makes the cluster unknown, not absent: FederatedHPA reconciles wait and retry
rather than plan without it (which would move its share and lose the state kept in status).

A standby replica (no Lease, or no shard) keeps the member-Secret informer, and so the registry and
every member's watch-backed cache, synced from process start (``ManagerConfig.warm_standby``): a takeover
then costs the Lease, not a list of every member. It only reads: the registry and the caches list and
watch, member events are dropped while not leading, nothing is enqueued, and every write goes through the
fence (controller.runtime.fence), which refuses it on a replica that does not hold the object's Lease.

Member Secrets that need attention (``registry.problems()``: unusable; ``registry.warnings()``: an opt-in
insecure setting in use) get a Warning Event (``MemberUnusable``, ``InsecureMemberCredentials``) on the
member's Secret, since a member cluster has no object of its own on the management cluster: once per
change of what is wrong, from the probe loop (never from the informer's handler, which must stay quick).
The message is the registry's text, which never quotes the kubeconfig, with any URL credentials masked.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from controller.cron_controller import CronController, CronFederatedHPAReconciler
from controller.federated_hpa_controller import FederatedHPAReconciler
from controller.kube.control_plane import CRON_FEDERATED_HPA_PLURAL, FEDERATED_HPA_PLURAL, KubeControlPlane
from controller.kube.registry import MEMBER_LABEL
from controller.ports import MemberCluster
from controller.runtime.coalesce import Coalescer
from controller.runtime.fence import FencedMember
from controller.runtime.leader import LeaseClient
from controller.runtime.manager import (
    InformerSpec,
    Manager,
    ManagerConfig,
    SystemClock,
    WatchEvent,
    release_heap,
)
from controller.runtime.member_events import (
    ALL,
    ClusterSelection,
    RecentChanges,
    TargetIndex,
    resolve,
    target_of,
    touched,
)
from controller.runtime.metrics import Metrics, TimedMember
from fhpa_api import CRON_FEDERATED_HPA, FEDERATED_HPA

log = logging.getLogger(__name__)

REASON_MEMBER_UNUSABLE = "MemberUnusable"
REASON_INSECURE_MEMBER = "InsecureMemberCredentials"
MAX_MEMBER_EVENT_MESSAGE = 512
NODE_PASS_INTERVAL_SECONDS = 1.0
# how far back a takeover looks for member changes to plan first: a crashed leader's Lease (15 s by
# default, longer where tuned) and the passes it may have missed before, with room to spare
RECENT_CHANGES_SECONDS = 300.0
"""One member's node changes start at most one low-lane pass over the FederatedHPAs a second."""
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")

_IDENTITY = ("name", "namespace", "uid", "resourceVersion", "generation", "deletionTimestamp")


class RegistryChange(Protocol):
    @property
    def changed(self) -> bool: ...

    @property
    def rebuilt(self) -> list[str]: ...

    @property
    def removed(self) -> list[str]: ...


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


def trim_identity(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Who the object is and which version: enough to enqueue it and to tell a change."""
    meta = obj.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in _IDENTITY if k in meta}}


def trim_federated_hpa(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata (without managedFields) and spec: status is read fresh by the reconcile, never here."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {"metadata": meta, "spec": obj.get("spec")}


def trim_secret(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A member Secret's metadata: its identity, labels and annotations; never its data."""
    meta = obj.get("metadata") or {}
    kept = trim_identity(obj)["metadata"]
    for k in ("labels", "annotations"):
        if k in meta:
            kept[k] = meta[k]
    return {"metadata": kept}


class FleetManager(Manager):
    """The manager with this controller's kinds, member registry, probes and member events."""

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
        super().__init__(control_plane, config, metrics=metrics, lease_client=lease_client, clock=clock)
        self.registry = registry
        self.cron = CronController(
            self.writer,
            config.default_time_zone,
            namespaces=config.namespaces,
            on_fire=self.metrics.on_cron_fire,
        )
        self.federated_hpas = FederatedHPAReconciler(
            self.writer,
            self._members,
            self.clock,
            config.planner,
            namespaces=config.namespaces,
            unknown=self.unknown_clusters,
            cleanup_give_up_seconds=config.cleanup_give_up_seconds,
            on_action=self.metrics.on_action,
            on_pass=self.metrics.on_pass,
            on_cleanup=self.metrics.on_cleanup,
        )
        self._members_lock = threading.Lock()
        self._member_secrets: dict[str, SecretRef] = {}  # from the Secret informer: the Events' objects
        self._member_reported: dict[str, tuple[str, str]] = {}  # cluster -> (reason, message) sent
        self.targets = TargetIndex()  # workload -> the FederatedHPAs that scale it (member events)
        self.selections = ClusterSelection()  # FederatedHPA -> its clusterAffinity (node changes)
        self._fhpa_seen: dict[tuple[str, str], Any] = {}  # what of each object a new event must change
        self._recent = RecentChanges(RECENT_CHANGES_SECONDS)  # what changed while nobody could plan it
        path = control_plane.collection_path
        self.register(
            FEDERATED_HPA,
            self.federated_hpas,
            InformerSpec(
                "federatedhpas",
                path(FEDERATED_HPA_PLURAL),
                trim_federated_hpa,
                "federatedhpas",
                self._on_fhpa,
            ),
        )
        self.register(
            CRON_FEDERATED_HPA,
            CronFederatedHPAReconciler(self.cron, self.clock),
            InformerSpec(
                "cronfederatedhpas", path(CRON_FEDERATED_HPA_PLURAL), trim_identity, "cronfederatedhpas"
            ),
        )
        self.add_informer(
            InformerSpec(
                "member-secrets",
                control_plane.secrets_path(config.namespace),
                trim_secret,
                "secrets",
                self._on_secret,
                label_selector=f"{MEMBER_LABEL}=true",
                on_full=self._on_secret_data,
                standby=True,  # a standby keeps the registry, and so the member caches, synced
            )
        )
        self.add_loop("member-probes", self._probe_loop)
        self._node_passes = Coalescer(NODE_PASS_INTERVAL_SECONDS)  # per member
        listen = getattr(registry, "add_change_listener", None)
        if callable(listen):
            listen(self._on_member_change)

    # -- members ------------------------------------------------------------------------------------

    def _members(self) -> dict[str, MemberCluster]:
        return {
            name: FencedMember(TimedMember(m, self.metrics), self.fence)
            for name, m in self.registry.members().items()
        }

    def warming_up(self) -> list[str]:
        return self.unsynced_members()

    def unsynced_members(self) -> list[str]:
        """Members whose watch-backed cache has not completed its first lists."""
        state = getattr(self.registry, "cache_state", None)
        return [] if not callable(state) else sorted(n for n, ok in state().items() if not ok)

    def unknown_clusters(self) -> list[str]:
        """Member Secrets the informer has seen whose cluster the registry has not registered (yet)."""
        informer = self.informers.get("member-secrets")
        if informer is None:
            return []
        seen = {name for _, name in list(informer.keys())}
        return sorted(seen - set(self.registry.members()))

    # -- informer handlers --------------------------------------------------------------------------

    def _on_fhpa(self, event: WatchEvent) -> None:
        """Enqueue a FederatedHPA whose spec, metadata or existence changed; a change of its status alone
        (our own status write, coming back through the watch) is not a reason to plan it again."""
        if event.type == "DELETED":
            self.targets.remove(event.key)
            self.selections.remove(event.key)
            self._fhpa_seen.pop(event.key, None)
            self.queue.add((FEDERATED_HPA, *event.key))
            return
        self.targets.update(event.key, target_of(event.obj))
        self.selections.update(event.key, event.obj)
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
        if event.listed and not self._recent.holds(event.key, target_of(event.obj)):
            self.queue.add_low((FEDERATED_HPA, *event.key))  # the list at a start: every object, none urgent
        else:
            self.queue.add((FEDERATED_HPA, *event.key))

    def _on_member_change(self, cluster: str, change: Any) -> None:
        """A member cache saw a change: enqueue the FederatedHPAs it concerns (member_events). A standby
        only remembers what the change touched (``RecentChanges``): its takeover plans those first."""
        selecting = getattr(self.registry, "workloads_selecting", None)

        def workloads(namespace: str, labels: Mapping[str, str]) -> Any:
            return selecting(cluster, namespace, labels) if callable(selecting) else ()

        touch = touched(change, workloads)
        self._recent.record(touch)  # also on a leader: its FederatedHPA list may not have arrived yet
        if not self.leading or self._leading_stop.is_set():  # a standby, or a leader stopping
            return
        refs = resolve(touch, self.targets)
        if not refs:
            return
        self.metrics.member_events.labels(resource=change.resource).inc()
        if refs == set(ALL):  # a node: every plan over the member may change, none urgently
            self._node_passes.request(cluster, lambda: self._node_pass(cluster))
            return
        for namespace, name in refs:
            self.queue.add((FEDERATED_HPA, namespace, name))

    def _node_pass(self, cluster: str) -> None:
        """The FederatedHPAs whose clusterAffinity selects ``cluster``, in the low lane: the others'
        plans never read its capacity (an unknown cluster: every one, as a new member would be)."""
        if not self.leading or self._leading_stop.is_set():
            return
        member = self.registry.members().get(cluster)
        for key in self.keys(FEDERATED_HPA):
            if member is None or self.selections.selects(key, member.identity):
                self.queue.add_low((FEDERATED_HPA, *key))

    def _stop_leading(self) -> None:
        """No node pass is asked for or run from here on (the member-change handler checks the stop):
        a replica that lost its Lease, or is shutting down, enqueues nothing."""
        self._leading_stop.set()
        self._node_passes.cancel()
        super()._stop_leading()

    def _on_secret_data(self, event_type: str, secret: Mapping[str, Any]) -> None:
        """A member Secret as read, kubeconfig included: the registry builds or rebuilds its client.

        The Events' object is recorded here too: the probe loop may report the registry's problem with
        this Secret before the trimmed change arrives, and an Event must name the Secret's uid."""
        if event_type != "DELETED":
            meta = secret.get("metadata") or {}
            self._remember_secret(meta.get("namespace"), meta.get("name"), meta)
        self._registry_event(event_type, secret)

    def _remember_secret(self, namespace: str | None, name: str | None, meta: Mapping[str, Any]) -> None:
        if not name:
            return
        where = namespace or self.config.namespace
        ref = SecretRef(_SecretMeta(name, where, meta.get("uid"), meta.get("resourceVersion")))
        with self._members_lock:
            self._member_secrets[name] = ref

    def _on_secret(self, event: WatchEvent) -> None:
        """A member Secret's trimmed change: the Events' object; a Secret a relist found gone leaves."""
        if event.type == "DELETED":
            with self._members_lock:
                self._member_secrets.pop(event.key[1], None)
        else:
            self._remember_secret(event.key[0], event.key[1], event.obj.get("metadata") or {})
        if event.type == "DELETED":
            self._registry_event("DELETED", event.obj)  # already seen whole when watched; not after a relist

    def _registry_event(self, event_type: str, secret: Mapping[str, Any]) -> None:
        change = self.registry.apply_event(event_type, secret)
        if change.rebuilt or change.removed:
            release_heap()  # the old client and caches are garbage now, even if the heap was frozen
        if change.changed:
            name = (secret.get("metadata") or {}).get("name")
            log.info("member cluster registry changed", extra={"cluster": name, "change": event_type.lower()})
            if self.leading:  # a standby has nothing to plan; taking over plans every object
                self._enqueue_all(FEDERATED_HPA)

    # -- member probes ------------------------------------------------------------------------------

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
