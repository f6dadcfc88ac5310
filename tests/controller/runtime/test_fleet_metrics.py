"""The fleet metrics (issue 15 item 5): member health, failovers and rejoins, assignment moves, cron fires
and cleanup actions, each shown by what the controller does, and an outage end to end through the
manager (FakeKube members, the real planner and executor)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from controller.cron_controller import CronController
from controller.executor import ExecutionResult
from controller.finalizer import CleanupResult
from controller.planning.fleet import FAILED_OVER
from controller.planning.plan import Plan
from controller.runtime.metrics import Metrics, max_moves
from fhpa_api.models import ClusterStatus, CronFederatedHPA, FederatedHPA, FederatedHPAStatus
from tests.support.fakekube import FakeKube
from tests.support.fakes import FakeControlPlane
from tests.support.manager_world import FHPA, HPA, fhpa
from tests.support.waiting import wait_for


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


@dataclass
class Health:
    healthy: bool
    consecutive_failures: int = 0


def test_member_health_gauges_follow_the_probes_and_drop_an_unregistered_cluster() -> None:
    metrics = Metrics(CollectorRegistry())
    metrics.observe_member_health({"a": Health(True), "b": Health(False, 3)})
    assert value(metrics, "fhpa_member_up", cluster="a") == 1
    assert value(metrics, "fhpa_member_up", cluster="b") == 0
    assert value(metrics, "fhpa_member_probe_failures", cluster="b") == 3
    metrics.observe_member_health({"a": Health(True)})
    assert value(metrics, "fhpa_member_up", cluster="b") is None
    assert value(metrics, "fhpa_member_probe_failures", cluster="b") is None


def test_every_series_of_a_removed_member_goes_with_it() -> None:
    """N15: latency, failover, rejoin, move and cleanup series of a member that left stayed forever."""
    metrics = Metrics(CollectorRegistry())
    metrics.observe_member_health({"a": Health(True), "b": Health(True)})
    for cluster in ("a", "b"):
        with metrics.time_member(cluster, "observe"):
            pass
        metrics.failovers.labels(cluster=cluster, object_namespace="default").inc()
        metrics.rejoins.labels(cluster=cluster, object_namespace="default").inc()
        metrics.assignment_moved.labels(cluster=cluster, direction="in").inc(2)
        metrics.cleanups.labels(cluster=cluster, result="removed").inc()
    metrics.observe_member_health({"a": Health(True)})
    text = metrics.render().decode()
    assert 'cluster="b"' not in text
    assert value(metrics, "fhpa_failovers_total", cluster="a", object_namespace="default") == 1
    assert value(metrics, "fhpa_member_api_latency_seconds_count", cluster="a", operation="observe") == 1


def row(name: str, max_replicas: int | None, state: str | None = None) -> ClusterStatus:
    return ClusterStatus(name=name, min_replicas=1, max_replicas=max_replicas, state=state)


def obj(rows: list[ClusterStatus] | None) -> FederatedHPA:
    fhpa_obj = FederatedHPA.model_validate(
        {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2,
                "maxReplicas": 10,
            },
        }
    )
    if rows is not None:
        fhpa_obj.status = FederatedHPAStatus(clusters=rows)
    return fhpa_obj


def a_pass(
    metrics: Metrics, before: list[ClusterStatus] | None, after: list[ClusterStatus], *, stored: bool = True
) -> None:
    status = FederatedHPAStatus(clusters=after)
    result = ExecutionResult(updated=obj(after) if stored else None)
    metrics.on_pass(obj(before), Plan(status=status), result)


def test_a_failover_and_a_rejoin_are_counted_once_per_stored_transition() -> None:
    metrics = Metrics(CollectorRegistry())
    steady = [row("a", 5), row("b", 5)]
    failed = [row("a", 10), row("b", None, FAILED_OVER)]
    a_pass(metrics, steady, failed, stored=False)  # the status write failed: the next pass redoes it
    assert value(metrics, "fhpa_failovers_total", cluster="b", object_namespace="shop") is None
    a_pass(metrics, steady, failed)
    a_pass(metrics, failed, failed)  # still out: no new failover
    assert value(metrics, "fhpa_failovers_total", cluster="b", object_namespace="shop") == 1
    assert value(metrics, "fhpa_rejoins_total", cluster="b", object_namespace="shop") is None
    a_pass(metrics, failed, [row("a", 8), row("b", 2)])
    assert value(metrics, "fhpa_rejoins_total", cluster="b", object_namespace="shop") == 1
    # the failover moved b's 5 to a, the rejoin 2 back
    assert value(metrics, "fhpa_assignment_moved_replicas_total", cluster="a", direction="in") == 5
    assert value(metrics, "fhpa_assignment_moved_replicas_total", cluster="b", direction="out") == 5
    assert value(metrics, "fhpa_assignment_moved_replicas_total", cluster="a", direction="out") == 2
    assert value(metrics, "fhpa_assignment_moved_replicas_total", cluster="b", direction="in") == 2


def test_a_move_needs_one_cluster_to_lose_what_another_gains() -> None:
    assert max_moves({}, {"a": row("a", 5)}) == {}  # the first assignment moves nothing
    assert max_moves({"a": row("a", 5), "b": row("b", 5)}, {"a": row("a", 6), "b": row("b", 6)}) == {}
    moved = max_moves({"a": row("a", 5), "b": row("b", 5)}, {"a": row("a", 7), "c": row("c", 1)})
    assert moved == {"a": 2, "b": -5, "c": 1}  # b unregistered: its 5 went to a and c


def test_cron_fires_are_counted_by_result() -> None:
    metrics = Metrics(CollectorRegistry())
    cp = FakeControlPlane()
    cp.workloads[("shop", "Deployment", "web")] = 1
    rules = [
        {"name": "ok", "schedule": "3 * * * *", "targetReplicas": 5},
        {"name": "gone", "schedule": "3 * * * *", "targetReplicas": 5},
    ]
    for name, rule, target in (("ok", rules[0], "web"), ("gone", rules[1], "missing")):
        cp.add(
            CronFederatedHPA.model_validate(
                {
                    "metadata": {
                        "name": name,
                        "namespace": "shop",
                        "creationTimestamp": "2026-06-01T09:00:00Z",
                    },
                    "spec": {
                        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                        "rules": [{**rule, "maxDelaySeconds": 120}],
                    },
                }
            )
        )
    ctl = CronController(cp, on_fire=metrics.on_cron_fire)
    ctl.reconcile("shop", "ok", datetime(2026, 6, 1, 9, 3, tzinfo=UTC))
    ctl.reconcile("shop", "gone", datetime(2026, 6, 1, 9, 3, tzinfo=UTC))
    ctl.reconcile("shop", "ok", datetime(2026, 6, 1, 11, 6, tzinfo=UTC))  # 11:03 past its window
    assert value(metrics, "fhpa_cron_fires_total", object_namespace="shop", result="succeeded") == 1
    assert value(metrics, "fhpa_cron_fires_total", object_namespace="shop", result="failed") == 1
    assert value(metrics, "fhpa_cron_fires_total", object_namespace="shop", result="missed") == 1


def test_cleanup_actions_by_cluster_and_result() -> None:
    metrics = Metrics(CollectorRegistry())
    metrics.on_cleanup(CleanupResult(removed=["a"], failed={"b": "unreachable"}))
    metrics.on_cleanup(CleanupResult(removed=[], failed={"b": "unreachable"}, released=True))
    assert value(metrics, "fhpa_cleanup_actions_total", cluster="a", result="removed") == 1
    assert value(metrics, "fhpa_cleanup_actions_total", cluster="b", result="failed") == 1
    assert value(metrics, "fhpa_cleanup_actions_total", cluster="b", result="abandoned") == 1


def test_a_member_outage_shows_on_metrics_end_to_end(world: dict[str, Any]) -> None:
    cp: FakeKube = world["cp"]
    members: dict[str, FakeKube] = world["members"]
    metrics: Metrics = world["manager"].metrics
    cp.store.create(FHPA, fhpa())
    wait_for(lambda: all(f.store.find(HPA, "default", "web") for f in members.values()), what="HPAs")
    wait_for(lambda: value(metrics, "fhpa_member_up", cluster="member2") == 1, what="member2 probed")

    members["member2"].vanish()
    wait_for(lambda: value(metrics, "fhpa_member_up", cluster="member2") == 0, what="member2 down")
    wait_for(
        lambda: value(metrics, "fhpa_failovers_total", cluster="member2", object_namespace="default") == 1,
        timeout=30,
        what="the failover counted",
    )
    failures = value(metrics, "fhpa_member_probe_failures", cluster="member2")
    assert failures is not None and failures >= 1
    moved_in = value(metrics, "fhpa_assignment_moved_replicas_total", cluster="member1", direction="in")
    assert moved_in == 5  # member2's half of max 10

    members["member2"].reappear()
    wait_for(
        lambda: value(metrics, "fhpa_rejoins_total", cluster="member2", object_namespace="default") == 1,
        timeout=30,
        what="the rejoin counted",
    )
    wait_for(  # the probe loop runs on its own period: it may report after the reconcile that rejoined
        lambda: (
            value(metrics, "fhpa_member_up", cluster="member2") == 1
            and value(metrics, "fhpa_member_probe_failures", cluster="member2") == 0
        ),
        what="member2 up again",
    )
    assert value(metrics, "fhpa_failovers_total", cluster="member2", object_namespace="default") == 1

    cp.store.delete(FHPA, "default", "web")
    wait_for(
        lambda: value(metrics, "fhpa_cleanup_actions_total", cluster="member2", result="removed") == 1,
        what="the cleanup counted",
    )
