"""The manager's tests' control plane: a FakeKube serving our two CRDs as plain resources, and a
FleetManager run on a thread against it with the short periods those tests wait on."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import config as kube_config

from controller.kube.control_plane import KubeControlPlane
from controller.planning.planner import PlannerConfig
from controller.runtime.fleet import FleetManager
from controller.runtime.leader import LeaderConfig, LeaseClient
from controller.runtime.manager import ManagerConfig
from tests.support.fakekube import FakeKube
from tests.support.fakekube_store import Resource

GROUP = "autoscaling.karmada.io"
SYSTEM = "federated-hpa-system"
FHPA = f"federatedhpas.{GROUP}"
HPA = "horizontalpodautoscalers.autoscaling"


def serve_our_crds(fake: FakeKube) -> FakeKube:
    """Register FederatedHPA and CronFederatedHPA, status subresource and all, on a FakeKube not started."""
    fake.store.add_resource(Resource(GROUP, "v1alpha1", "federatedhpas", "FederatedHPA", status=True))
    fake.store.add_resource(Resource(GROUP, "v1alpha1", "cronfederatedhpas", "CronFederatedHPA", status=True))
    return fake


def control_plane_fake() -> FakeKube:
    """A started control plane with our CRDs, the system namespace, and watches ended after 5 s."""
    fake = serve_our_crds(FakeKube(namespaces=("default", "kube-system", SYSTEM), watch_max_seconds=5.0))
    fake.start()
    return fake


def fhpa(name: str = "web", policy: str = "StaticWeighted") -> dict[str, Any]:
    """A FederatedHPA of 2..10 over member1 and member2 with equal weights."""
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "federatedHPAAssignment": {
                "federatedHPAAssignmentType": policy,
                "clusterAutoscalingPreference": [
                    {"targetCluster": {"clusterNames": ["member1"]}, "staticWeight": 1},
                    {"targetCluster": {"clusterNames": ["member2"]}, "staticWeight": 1},
                ],
            },
        },
    }


def start_manager(
    cp: FakeKube,
    reg: Any,
    *,
    lease: LeaderConfig | None = None,
    lease_client: LeaseClient | None = None,
    **config: Any,
) -> tuple[FleetManager, threading.Event, threading.Thread, list[int]]:
    """Run a manager against ``cp`` on a daemon thread; set the event to stop it, and the list receives
    ``run``'s exit code. Failover and optimization periods are seconds, so tests see them happen."""
    api = kube_config.new_client_from_config_dict(cp.kubeconfig())
    manager = FleetManager(
        KubeControlPlane(api, reporting_instance="test"),
        reg,
        ManagerConfig(
            namespace=SYSTEM,
            leader_elect=lease is not None,
            lease=lease,
            planner=PlannerConfig(failover_grace_seconds=1, optimization_period_seconds=2),
            resync_seconds=1,
            probe_seconds=0.5,
            **config,
        ),
        lease_client=lease_client,
    )
    stop = threading.Event()
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(manager.run(stop)), daemon=True)
    thread.start()
    return manager, stop, thread, result
