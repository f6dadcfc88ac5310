"""A simulated member cluster: pod life cycle, the MemberCluster port, outages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import ClusterUnreachableError, NotOwnedError
from controller.planning.member_hpa import render_spec
from controller.ports import ClusterIdentity
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA
from simulator.clock import VirtualClock
from simulator.cluster import Pods, SimulatedCluster
from tests.support.writes import apply_hpa, scale

T0 = datetime(2026, 11, 23, tzinfo=UTC)
WEB = CrossVersionObjectReference(kind="Deployment", name="web", api_version="apps/v1")


def fhpa(uid: str = "u-1") -> FederatedHPA:
    return FederatedHPA.model_validate(
        {
            "metadata": {"name": "web", "namespace": "default", "uid": uid},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10},
        }
    )


def cluster(
    capacity: int = 5, startup: float = 30, replicas: int = 0
) -> tuple[SimulatedCluster, VirtualClock]:
    clock = VirtualClock(T0)
    c = SimulatedCluster(ClusterIdentity(name="m1"), clock, capacity, startup, WEB, replicas=replicas)
    return c, clock


def test_pods_start_after_the_delay_and_pend_beyond_capacity():
    pods = Pods(capacity=3, startup=VirtualClock(T0).at(30) - T0)
    pods.scale_to(5, T0)
    assert (pods.ready, pods.starting_count, pods.pending) == (0, 3, 2)
    pods.advance(VirtualClock(T0).at(29))
    assert pods.ready == 0
    pods.advance(VirtualClock(T0).at(30))
    assert (pods.ready, pods.starting_count, pods.pending) == (3, 0, 2)


def test_scale_down_removes_pending_then_starting_then_ready():
    clock = VirtualClock(T0)
    pods = Pods(capacity=4, startup=clock.at(30) - T0, ready=2)
    pods.scale_to(6, T0)  # 2 more start, 2 pend
    pods.scale_to(3, T0)  # drop the 2 pending and 1 starting
    assert (pods.ready, pods.starting_count, pods.pending) == (2, 1, 0)
    pods.scale_to(1, T0)
    assert (pods.ready, pods.starting_count, pods.pending) == (1, 0, 0)


def test_freed_room_goes_to_pending_pods():
    clock = VirtualClock(T0)
    pods = Pods(capacity=2, startup=clock.at(10) - T0, ready=2, pending=1)
    pods.scale_to(2, T0)  # the pending pod is removed first
    assert pods.pending == 0
    pods.pending = 1
    pods.ready = 1
    pods.advance(T0)
    assert pods.starting_count == 1 and pods.pending == 0


def test_observe_reports_counts_capacity_and_our_hpa():
    c, _ = cluster(capacity=5, replicas=3)
    apply_hpa(c, fhpa(), render_spec(fhpa(), 2, 8))
    seen = c.observe(fhpa())
    assert (seen.current_replicas, seen.ready_replicas, seen.available_replicas) == (3, 3, 5)
    assert seen.hpa is not None and seen.hpa.owned
    assert (seen.hpa.min_replicas, seen.hpa.max_replicas) == (2, 8)
    assert seen.hpa.template_digest is not None
    assert c.api_writes == 1


def test_someone_elses_hpa_is_reported_not_owned_and_never_overwritten():
    c, _ = cluster()
    apply_hpa(c, fhpa("other"), render_spec(fhpa("other"), 1, 3))
    seen = c.observe(fhpa("mine"))
    assert seen.hpa is not None and not seen.hpa.owned
    with pytest.raises(NotOwnedError):
        apply_hpa(c, fhpa("mine"), render_spec(fhpa("mine"), 1, 5))


def test_outage_makes_the_port_unreachable_and_counts_raises():
    c, _ = cluster(replicas=2)
    apply_hpa(c, fhpa(), render_spec(fhpa(), 1, 4))
    c.set_down(True)
    assert not c.probe()
    with pytest.raises(ClusterUnreachableError):
        c.observe(fhpa())
    with pytest.raises(ClusterUnreachableError):
        apply_hpa(c, fhpa(), render_spec(fhpa(), 1, 9))
    with pytest.raises(ClusterUnreachableError):
        scale(c, fhpa(), 1)  # lowering is not counted as giving replicas
    assert c.raises_while_down == 1
    assert c.sync_hpas(T0, 500) == []  # the controller-manager is down too
    c.set_down(False)
    assert c.observe(fhpa()).ready_replicas == 2  # the pods survived


def test_a_missing_workload_is_reported_and_cannot_be_scaled():
    clock = VirtualClock(T0)
    c = SimulatedCluster(ClusterIdentity(name="m2"), clock, 5, 30, workload=None)
    assert not c.observe(fhpa()).workload_found
    with pytest.raises(Exception, match="not found"):
        scale(c, fhpa(), 2)


def test_member_hpa_scales_the_workload_on_sync():
    c, clock = cluster(capacity=50, replicas=4)
    apply_hpa(c, fhpa(), render_spec(fhpa(), 1, 20))
    c.sync_hpas(clock.now(), 1600)  # 160% against 80%: 8 replicas
    assert c.replicas == 8
    assert c.pods.starting_count == 4


@settings(max_examples=200, deadline=None)
@given(
    capacity=st.integers(0, 30),
    moves=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 120)), min_size=1, max_size=12),
)
def test_pods_never_exceed_capacity_and_always_add_up(capacity, moves):
    """Whatever the scale calls and the time between them: scheduled <= capacity, counts sum to replicas."""
    clock = VirtualClock(T0)
    pods = Pods(capacity=capacity, startup=clock.at(30) - T0)
    elapsed = 0
    for replicas, wait in moves:
        elapsed += wait
        now = clock.at(elapsed)
        pods.advance(now)
        pods.scale_to(replicas, now)
        assert pods.total == replicas
        assert pods.scheduled <= capacity
        assert pods.pending == 0 or pods.scheduled == capacity  # nothing waits while there is room
