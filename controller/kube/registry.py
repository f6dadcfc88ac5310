"""The member-cluster registry (DESIGN §2): one Secret per cluster in the controller's namespace.

A Secret is a member cluster when it is labelled ``autoscaling.karmada.io/member-cluster: "true"``
and holds a kubeconfig under the key ``kubeconfig``. Its name is the cluster's name and its labels
(the marker label aside) are the cluster's labels for ``clusterAffinity.labelSelector``. Optional
annotations give what Karmada keeps on its Cluster objects:

- ``autoscaling.karmada.io/provider``, ``autoscaling.karmada.io/region``, ``autoscaling.karmada.io/zone``:
  the fields ``clusterAffinity.fieldSelector`` matches. Labels with the same keys work too, and so do
  the well-known ``topology.kubernetes.io/region`` / ``topology.kubernetes.io/zone`` labels.
- ``autoscaling.karmada.io/taints``: a JSON list of ``{"key", "value", "effect"}``; a NoExecute taint
  takes the cluster out of the candidates (DESIGN §4 failover).
- ``autoscaling.karmada.io/elastic-pods`` (a whole number) and ``autoscaling.karmada.io/node-provision-
  seconds``: the cluster grows nodes, up to that many more pods, and a node takes that long to come,
  where nothing the cluster shows says so (``controller.kube.capacity_signals``).
- ``autoscaling.karmada.io/kubeconfig-context``: the kubeconfig context to use (default: current).
- ``autoscaling.karmada.io/allow-insecure-tls: "true"`` and ``autoscaling.karmada.io/allow-proxy-url:
  "true"``: the explicit opt-ins without which a kubeconfig's ``insecure-skip-tls-verify`` and
  ``proxy-url`` are refused. A cluster that uses either is logged with a warning when its client is
  built and listed by ``warnings()``.

Credentials (security review H1): the kubeconfig may carry only inline credentials (``token``,
``username``/``password``, ``client-certificate-data``/``client-key-data``, ``certificate-authority-data``).
File paths, exec and auth-provider plugins, impersonation and an ``http://`` server with a credential are
refused (``controller.kube.clients.build_configuration``): a Secret must never make the controller read
its own files, run a program, or send a credential in clear text.

The registry is fed either way the manager likes: ``sync_from_secrets`` with a full list (periodic
list, or a watch's initial list), ``apply_event`` with each watch event. A cluster's client is built
again only when its kubeconfig (or context) changes; a change of labels or annotations alone updates
its identity and keeps the connection pool and discovery cache. A Secret whose kubeconfig cannot be
used, whatever is wrong with it, still registers its cluster, as one that is always unhealthy, so that
status shows it and failover moves its share, rather than it silently disappearing; a Secret that was
usable and is changed into an unusable one replaces the working client with such a broken member (the
old credentials are not kept in use).

Health: ``probe_all`` probes every cluster in parallel (GET /readyz with a short timeout) and keeps per
cluster whether it answered, since when, and the last error. A cluster whose last probe failed is not
asked again by ``observe`` until a probe succeeds: reconciles do not each wait out its timeouts.

Kubeconfig contents and tokens are never logged, and never put into an error message.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import ValidationError

from controller.errors import ClusterUnreachableError
from controller.kube.capacity_signals import declared
from controller.kube.clients import (
    OPT_IN_INSECURE_TLS,
    OPT_IN_PROXY_URL,
    CredentialPolicy,
    KubeClient,
    KubeconfigError,
    RequestObserver,
    Timeouts,
    build_api_client,
    opt_ins_used,
    parse_kubeconfig,
)
from controller.kube.member import KubeMemberCluster
from controller.kube.member_cache import Change
from controller.member_layer import MemberLayer
from controller.planning.observation import ClusterObservation, Taint
from controller.ports import ClusterIdentity, MemberCluster, MemberWrite
from fhpa_api.models import FederatedHPA

log = logging.getLogger(__name__)

MEMBER_LABEL = "autoscaling.karmada.io/member-cluster"
KUBECONFIG_KEY = "kubeconfig"
ANNOTATION_PROVIDER = "autoscaling.karmada.io/provider"
ANNOTATION_REGION = "autoscaling.karmada.io/region"
ANNOTATION_ZONE = "autoscaling.karmada.io/zone"
ANNOTATION_TAINTS = "autoscaling.karmada.io/taints"
ANNOTATION_CONTEXT = "autoscaling.karmada.io/kubeconfig-context"
ANNOTATION_ALLOW_INSECURE_TLS = OPT_IN_INSECURE_TLS
ANNOTATION_ALLOW_PROXY_URL = OPT_IN_PROXY_URL
TOPOLOGY_REGION = "topology.kubernetes.io/region"
TOPOLOGY_ZONE = "topology.kubernetes.io/zone"


class ProbedMember(MemberCluster, Protocol):
    """A member the registry can relabel and close."""

    def set_identity(self, identity: ClusterIdentity) -> None: ...

    def close(self) -> None: ...


MemberFactory = Callable[[ClusterIdentity, dict[str, Any], str | None, CredentialPolicy], ProbedMember]
"""Builds a member from (identity, kubeconfig, context, what the Secret opted into); raises
KubeconfigError when the kubeconfig cannot be used (any other exception is treated the same way)."""


def default_factory(
    timeouts: Timeouts,
    observer: RequestObserver | None = None,
    *,
    watch: bool = True,
    cache_options: Mapping[str, Any] | None = None,
    live_window_seconds: float = 10.0,
    quiet_probe_seconds: float = 60.0,
) -> MemberFactory:
    """Members on the official client; ``observer`` sees every request's latency (metrics). With
    ``watch`` (the default) each member keeps a watch-backed cache (controller.kube.member_cache) that
    the registry starts once its change listener is attached."""

    def build(
        identity: ClusterIdentity, kubeconfig: dict[str, Any], context: str | None, policy: CredentialPolicy
    ) -> ProbedMember:
        api = build_api_client(kubeconfig, context, policy=policy)
        client = KubeClient(identity.name, api, timeouts, observer)
        return KubeMemberCluster(
            identity,
            client,
            watch=watch,
            cache_options=cache_options,
            live_window_seconds=live_window_seconds,
            quiet_probe_seconds=quiet_probe_seconds,
        )

    return build


MemberChangeListener = Callable[[str, Change], None]
"""``listener(cluster, change)`` for each change a member's cache sees; must be quick."""


