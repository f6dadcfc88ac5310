"""M1 (issue 12 item 4): one cron fire across a real Lease hand-over, with the old leader alive but
partitioned from the Lease, and its scale write held by the API server past the hand-over.

Two Managers with leader election share one FakeKube control plane. Leader A runs a fire: its write of
the Scale is held by the server for several seconds and, from that moment, A's Lease writes fail. B takes
the Lease and owes the same fire. Before the fix both writes were applied (the server saw two scale
writes for one scheduleTime, the review's exp/zombie_cron.py). Now A records an Executing marker in
status before its write, B uses the marker's resourceVersion as its precondition, and at most one of the
two writes can be applied: exactly one is.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import config as kube_config

from controller.kube.control_plane import KubeControlPlane
from controller.runtime.fleet import FleetManager
from controller.runtime.leader import LeaderConfig, LeaseClient
from controller.runtime.manager import ManagerConfig
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import deployment
from tests.support.manager_world import GROUP, SYSTEM, serve_our_crds
from tests.support.members import registry
from tests.support.waiting import wait_for

CRON = f"cronfederatedhpas.{GROUP}"


class HoldingKube(FakeKube):
    """Holds the first scale write for ``hold`` seconds before applying it (a slow, not a lost, write)
    and calls ``on_hold`` when it arrives."""

    hold = 0.0
    on_hold: Any = None

    def dispatch(self, method: str, path: str, query: Any, body: Any, ctype: Any, handler: Any) -> Any:
        if method in ("PUT", "PATCH") and path.endswith("/scale") and self.hold > 0:
            hold, self.hold = self.hold, 0.0
            if self.on_hold is not None:
                self.on_hold()
            time.sleep(hold)
        return super().dispatch(method, path, query, body, ctype, handler)


class CutLeaseClient(LeaseClient):
    cut = False

    def replace(self, namespace: str, name: str, body: dict) -> dict:
        if self.cut:
            raise ConnectionResetError("partitioned from the Lease")
        return super().replace(namespace, name, body)

    def create(self, namespace: str, body: dict) -> dict:
        if self.cut:
            raise ConnectionResetError("partitioned from the Lease")
        return super().create(namespace, body)


class ShiftedClock:
    def __init__(self, offset: timedelta) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


def test_one_cron_fire_is_applied_once_across_a_lease_hand_over_with_a_partitioned_live_leader() -> None:
    cp = serve_our_crds(HoldingKube(namespaces=("default", "kube-system", SYSTEM), watch_max_seconds=5.0))
    cp.start()
    stops: list[threading.Event] = []
    try:
        cp.store.create("deployments.apps", deployment("web", "default", replicas=1))
        # a clock shifted so that the next whole minute comes 4 s from now: the fire is soon
        real = datetime.now(UTC)
        boundary = (real + timedelta(seconds=5)).replace(second=0, microsecond=0) + timedelta(minutes=1)
        clock = ShiftedClock(boundary - real - timedelta(seconds=4))
        cp.store.create(
            CRON,
            {
                "apiVersion": f"{GROUP}/v1alpha1",
                "kind": "CronFederatedHPA",
                "metadata": {"name": "peak", "namespace": "default"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "rules": [{"name": "r", "schedule": "* * * * *", "targetReplicas": 7}],
                },
            },
        )
        lease_clients: dict[str, CutLeaseClient] = {}
        managers: dict[str, FleetManager] = {}
        threads: dict[str, threading.Thread] = {}
        results: dict[str, list[int]] = {}

        def start(name: str) -> None:
            api = kube_config.new_client_from_config_dict(cp.kubeconfig())
            lease_clients[name] = CutLeaseClient(api)
            lease = LeaderConfig(
                namespace=SYSTEM,
                identity=name,
                lease_duration_seconds=2.0,
                renew_deadline_seconds=1.0,
                retry_period_seconds=0.2,
            )
            managers[name] = FleetManager(
                KubeControlPlane(api, reporting_instance=name),
                registry(SYSTEM),
                ManagerConfig(namespace=SYSTEM, lease=lease, watch_timeout_seconds=5, resync_seconds=1),
                lease_client=lease_clients[name],
                clock=clock,  # type: ignore[arg-type]
            )
            stop = threading.Event()
            stops.append(stop)
            results[name] = []
            threads[name] = threading.Thread(
                target=lambda: results[name].append(managers[name].run(stop)), daemon=True
            )
            threads[name].start()

        start("a")
        wait_for(
            lambda: managers["a"].acting() and managers["a"].caches_synced()[0],
            timeout=30,
            what="a leading",
        )
        start("b")  # the stand-by

        def partition_a() -> None:
            lease_clients["a"].cut = True

        cp.hold, cp.on_hold = 6.0, partition_a  # a's scale write is held 6 s; a loses the Lease meanwhile
        wait_for(lambda: results["a"] == [1], timeout=40, what="a giving up the Lease")
        wait_for(lambda: managers["b"].acting(), timeout=10, what="b taking over")

        def scale_writes() -> list[Any]:
            return [
                r
                for m in ("PUT", "PATCH")
                for r in cp.requests_matching(m, "/deployments/web/scale")
                if r.status is not None
            ]

        # both the held write (a) and the successor's (b) have been answered
        wait_for(lambda: len(scale_writes()) >= 2, timeout=20, what="both leaders' scale writes")
        time.sleep(1.0)
        applied = [r for r in scale_writes() if r.status is not None and r.status < 300]
        assert len(applied) == 1, (
            f"one fire applied {len(applied)} times: {[r.status for r in scale_writes()]}"
        )
        assert cp.store.get("deployments.apps", "default", "web")["spec"]["replicas"] == 7
        status = cp.store.get(CRON, "default", "peak").get("status") or {}
        histories = status.get("executionHistories") or []
        recorded = [e for h in histories for e in h.get("successfulExecutions") or []]
        wait_for(
            lambda: [
                e
                for h in (cp.store.get(CRON, "default", "peak").get("status") or {}).get("executionHistories")
                or []
                for e in h.get("successfulExecutions") or []
            ],
            timeout=30,
            what="the fire recorded in status",
        )
        assert len(recorded) <= 1
        conditions = (cp.store.get(CRON, "default", "peak").get("status") or {}).get("conditions") or []
        assert not [c for c in conditions if c["type"] == "Executing"]  # the marker is gone once recorded
    finally:
        for stop in stops:
            stop.set()
        cp.stop()
