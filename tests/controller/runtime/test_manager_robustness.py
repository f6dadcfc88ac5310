"""The manager under adverse conditions: a control plane failing at start-up, an object deleted while
its key waits in the queue, a member Secret with a broken kubeconfig, and reconcile log lines that
always name the object."""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from typing import Any

import pytest
from kubernetes import config as kube_config

import fhpa_logs as logs
from controller.kube.control_plane import KubeControlPlane
from controller.planning.planner import PlannerConfig
from controller.runtime.controller import reconciling
from controller.runtime.fleet import FleetManager
from controller.runtime.leader import LeaderConfig, LeaseClient
from controller.runtime.manager import ManagerConfig
from fhpa_api import FEDERATED_HPA
from tests.support.fakekube import FakeKube
from tests.support.manager_world import FHPA, HPA, SYSTEM, control_plane_fake, fhpa
from tests.support.members import MEMBER_LABEL, member_cluster, member_secret, registry
from tests.support.waiting import wait_for


def make_manager(cp: FakeKube, *, leader_elect: bool = False) -> FleetManager:
    api = kube_config.new_client_from_config_dict(cp.kubeconfig())
    lease = LeaderConfig(
        namespace=SYSTEM, lease_duration_seconds=3, renew_deadline_seconds=2, retry_period_seconds=0.1
    )
    return FleetManager(
        KubeControlPlane(api, request_timeout=(1.0, 1.0)),
        registry(SYSTEM),
        ManagerConfig(
            namespace=SYSTEM,
            leader_elect=leader_elect,
            lease=lease if leader_elect else None,
            planner=PlannerConfig(failover_grace_seconds=1, optimization_period_seconds=2),
            resync_seconds=1,
            probe_seconds=0.5,
            watch_timeout_seconds=5,
            api_ping_seconds=0.1,
        ),
        lease_client=LeaseClient(api, request_timeout=(1.0, 1.0)) if leader_elect else None,
    )


def test_a_control_plane_failing_at_start_up_is_retried_not_fatal() -> None:
    cp = control_plane_fake()
    member = member_cluster()
    cp.store.create("secrets", member_secret("member1", member, SYSTEM))
    cp.store.create(FHPA, fhpa())
    cp.faults.add("GET", "leases", stall=3)  # longer than the client's read timeout
    cp.faults.add(".*", ".*", status=500, times=20)
    cp.faults.add("GET", ".*", stall=3, times=3)
    manager = make_manager(cp, leader_elect=True)
    stop = threading.Event()
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(manager.run(stop)), daemon=True)
    thread.start()
    try:
        wait_for(lambda: not cp.faults.pending, timeout=30, what="every injected fault served")
        assert thread.is_alive() and result == []
        wait_for(lambda: manager.ready()[0], timeout=30, what="leading and synced after the errors")
        wait_for(lambda: member.store.find(HPA, "default", "web"), timeout=30, what="the member HPA")
    finally:
        stop.set()
        thread.join(10)
        cp.stop()
        member.stop()
    assert result == [0]


def test_an_object_deleted_while_queued_is_dropped_quietly() -> None:
    cp = control_plane_fake()
    member = member_cluster()
    try:
        cp.store.create("secrets", member_secret("member1", member, SYSTEM))
        cp.store.create(FHPA, fhpa())
        manager = make_manager(cp)  # not running: the test plays the worker
        key = (FEDERATED_HPA, "default", "web")
        manager.queue.add(key)
        cp.store.delete(FHPA, "default", "web")  # no finalizer yet: gone at once
        assert manager.queue.get(timeout=1) == key
        manager._process(manager.queue, key)
        manager.queue.done(key)
        text = manager.metrics.render().decode()
        assert 'fhpa_reconciles_total{kind="FederatedHPA",result="success"} 1.0' in text
        assert 'result="error"' not in text
        assert len(manager.queue) == 0  # neither retried nor requeued
        assert member.store.find(HPA, "default", "web") is None
    finally:
        cp.stop()
        member.stop()


def broken_secret(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": SYSTEM, "labels": {MEMBER_LABEL: "true"}},
        "type": "Opaque",
        "data": {"kubeconfig": base64.b64encode(b"clusters: [this is: not a kubeconfig").decode()},
    }


def test_a_broken_kubeconfig_is_an_unhealthy_member_and_every_reconcile_line_names_the_object(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    cp = control_plane_fake()
    members = {"member1": member_cluster(), "member2": member_cluster()}
    cp.store.create("secrets", member_secret("member1", members["member1"], SYSTEM))
    cp.store.create("secrets", broken_secret("member2"))
    manager = make_manager(cp)
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    try:
        cp.store.create(FHPA, fhpa())
        wait_for(lambda: members["member1"].store.find(HPA, "default", "web"), what="member1's HPA")
        wait_for(lambda: manager.registry.probe_all()["member2"].healthy is False, what="member2 unhealthy")
        assert thread.is_alive() and manager.alive()[0]
        assert members["member2"].store.find(HPA, "default", "web") is None
    finally:
        stop.set()
        thread.join(10)
        cp.stop()
        for fake in members.values():
            fake.stop()
    assert "clusters: [" not in caplog.text  # the kubeconfig's content is never logged
    in_workers = [r for r in caplog.records if (r.threadName or "").startswith("worker-")]
    messages = {r.getMessage() for r in in_workers}
    assert "cluster not observable" in messages  # a line whose caller passes no object
    for record in in_workers:
        assert getattr(record, "reconcile_object", None) == "default/web", record.getMessage()
        assert getattr(record, "reconcile_kind", None) == FEDERATED_HPA


def test_the_reconcile_context_reaches_the_json_line_and_ends_with_the_block() -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    try:
        logs.configure("debug", "json", stream)
        with reconciling(FEDERATED_HPA, "team-a", "web"):
            logging.getLogger("controller.reconcile").info("cluster not observable", extra={"cluster": "m"})
            logging.getLogger("t").info("member HPA written", extra={"object": "team-a/web"})
        logging.getLogger("t").info("outside")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    inside, with_object, outside = (json.loads(line) for line in stream.getvalue().strip().splitlines())
    assert inside["reconcile_object"] == "team-a/web" and inside["reconcile_kind"] == FEDERATED_HPA
    assert with_object["object"] == "team-a/web" and with_object["reconcile_object"] == "team-a/web"
    assert "reconcile_object" not in outside