def _synced(member: Any) -> bool:
    cache = getattr(member, "cache", None)
    return True if cache is None else bool(cache.synced)


# --- Secret parsing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SecretView:
    """The parts of a Secret the registry reads, from an API dict, a V1Secret, or V1Secret.to_dict()."""

    name: str
    namespace: str
    resource_version: str
    labels: dict[str, str]
    annotations: dict[str, str]
    kubeconfig: str | None  # decoded text; None when the key is missing or not decodable
    problem: str | None = None  # why kubeconfig is None


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if isinstance(obj, Mapping) and key in obj:
            return obj[key]
        if not isinstance(obj, Mapping) and getattr(obj, key, None) is not None:
            return getattr(obj, key)
    return None


def read_secret(secret: Any) -> SecretView:
    meta = _get(secret, "metadata") or {}
    data = _get(secret, "data") or {}
    string_data = _get(secret, "stringData", "string_data") or {}
    kubeconfig: str | None = None
    problem: str | None = None
    if KUBECONFIG_KEY in string_data:
        kubeconfig = str(string_data[KUBECONFIG_KEY])
    elif KUBECONFIG_KEY in data:
        try:
            kubeconfig = base64.b64decode(data[KUBECONFIG_KEY], validate=True).decode()
        except (binascii.Error, ValueError, UnicodeDecodeError):
            problem = f"data.{KUBECONFIG_KEY} is not base64-encoded UTF-8 text"
    else:
        problem = f"the Secret has no {KUBECONFIG_KEY!r} key"
    return SecretView(
        name=str(_get(meta, "name") or ""),
        namespace=str(_get(meta, "namespace") or ""),
        resource_version=str(_get(meta, "resourceVersion", "resource_version") or ""),
        labels=dict(_get(meta, "labels") or {}),
        annotations=dict(_get(meta, "annotations") or {}),
        kubeconfig=kubeconfig,
        problem=problem,
    )


