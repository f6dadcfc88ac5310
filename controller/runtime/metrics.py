"""Prometheus metrics of the controller: what an operator needs to see that it works and where it hurts.

One ``Metrics`` object per process, on its own registry (not prometheus_client's global one) so tests
can build as many as they like and the webhook's metrics never mix with the controller's.

The fleet: member health from the probe loop, failovers, rejoins and assignment moves from the
status a reconcile stored, cron fires and cleanup actions. Their label sets are bounded by the fleet,
never by the objects: ``cluster`` (the registered members), ``object_namespace`` (the namespace of the
FederatedHPA or CronFederatedHPA) and a fixed ``result`` or ``direction``. A label per FederatedHPA or
per cron rule would grow with every object users create (a thousand FederatedHPAs on twenty clusters is
twenty thousand series per counter); the object itself is in its Events and ``fhpa explain``. The label
is not called ``namespace`` because Prometheus' Kubernetes discovery already puts the controller pod's
namespace there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from controller.executor import ExecutionResult
from controller.finalizer import CleanupResult
from controller.member_layer import MemberLayer
from controller.planning.fleet import FAILED_OVER
from controller.planning.plan import Plan
from controller.ports import MemberCluster
from fhpa_api.models import ClusterStatus, FederatedHPA

__all__ = ["CONTENT_TYPE_LATEST", "Metrics", "TimedMember"]

_T = TypeVar("_T")

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _counter(registry: CollectorRegistry, name: str, doc: str, *labels: str) -> Counter:
    return Counter(name, doc, labels, registry=registry)


def _gauge(registry: CollectorRegistry, name: str, doc: str, *labels: str) -> Gauge:
    return Gauge(name, doc, labels, registry=registry)


def _histogram(registry: CollectorRegistry, name: str, doc: str, *labels: str) -> Histogram:
    """A latency histogram: every one of the controller's histograms times requests or reconciles."""
    return Histogram(name, doc, labels, buckets=LATENCY_BUCKETS, registry=registry)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconciles = _counter(
            r, "fhpa_reconciles", "Reconciles finished, by object kind and result.", "kind", "result"
        )
        self.reconcile_errors = _counter(
            r, "fhpa_reconcile_errors", "Reconciles that ended in an error, by kind.", "kind"
        )
        self.reconcile_seconds = _histogram(
            r, "fhpa_reconcile_duration_seconds", "Time of one reconcile.", "kind"
        )
        self.actions = _counter(
            r, "fhpa_member_actions", "Member-cluster actions, by kind and result.", "action", "result"
        )
        self.member_latency = _histogram(
            r,
            "fhpa_member_api_latency_seconds",
            "Latency of member-cluster API operations.",
            "cluster",
            "operation",
        )
        self.queue_depth = _gauge(r, "fhpa_workqueue_depth", "Keys ready in the work queue.")
        self.leader = _gauge(r, "fhpa_leader", "1 while this process holds the leader Lease.")
        self.watch_relists = _counter(
            r, "fhpa_watch_relists", "Lists after a watch expired (410 Gone), by resource.", "resource"
        )
        self.member_events = _counter(
            r,
            "fhpa_member_events",
            "Member-cluster changes that enqueued FederatedHPAs (event-driven reconcile), by resource.",
            "resource",
        )
        self._fleet_metrics(r)

    def _fleet_metrics(self, r: CollectorRegistry) -> None:
        """What an operator needs to see a member outage and what the controller did about it."""
        self._probed: set[str] = set()  # the clusters with health series (the last probe's)
        self.member_up = _gauge(
            r,
            "fhpa_member_up",
            "1 while the member cluster answers its health probe, 0 while it does not.",
            "cluster",
        )
        self.member_probe_failures = _gauge(
            r,
            "fhpa_member_probe_failures",
            "Consecutive failed health probes of the member cluster (0 once one succeeds).",
            "cluster",
        )
        self.failovers = _counter(
            r,
            "fhpa_failovers",
            "FederatedHPAs that failed a member cluster over (its share moved to the others), by cluster "
            "and the FederatedHPA's namespace.",
            "cluster",
            "object_namespace",
        )
        self.rejoins = _counter(
            r,
            "fhpa_rejoins",
            "FederatedHPAs that took a failed-over member cluster back, by cluster and namespace.",
            "cluster",
            "object_namespace",
        )
        self.assignment_moved = _counter(
            r,
            "fhpa_assignment_moved_replicas",
            "maxReplicas moved between member clusters by the assignment: a cluster's max lowered "
            "(direction out) or raised (in) in a pass where another cluster's went the other way.",
            "cluster",
            "direction",
        )
        self.cron_fires = _counter(
            r,
            "fhpa_cron_fires",
            "CronFederatedHPA rule executions, by result (succeeded, failed, missed: past its window) and "
            "the CronFederatedHPA's namespace.",
            "object_namespace",
            "result",
        )
        self.cleanups = _counter(
            r,
            "fhpa_cleanup_actions",
            "Member HPAs removed for deleted FederatedHPAs, by cluster and result (removed; failed: "
            "retried; abandoned: left behind after the give-up time).",
            "cluster",
            "result",
        )

    def observe_member_health(self, health: Mapping[str, Any]) -> None:
        """The probe loop's results (registry.probe_all: ``healthy``, ``consecutive_failures`` per
        cluster); a cluster no longer registered loses its series rather than reporting a stale value."""
        for name, h in health.items():
            self.member_up.labels(cluster=name).set(1 if getattr(h, "healthy", False) else 0)
            failures = getattr(h, "consecutive_failures", 0)
            self.member_probe_failures.labels(cluster=name).set(failures)
        for cluster in self._probed - set(health):
            self.forget_cluster(cluster)
        self._probed = set(health)

    def forget_cluster(self, cluster: str) -> None:
        """Drop every series labelled with ``cluster`` (it is no longer registered): with members joining
        and leaving, series kept for each one ever seen would grow without bound, and a removed member
        would still show in dashboards as if it were there."""
        for metric in (
            self.member_up,
            self.member_probe_failures,
            self.member_latency,
            self.failovers,
            self.rejoins,
            self.assignment_moved,
            self.cleanups,
        ):
            position = list(metric._labelnames).index("cluster")
            for labels in [k for k in list(metric._metrics) if k[position] == cluster]:
                metric.remove(*labels)

    def on_pass(self, fhpa: FederatedHPA, plan: Plan, result: ExecutionResult) -> None:
        """A reconcile's outcome (reconcile.PassHook): failovers, rejoins and moves, counted from the
        stored status against the one the pass started from. Only a status that was written counts: the
        status is the planner's memory, so a pass whose write failed is planned again and counted then
        (once, however many passes it takes)."""
        if result.updated is None:
            return
        before = {row.name: row for row in (fhpa.status.clusters if fhpa.status else None) or []}
        after = {
            row.name: row for row in (result.updated.status.clusters if result.updated.status else None) or []
        }
        namespace = fhpa.metadata.namespace or "default"
        for name, row in after.items():
            was_out = name in before and before[name].state == FAILED_OVER
            if row.state == FAILED_OVER and not was_out:
                self.failovers.labels(cluster=name, object_namespace=namespace).inc()
            elif was_out and row.state != FAILED_OVER:
                self.rejoins.labels(cluster=name, object_namespace=namespace).inc()
        for name, delta in max_moves(before, after).items():
            direction = "in" if delta > 0 else "out"
            self.assignment_moved.labels(cluster=name, direction=direction).inc(abs(delta))

    def on_cron_fire(self, namespace: str, result: str) -> None:
        """The CronController's FireHook: one rule execution and its result."""
        self.cron_fires.labels(object_namespace=namespace, result=result).inc()

    def on_cleanup(self, cleaned: CleanupResult) -> None:
        """One finalizer pass: each cluster cleaned, or not (abandoned when the finalizer went anyway)."""
        for cluster in cleaned.removed:
            self.cleanups.labels(cluster=cluster, result="removed").inc()
        for cluster in cleaned.failed:
            self.cleanups.labels(cluster=cluster, result="abandoned" if cleaned.released else "failed").inc()

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


