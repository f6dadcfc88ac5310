"""Leader election on a coordination.k8s.io/v1 Lease, so that of several controller replicas one acts.

The rules are client-go's leaderelection, which every Kubernetes controller follows, so our Lease
interoperates with the tooling operators already use to inspect one:

- a candidate takes the Lease when it is free (no holder) or when its record has not changed for
  ``lease_duration`` seconds *by the candidate's own clock* (it remembers when it last saw the record
  change, so clocks on different machines never need to agree);
- every write is a PUT carrying the resourceVersion that was read, so two candidates racing for an
  expired Lease cannot both win: the second gets 409 and stays a follower;
- the leader renews every ``retry_period``; if it has not renewed successfully for ``renew_deadline``
  (shorter than ``lease_duration``) it stops acting at once, before anyone else can take over;
- on a clean shutdown the leader empties ``holderIdentity`` so a successor need not wait out the lease.

``is_leader()`` is what the work loop asks before every reconcile: true only while the last renewal is
younger than the renew deadline. ``contact_age()`` (since the API server last answered a Lease read,
leader or not) feeds readiness, and ``loop_age()`` (since the loop last turned) feeds liveness: a
standby that cannot reach the API is not ready, a loop that stopped turning is not alive.

One step is split in two, ``observe()`` (read and judge the Lease) and ``take()`` (write ourselves in),
so that controller.runtime.shard_elector can drive one elector per shard Lease and decide in between
whether to take a free shard at all; ``try_acquire_or_renew()`` is the two together, as client-go does.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from kubernetes.client import ApiClient, CoordinationV1Api
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaderConfig:
    namespace: str
    name: str = "federated-hpa-controller"
    identity: str = ""
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period_seconds < self.renew_deadline_seconds < self.lease_duration_seconds:
            raise ValueError(
                "leader election needs 0 < retry period < renew deadline < lease duration, got "
                f"{self.retry_period_seconds} / {self.renew_deadline_seconds} / {self.lease_duration_seconds}"
            )


@dataclass(frozen=True)
class LeaseState:
    """A Lease as one read judged it. ``live``: someone holds it and, unless that is us, its record
    changed within the lease duration by our clock (so it is not free for the taking)."""

    holder: str = ""
    live: bool = False
    annotations: Mapping[str, str] | None = None

    def held_by_other(self, identity: str) -> bool:
        return self.live and self.holder != identity


class Elector(Protocol):
    """What the manager asks of leader election, one Lease (LeaderElector) or one per shard
    (controller.runtime.shard_elector.ShardedElector)."""

    config: LeaderConfig
    identity: str

    def run(self, stop: threading.Event, on_lost: Callable[[], None] = ...) -> bool: ...

    def is_leader(self) -> bool:
        """Holds a Lease: the only one, or at least one shard."""
        ...

    def owns(self, obj: tuple[str, str] | None) -> bool:
        """May act on ``(namespace, name)`` (None: a chore of no object) now."""
        ...

    def contact_age(self) -> float: ...

    def loop_age(self) -> float: ...


def default_identity() -> str:
    """hostname (the pod name in a Deployment) plus a random suffix, unique per process."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def _micro_time(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseClient:
    """The three Lease calls leader election needs, as plain dicts (None when the Lease is absent)."""

    def __init__(self, api_client: ApiClient, request_timeout: tuple[float, float] = (5.0, 10.0)) -> None:
        # typed Any: with _preload_content=False the calls return the raw response, not a V1Lease
        self._api: Any = CoordinationV1Api(api_client)
        self._timeout = request_timeout

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            resp = self._api.read_namespaced_lease(
                name, namespace, _preload_content=False, _request_timeout=self._timeout
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return dict(json.loads(resp.data))

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = self._api.create_namespaced_lease(
            namespace, body, _preload_content=False, _request_timeout=self._timeout
        )
        return dict(json.loads(resp.data))

    def replace(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = self._api.replace_namespaced_lease(
            name, namespace, body, _preload_content=False, _request_timeout=self._timeout
        )
        return dict(json.loads(resp.data))


class LeaderElector:
    """Acquires, renews and releases one Lease; reports transitions through the two callbacks."""

    def __init__(
        self,
        client: LeaseClient,
        config: LeaderConfig,
        *,
        on_started_leading: Callable[[], None] = lambda: None,
        on_stopped_leading: Callable[[], None] = lambda: None,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        annotations: Mapping[str, str] | None = None,
        drop_annotations: tuple[str, ...] = (),
    ) -> None:
        """``annotations`` are written on every write of ours (a shard Lease records the shard count);
        ``drop_annotations`` are removed by every write of ours (a shard request is answered once)."""
        self.config = config
        self.identity = config.identity or default_identity()
        self._client = client
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._monotonic = monotonic
        self._wall = wall_clock
        self._lock = threading.Lock()
        self._leading = False
        self._last_renew = float("-inf")
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = float("-inf")
        self._rng = random.Random()
        self._last_contact = float("-inf")
        self._last_tick = monotonic()  # a loop that has not started yet is not a wedged one
        self._annotations = dict(annotations or {})
        self._drop = drop_annotations
        self._read: dict[str, Any] | None = None  # the Lease as observe() last read it (None: absent)
        self._read_at = float("-inf")  # when that read started: renewals count from there
        self._waiting_for: str | None = None  # the holder we last said we wait for (logged once each)

    # -- what the rest of the controller asks -------------------------------------------------------

    def is_leader(self) -> bool:
        with self._lock:
            return self._leading and self._monotonic() - self._last_renew < self.config.renew_deadline_seconds

    def holds(self) -> bool:
        """Our last write of the Lease is younger than the renew deadline (whoever drives the loop)."""
        with self._lock:
            return self._monotonic() - self._last_renew < self.config.renew_deadline_seconds

    def owns(self, obj: tuple[str, str] | None) -> bool:
        """One Lease for everything: every object (and every chore) is ours while we lead."""
        return self.is_leader()

    def contact_age(self) -> float:
        """Seconds since the API server last answered a Lease read (inf: never)."""
        with self._lock:
            return self._monotonic() - self._last_contact

    def loop_age(self) -> float:
        """Seconds since the election loop last completed a step (bounded by the request timeouts)."""
        with self._lock:
            return self._monotonic() - self._last_tick

    # -- the loop -----------------------------------------------------------------------------------

    def run(self, stop: threading.Event, on_lost: Callable[[], None] = lambda: None) -> bool:
        """Acquire, then renew until ``stop`` (returns True after releasing) or until the lease is lost
        (returns False: the caller must stop acting; controllers conventionally exit and restart).
        ``on_lost`` runs before ``on_stopped_leading`` when the Lease was lost, so the caller can tell a
        loss (abandon work at once) from a shutdown (let it finish)."""
        cfg = self.config
        while not stop.is_set():
            if self._attempt():
                break
            self._log_waiting()
            stop.wait(cfg.retry_period_seconds * (1 + self._rng.uniform(0, 0.2)))
        if stop.is_set():
            return True
        with self._lock:
            self._leading = True
        log.info("became leader", extra={"lease": f"{cfg.namespace}/{cfg.name}", "identity": self.identity})
        self._on_started()
        while not stop.wait(cfg.retry_period_seconds):
            self._attempt()
            with self._lock:
                lost = self._monotonic() - self._last_renew >= cfg.renew_deadline_seconds
            if lost:
                break
        with self._lock:
            self._leading = False
        if not stop.is_set():
            on_lost()
        self._on_stopped()
        if stop.is_set():
            self.release()
            return True
        log.error(
            "leader lease lost", extra={"lease": f"{cfg.namespace}/{cfg.name}", "identity": self.identity}
        )
        return False

    def _log_waiting(self) -> None:
        """A standby says once (and again when the holder changes) that it waits for the Lease."""
        spec = (self._read or {}).get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        if holder == self._waiting_for:
            return
        self._waiting_for = holder
        log.info(
            "standing by: waiting for the leader Lease",
            extra={
                "lease": f"{self.config.namespace}/{self.config.name}",
                "identity": self.identity,
                "holder": holder or "nobody (a write of ours conflicted or failed)",
            },
        )

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except (ApiException, Urllib3Error, OSError, ValueError) as exc:
            status = exc.status if isinstance(exc, ApiException) else type(exc).__name__
            log.info("lease attempt failed", extra={"lease": self.config.name, "error": str(status)})
            return False
        finally:
            with self._lock:
                self._last_tick = self._monotonic()

    # -- one step -----------------------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One read-then-write step; True when we hold the lease afterwards."""
        if self.observe().held_by_other(self.identity):
            return False  # held by someone else and not expired by our clock
        return self.take()

    def observe(self) -> LeaseState:
        """Read the Lease (one GET) and judge it by our clock; take() and hand_over() write over it."""
        cfg = self.config
        now_mono = self._monotonic()
        lease = self._client.get(cfg.namespace, cfg.name)
        with self._lock:
            self._last_contact = self._monotonic()
            self._read, self._read_at = lease, now_mono
        if lease is None:
            return LeaseState()
        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observe(spec, now_mono)
        holder = str(spec.get("holderIdentity") or "")
        duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration_seconds)
        live = bool(holder) and (holder == self.identity or now_mono < self._observed_at + duration)
        annotations = (lease.get("metadata") or {}).get("annotations") or {}
        return LeaseState(holder=holder, live=live, annotations=dict(annotations))

    def take(self) -> bool:
        """Write ourselves in as the holder over what observe() read: create the Lease when it was
        absent, else a PUT carrying the resourceVersion read (409: someone else wrote first, False).
        The caller has checked that the Lease is ours, free or expired."""
        cfg = self.config
        now_mono, lease = self._read_at, self._read
        now = _micro_time(self._wall())
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": self._metadata({"name": cfg.name, "namespace": cfg.namespace}),
                "spec": self._spec(now, now, 0),
            }
            try:
                created = self._client.create(cfg.namespace, body)
            except ApiException as exc:
                if exc.status == 409:
                    return False  # someone created it first
                raise
            self._observe(created.get("spec") or {}, now_mono)
            self._renewed(now_mono)
            self._read = created  # a hand-over later in the round writes over this version
            return True
        spec = lease.get("spec") or {}
        transitions = int(spec.get("leaseTransitions") or 0)
        if spec.get("holderIdentity") == self.identity:
            acquire = spec.get("acquireTime") or now
        else:
            acquire, transitions = now, transitions + 1
        written = self._write(lease, self._spec(acquire, now, transitions))
        if written is None:
            return False
        self._observe(written.get("spec") or {}, now_mono)
        self._renewed(now_mono)
        self._read = written
        return True

    def hand_over(self, successor: str) -> bool:
        """Write ``successor`` in as the holder of the Lease we hold (observe() read it). We stop
        holding it before the write, so our fence refuses writes from then on; the successor counts it
        held from its own next renewal. False when the write failed (the Lease then still names us and
        the next round renews it)."""
        with self._lock:
            self._last_renew = float("-inf")
        lease = self._read
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return False
        now = _micro_time(self._wall())
        spec = self._spec(now, now, 0)
        spec["holderIdentity"] = successor
        spec["leaseTransitions"] = int((lease.get("spec") or {}).get("leaseTransitions") or 0) + 1
        return self._write(lease, spec) is not None

    def ask(self, annotation: str, value: str) -> bool:
        """Set one annotation on the Lease as observe() read it, spec untouched (a request to its
        holder); False when someone wrote it since."""
        lease = self._read
        if lease is None:
            return False
        metadata = dict(lease.get("metadata") or {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}), annotation: value}
        body = {**lease, "metadata": metadata}
        try:
            self._client.replace(self.config.namespace, self.config.name, body)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def _write(self, lease: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any] | None:
        """PUT ``lease`` with ``spec`` and our annotations; None on a conflict."""
        body = {**lease, "metadata": self._metadata(dict(lease.get("metadata") or {})), "spec": spec}
        try:
            return self._client.replace(self.config.namespace, self.config.name, body)
        except ApiException as exc:
            if exc.status == 409:
                return None
            raise

    def _metadata(self, metadata: dict[str, Any]) -> dict[str, Any]:
        """``metadata`` with our annotations set and the answered ones removed (unchanged if none)."""
        existing = dict(metadata.get("annotations") or {})
        annotations = {k: v for k, v in existing.items() if k not in self._drop} | self._annotations
        if annotations != existing:
            metadata["annotations"] = annotations
        return metadata

    def release(self) -> None:
        """Give the lease up if we hold it, so a successor does not wait out the lease duration."""
        cfg = self.config
        try:
            lease = self._client.get(cfg.namespace, cfg.name)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            spec = dict(lease.get("spec") or {})
            spec.update(
                {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _micro_time(self._wall())}
            )
            lease["spec"] = spec
            self._client.replace(cfg.namespace, cfg.name, lease)
            log.info(
                "lease released", extra={"lease": f"{cfg.namespace}/{cfg.name}", "identity": self.identity}
            )
        except (ApiException, Urllib3Error, OSError) as exc:  # it expires by itself anyway
            log.warning("lease not released", extra={"lease": cfg.name, "error": type(exc).__name__})
        finally:
            with self._lock:
                self._leading = False
                self._last_renew = float("-inf")

    def _spec(self, acquire: str, renew: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.config.lease_duration_seconds)),
            "acquireTime": acquire,
            "renewTime": renew,
            "leaseTransitions": transitions,
        }

    def _observe(self, spec: dict[str, Any], now_mono: float) -> None:
        self._observed_spec = spec
        self._observed_at = now_mono

    def _renewed(self, now_mono: float) -> None:
        with self._lock:
            self._last_renew = now_mono