def is_member_secret(view: SecretView, namespace: str | None) -> bool:
    return view.labels.get(MEMBER_LABEL) == "true" and (namespace is None or view.namespace == namespace)


def identity_of(view: SecretView) -> tuple[ClusterIdentity, str | None]:
    """The cluster identity a Secret describes, and a problem with its annotations (identity still made)."""

    def field_of(key: str, *fallbacks: str) -> str | None:
        for source in (
            view.annotations.get(key),
            view.labels.get(key),
            *(view.labels.get(f) for f in fallbacks),
        ):
            if source:
                return source
        return None

    taints: list[Taint] = []
    problem = None
    raw = view.annotations.get(ANNOTATION_TAINTS)
    if raw:
        try:
            taints = [Taint.model_validate(t) for t in json.loads(raw)]
        except (ValueError, TypeError, ValidationError):
            problem = f"annotation {ANNOTATION_TAINTS} must be a JSON list of {{key, value, effect}}; ignored"
    elastic_pods, provision_seconds, declared_problem = declared(view.annotations)
    problem = "; ".join(p for p in (problem, declared_problem) if p) or None
    identity = ClusterIdentity(
        name=view.name,
        labels={k: v for k, v in view.labels.items() if k != MEMBER_LABEL},
        provider=field_of(ANNOTATION_PROVIDER),
        region=field_of(ANNOTATION_REGION, TOPOLOGY_REGION),
        zone=field_of(ANNOTATION_ZONE, TOPOLOGY_ZONE),
        taints=taints,
        elastic_pods=elastic_pods,
        provision_seconds=provision_seconds,
    )
    return identity, problem


def policy_of(view: SecretView) -> CredentialPolicy:
    """The opt-ins a Secret's annotations give: each only when set to exactly "true"."""
    return CredentialPolicy(
        allow_insecure_tls=view.annotations.get(ANNOTATION_ALLOW_INSECURE_TLS) == "true",
        allow_proxy_url=view.annotations.get(ANNOTATION_ALLOW_PROXY_URL) == "true",
    )


def _digest(text: str, context: str | None, policy: CredentialPolicy) -> str:
    opt_ins = f"{int(policy.allow_insecure_tls)}{int(policy.allow_proxy_url)}"
    return hashlib.sha256(f"{context or ''}\0{opt_ins}\0{text}".encode()).hexdigest()


# --- members ----------------------------------------------------------------------------------------


class BrokenMember:
    """A registered cluster whose kubeconfig cannot be used: always unhealthy, never called."""

    def __init__(self, identity: ClusterIdentity, problem: str) -> None:
        self._identity = identity
        self.problem = problem

    @property
    def identity(self) -> ClusterIdentity:
        return self._identity

    def _fail(self) -> ClusterUnreachableError:
        return ClusterUnreachableError(self._identity.name, f"unusable kubeconfig Secret: {self.problem}")

    def set_identity(self, identity: ClusterIdentity) -> None:
        self._identity = identity

    def probe(self) -> bool:
        return False

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        raise self._fail()

    def write(self, fhpa: FederatedHPA, action: MemberWrite) -> None:
        raise self._fail()

    def close(self) -> None:
        pass