def _max(row: ClusterStatus | None) -> int:
    """A cluster's assigned max as a status row records it; a failed-over or absent cluster holds 0."""
    if row is None or row.state == FAILED_OVER:
        return 0
    return row.max_replicas or 0


def max_moves(before: Mapping[str, ClusterStatus], after: Mapping[str, ClusterStatus]) -> dict[str, int]:
    """Each cluster's change of max in a pass that moved max between clusters (some rose, some fell).

    A pass where every change goes one way (the first assignment, a new F.max) moved nothing from one
    cluster to another and counts nothing; nor does a first pass (no status yet).
    """
    if not before:
        return {}
    deltas = {n: _max(after.get(n)) - _max(before.get(n)) for n in sorted(set(before) | set(after))}
    deltas = {n: d for n, d in deltas.items() if d}
    if not any(d > 0 for d in deltas.values()) or not any(d < 0 for d in deltas.values()):
        return {}
    return deltas


class TimedMember(MemberLayer):
    """A member whose every call's latency lands in ``fhpa_member_api_latency_seconds``."""

    def __init__(self, inner: MemberCluster, metrics: Metrics) -> None:
        super().__init__(inner)
        self._metrics = metrics

    def around(self, operation: str, call: Callable[[], _T]) -> _T:
        with self._metrics.time_member(self.identity.name, operation):
            return call()
