"""Prometheus metrics of the controller: what an operator needs to see that it works and where it hurts.

One ``Metrics`` object per process, on its own registry (not prometheus_client's global one) so tests
can build as many as they like and the webhook's metrics never mix with the controller's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from controller.planning.observation import ClusterObservation
from controller.planning.plan import Observed
from controller.ports import ClusterIdentity, MemberCluster
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA

__all__ = ["CONTENT_TYPE_LATEST", "Metrics", "TimedMember"]

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconciles = Counter(
            "fhpa_reconciles",
            "Reconciles finished, by object kind and result.",
            ["kind", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "fhpa_reconcile_errors", "Reconciles that ended in an error, by kind.", ["kind"], registry=r
        )
        self.reconcile_seconds = Histogram(
            "fhpa_reconcile_duration_seconds",
            "Time of one reconcile.",
            ["kind"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.actions = Counter(
            "fhpa_member_actions",
            "Member-cluster actions, by kind and result.",
            ["action", "result"],
            registry=r,
        )
        self.member_latency = Histogram(
            "fhpa_member_api_latency_seconds",
            "Latency of member-cluster API operations.",
            ["cluster", "operation"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge("fhpa_workqueue_depth", "Keys ready in the work queue.", registry=r)
        self.leader = Gauge("fhpa_leader", "1 while this process holds the leader Lease.", registry=r)
        self.watch_relists = Counter(
            "fhpa_watch_relists",
            "Lists after a watch expired (410 Gone), by resource.",
            ["resource"],
            registry=r,
        )
        self.member_events = Counter(
            "fhpa_member_events",
            "Member-cluster changes that enqueued FederatedHPAs (event-driven reconcile), by resource.",
            ["resource"],
            registry=r,
        )

    def on_action(self, kind: str, cluster: str, ok: bool) -> None:
        """The executor's ActionHook."""
        self.actions.labels(action=kind, result="success" if ok else "failure").inc()

    def set_queue_depth(self, depth: int) -> None:
        self.queue_depth.set(depth)

    @contextmanager
    def time_member(self, cluster: str, operation: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.member_latency.labels(cluster=cluster, operation=operation).observe(
                time.perf_counter() - start
            )

    def render(self) -> bytes:
        return generate_latest(self.registry)


class TimedMember:
    """Wraps a MemberCluster so every call's latency lands in ``fhpa_member_api_latency_seconds``."""

    def __init__(self, inner: MemberCluster, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    @property
    def identity(self) -> ClusterIdentity:
        return self._inner.identity

    def probe(self) -> bool:
        with self._metrics.time_member(self._inner.identity.name, "probe"):
            return self._inner.probe()

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        with self._metrics.time_member(self._inner.identity.name, "observe"):
            return self._inner.observe(fhpa)

    def apply_hpa(
        self,
        fhpa: FederatedHPA,
        spec: dict[str, object],
        observed: Observed | None = None,
        decision: str | None = None,
    ) -> None:
        with self._metrics.time_member(self._inner.identity.name, "apply_hpa"):
            self._inner.apply_hpa(fhpa, spec, observed=observed, decision=decision)

    def delete_hpa(self, fhpa: FederatedHPA, observed: Observed | None = None) -> None:
        with self._metrics.time_member(self._inner.identity.name, "delete_hpa"):
            self._inner.delete_hpa(fhpa, observed=observed)

    def scale_workload(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        replicas: int,
        observed: Observed | None = None,
    ) -> None:
        with self._metrics.time_member(self._inner.identity.name, "scale"):
            self._inner.scale_workload(namespace, target, replicas, observed=observed)