@dataclass
class ClusterHealth:
    """What the registry knows of a cluster's health: None until the first probe."""

    healthy: bool | None = None
    since: datetime | None = None  # when ``healthy`` last changed
    last_probe: datetime | None = None
    consecutive_failures: int = 0
    last_error: str | None = None


class RegisteredMember(MemberLayer):
    """A member as the registry hands it out: its identity kept current, and ``observe`` refused at once
    while the last probe failed (the reconcile then reports the cluster unhealthy without waiting)."""

    def __init__(self, registry: MemberRegistry, name: str) -> None:
        # no fixed inner member: ``inner`` looks the name up on every call
        self._registry = registry
        self._name = name

    def inner(self) -> ProbedMember:
        """The registry's current member of that name (a changed kubeconfig replaces it)."""
        return self._registry._entry(self._name).member

    def probe(self) -> bool:
        return self._registry.probe(self._name)

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        health = self._registry.health(self._name)
        if health is not None and health.healthy is False:
            raise ClusterUnreachableError(self._name, f"failed its last health probe: {health.last_error}")
        return super().observe(fhpa)


@dataclass
class _Entry:
    member: ProbedMember
    resource_version: str
    kubeconfig_digest: str
    problem: str | None = None
    health: ClusterHealth = field(default_factory=ClusterHealth)
    warning: str | None = None  # an opt-in insecure setting in use


@dataclass
class RegistryChange:
    added: list[str] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)  # new client (kubeconfig changed)
    relabelled: list[str] = field(default_factory=list)  # identity changed, client kept
    removed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.rebuilt or self.relabelled or self.removed)


class MemberRegistry:
    """Member clusters from Secrets, with per-cluster health. Thread-safe."""

    def __init__(
        self,
        namespace: str | None,
        timeouts: Timeouts | None = None,
        factory: MemberFactory | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_probe_workers: int = 8,
        request_observer: RequestObserver | None = None,
    ) -> None:
        self.namespace = namespace
        self.timeouts = timeouts or Timeouts()
        self._factory = factory or default_factory(self.timeouts, request_observer)
        self._clock = clock
        self._max_probe_workers = max_probe_workers
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._listeners: list[MemberChangeListener] = []

    def add_change_listener(self, listener: MemberChangeListener) -> None:
        """Called with (cluster, change) for each change in any member's cache, present or future."""
        self._listeners.append(listener)

    def _dispatch(self, cluster: str, change: Change) -> None:
        for listener in list(self._listeners):
            try:
                listener(cluster, change)
            except Exception:
                log.exception("member change listener failed", extra={"cluster": cluster})

    def _start(self, name: str, member: ProbedMember) -> None:
        """Attach the change listeners to the member's cache (if it has one), then start its watches."""
        cache = getattr(member, "cache", None)
        if cache is not None:
            cache.add_listener(lambda change, n=name: self._dispatch(n, change))
        start = getattr(member, "start", None)
        if callable(start):
            start()

    def workloads_selecting(
        self, cluster: str, namespace: str, labels: Mapping[str, str]
    ) -> list[tuple[tuple[str, str], str]]:
        """The workloads in ``cluster``'s cache whose selector picks a pod with ``labels``."""
        with self._lock:
            entry = self._entries.get(cluster)
        cache = getattr(entry.member, "cache", None) if entry is not None else None
        return [] if cache is None else cache.workloads_selecting(namespace, labels)

    def cache_state(self) -> dict[str, bool]:
        """Per cluster, whether its cache has synced (True for members without a cache)."""
        with self._lock:
            members = {name: e.member for name, e in self._entries.items()}
        return {name: _synced(m) for name, m in sorted(members.items())}

    # --- feeding ---------------------------------------------------------------------------------

    def sync_from_secrets(self, secrets: Iterable[Any]) -> RegistryChange:
        """Make the registry match a full list of Secrets (others' Secrets are ignored)."""
        change = RegistryChange()
        seen = set()
        for secret in secrets:
            view = read_secret(secret)
            if not is_member_secret(view, self.namespace) or not view.name:
                continue
            seen.add(view.name)
            self._upsert(view, change)
        with self._lock:
            for name in sorted(set(self._entries) - seen):
                self._remove(name, change)
        return change

    def apply_event(self, event_type: str, secret: Any) -> RegistryChange:
        """One watch event (ADDED, MODIFIED, DELETED; BOOKMARK and others are ignored)."""
        change = RegistryChange()
        view = read_secret(secret)
        if event_type == "DELETED" or (
            event_type in ("ADDED", "MODIFIED") and not is_member_secret(view, self.namespace)
        ):
            # a Secret that lost its marker label leaves the registry like a deleted one
            if self.namespace is None or view.namespace == self.namespace:
                with self._lock:
                    if view.name in self._entries:
                        self._remove(view.name, change)
            return change
        if event_type in ("ADDED", "MODIFIED") and view.name:
            self._upsert(view, change)
        return change

    def _upsert(self, view: SecretView, change: RegistryChange) -> None:
        identity, annotation_problem = identity_of(view)
        context = view.annotations.get(ANNOTATION_CONTEXT)
        policy = policy_of(view)
        digest = _digest(view.kubeconfig or view.problem or "", context, policy)
        with self._lock:
            entry = self._entries.get(view.name)
            if (
                entry is not None
                and entry.resource_version == view.resource_version
                and view.resource_version
            ):
                return
            if entry is not None and entry.kubeconfig_digest == digest and entry.member.identity == identity:
                entry.resource_version = view.resource_version
                return
            if entry is not None and entry.kubeconfig_digest == digest:
                entry.member.set_identity(identity)
                entry.resource_version = view.resource_version
                change.relabelled.append(view.name)
                log.info("Updated member cluster identity", extra={"cluster": view.name})
                return
            member, problem, warning = self._build(identity, view, context, policy)
            if annotation_problem:
                log.warning(
                    "Member cluster Secret annotation ignored",
                    extra={"cluster": view.name, "problem": annotation_problem},
                )
            if entry is not None:
                entry.member.close()
                # new credentials may be the fix for what made it unhealthy: observe tries it again at once
                health = ClusterHealth()
                change.rebuilt.append(view.name)
                if problem is not None and entry.problem is None:
                    log.warning(
                        "Member cluster Secret changed and is now unusable: its previous client is closed "
                        "and the cluster is unhealthy until the Secret is fixed",
                        extra={"cluster": view.name, "problem": problem},
                    )
                else:
                    log.info("Rebuilt member cluster client", extra={"cluster": view.name})
            else:
                health = ClusterHealth()
                change.added.append(view.name)
                log.info("Registered member cluster", extra={"cluster": view.name})
            if problem is not None:
                health = ClusterHealth(healthy=False, since=self._clock(), last_error=problem)
            self._entries[view.name] = _Entry(member, view.resource_version, digest, problem, health, warning)
            self._start(view.name, member)

    def _build(
        self, identity: ClusterIdentity, view: SecretView, context: str | None, policy: CredentialPolicy
    ) -> tuple[ProbedMember, str | None, str | None]:
        """The member, or a BrokenMember and why; and a warning when it uses an opt-in insecure setting.
        Whatever the kubeconfig holds, this returns: a Secret never vanishes for an exception."""
        problem = view.problem
        if view.kubeconfig is not None:
            try:
                config = parse_kubeconfig(view.kubeconfig)
                member = self._factory(identity, config, context, policy)
            except KubeconfigError as exc:
                problem = str(exc)  # KubeconfigError messages never quote the kubeconfig
            except Exception as exc:  # the factory failed some other way: its message may quote the input
                problem = f"unusable kubeconfig ({type(exc).__name__})"
            else:
                return member, None, self._opt_in_warning(view.name, config, context)
        problem = problem or "unusable kubeconfig"
        log.warning("Member cluster Secret unusable", extra={"cluster": view.name, "problem": problem})
        return BrokenMember(identity, problem), problem, None

    @staticmethod
    def _opt_in_warning(name: str, config: dict[str, Any], context: str | None) -> str | None:
        try:
            used = opt_ins_used(config, context)
        except KubeconfigError:
            return None
        if not used:
            return None
        warning = f"uses {' and '.join(used)} (allowed by the Secret's opt-in annotation)"
        log.warning(
            "Member cluster Secret opts into an insecure setting", extra={"cluster": name, "problem": warning}
        )
        return warning

    def _remove(self, name: str, change: RegistryChange) -> None:
        entry = self._entries.pop(name)
        entry.member.close()
        change.removed.append(name)
        log.info("Removed member cluster", extra={"cluster": name})

    def close(self) -> None:
        with self._lock:
            for name in list(self._entries):
                self._remove(name, RegistryChange())

    # --- reading ---------------------------------------------------------------------------------

    def _entry(self, name: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(name)
        if entry is None:
            raise ClusterUnreachableError(name, "no longer registered")
        return entry

    def members(self) -> dict[str, MemberCluster]:
        """Every registered cluster by name, as the reconcile uses them."""
        with self._lock:
            return {name: RegisteredMember(self, name) for name in sorted(self._entries)}

    def identities(self) -> dict[str, ClusterIdentity]:
        with self._lock:
            return {name: e.member.identity for name, e in sorted(self._entries.items())}

    def problems(self) -> dict[str, str]:
        """Clusters whose Secret cannot be used, with why (no Secret contents)."""
        with self._lock:
            return {name: e.problem for name, e in sorted(self._entries.items()) if e.problem}

    def warnings(self) -> dict[str, str]:
        """Usable clusters whose kubeconfig uses an opt-in insecure setting (insecure-skip-tls-verify,
        proxy-url), with which: for an Event or a status note."""
        with self._lock:
            return {name: e.warning for name, e in sorted(self._entries.items()) if e.warning}

    def health(self, name: str) -> ClusterHealth | None:
        with self._lock:
            entry = self._entries.get(name)
            return None if entry is None else ClusterHealth(**vars(entry.health))

    # --- probing ---------------------------------------------------------------------------------

    def probe(self, name: str) -> bool:
        """Probe one cluster now and record the result."""
        entry = self._entry(name)
        try:
            ok = entry.member.probe()
            error = getattr(entry.member, "last_probe_error", None) or (entry.problem if not ok else None)
        except Exception as exc:  # a probe must never take the registry down
            ok, error = False, f"probe failed: {type(exc).__name__}"
        self._record(name, entry, ok, error)
        return ok

    def _record(self, name: str, entry: _Entry, ok: bool, error: str | None) -> None:
        now = self._clock()
        with self._lock:
            health = entry.health
            if health.healthy is not ok:
                if ok:
                    log.info("Member cluster became healthy", extra={"cluster": name})
                else:
                    log.warning("Member cluster became unhealthy", extra={"cluster": name, "error": error})
                health.healthy, health.since = ok, now
            health.last_probe = now
            health.consecutive_failures = 0 if ok else health.consecutive_failures + 1
            health.last_error = None if ok else (error or "probe failed")

    def probe_all(self) -> dict[str, ClusterHealth]:
        """Probe every cluster in parallel; one slow cluster costs its own timeout, not everyone's."""
        with self._lock:
            names = sorted(self._entries)
        if names:
            with ThreadPoolExecutor(max_workers=min(self._max_probe_workers, len(names))) as pool:
                list(pool.map(self._probe_quietly, names))
        with self._lock:
            return {n: ClusterHealth(**vars(e.health)) for n, e in sorted(self._entries.items())}

    def _probe_quietly(self, name: str) -> None:
        with contextlib.suppress(ClusterUnreachableError):  # removed while probing
            self.probe(name)
