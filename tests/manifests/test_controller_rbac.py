"""The controller's manifests: they render with kustomize, the Deployment is hardened, and RBAC grants
exactly what the code calls on the control plane, no more and no less.

What the code calls is recorded, not listed by hand: the manager runs (with leader election) against a
FakeKube control plane and the port methods the cron controller uses are called once each; every
request the FakeKube saw becomes an (apiGroup, resource, verb) triple and is compared with the rules.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import config as kube_config

from controller.kube.control_plane import KubeControlPlane
from controller.runtime.fleet import FleetManager
from controller.runtime.leader import LeaderConfig, LeaseClient
from controller.runtime.manager import ManagerConfig
from fhpa_api.models import CronFederatedHPAStatus, CrossVersionObjectReference, FederatedHPAStatus
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import cron_federated_hpa, deployment
from tests.support.fakekube_faults import RequestRecord
from tests.support.kustomize import kustomize
from tests.support.manager_world import FHPA, GROUP, SYSTEM, control_plane_fake, fhpa
from tests.support.members import member_cluster, member_secret, registry
from tests.support.waiting import wait_for

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "controller"
Triple = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)


def render() -> list[dict[str, Any]]:
    return kustomize(MANIFESTS)


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind)


def granted(role: dict[str, Any]) -> set[Triple]:
    out: set[Triple] = set()
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    out.add((group, resource, verb))
    return out


PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)


def triple(method: str, path: str, query: dict[str, list[str]]) -> Triple | None:
    """The RBAC triple of one request; None for discovery (non-resource URLs every user may read)."""
    m = PATH.match(path)
    if m is None:
        return None
    group, res, name, sub = m.group("group") or "", m.group("res"), m.group("name"), m.group("sub")
    if m.group("ns") is None and res == "namespaces" and name is None:
        return None
    resource = f"{res}/{sub}" if sub else res
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch", [""])[-1] in ("true", "1") else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
    return (group, resource, verb)


def calls(records: list[RequestRecord]) -> set[Triple]:
    return {t for r in records if (t := triple(r.method, r.path, r.query)) is not None}


def exercise_control_plane() -> set[Triple]:
    """Everything the controller calls on its control plane, from a real run plus the cron port calls."""
    cp: FakeKube = control_plane_fake()
    member = member_cluster()
    try:
        cp.store.create("secrets", member_secret("member1", member, SYSTEM))
        cp.store.create("deployments.apps", deployment("web", "default"))
        api = kube_config.new_client_from_config_dict(cp.kubeconfig())
        plane = KubeControlPlane(api, reporting_instance="rbac")
        lease = LeaderConfig(
            namespace=SYSTEM, lease_duration_seconds=2, renew_deadline_seconds=1.5, retry_period_seconds=0.2
        )
        manager = FleetManager(
            plane,
            registry(SYSTEM),
            ManagerConfig(
                namespace=SYSTEM, lease=lease, resync_seconds=1, probe_seconds=0.5, watch_timeout_seconds=5
            ),
            lease_client=LeaseClient(api),
        )
        stop = threading.Event()
        thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
        thread.start()
        cp.store.create(FHPA, fhpa(policy="Duplicated"))
        wait_for(
            lambda: member.store.find("horizontalpodautoscalers.autoscaling", "default", "web"), what="HPA"
        )
        cp.store.delete(FHPA, "default", "web")
        wait_for(lambda: cp.store.find(FHPA, "default", "web") is None, what="cleanup")
        time.sleep(0.5)
        stop.set()
        thread.join(10)
        # the port methods the cron controller calls, once each
        cp.store.create(FHPA, fhpa("cronned"))
        cp.store.create(f"cronfederatedhpas.{GROUP}", cron_federated_hpa())
        cron = plane.get_cron_federated_hpa("default", "c")
        assert cron is not None
        plane.list_cron_federated_hpas()
        plane.update_cron_federated_hpa_status(cron, CronFederatedHPAStatus())
        cronned = plane.get_federated_hpa("default", "cronned")
        assert cronned is not None and cronned.metadata.resource_version
        plane.patch_federated_hpa_bounds_if_unchanged(
            "default", "cronned", 2, 8, cronned.metadata.resource_version
        )
        web = CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web")
        _, version = plane.get_scale("default", web)  # cron fires are conditional writes of the Scale
        plane.scale_workload_if_unchanged("default", web, 2, version)
        target = plane.get_federated_hpa("default", "cronned")
        assert target is not None
        plane.update_federated_hpa_status(target, FederatedHPAStatus())
        plane.emit_event(cron, "Normal", "Scaled", "again")
        assert plane.get_config_map_data("default", "holidays") is None  # a rule's calendar, by name
        KubeControlPlane(api).emit_event(cron, "Normal", "Scaled", "again")  # a restart: get, then patch
        return calls(cp.requests)
    finally:
        cp.stop()
        member.stop()


def test_manifests_render_and_the_deployment_is_hardened() -> None:
    docs = render()
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted(
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "NetworkPolicy",
        ]
    )
    assert all(d["metadata"].get("namespace") == SYSTEM for d in docs if d["kind"] in ("Role", "Deployment"))
    pod = by_kind(docs, "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]
    assert container["args"][:2] == ["controller", "run"]
    assert pod["serviceAccountName"] == by_kind(docs, "ServiceAccount")["metadata"]["name"]


def test_rbac_grants_exactly_what_the_code_calls() -> None:
    docs = render()
    cluster_rules = granted(by_kind(docs, "ClusterRole"))
    namespace_rules = granted(by_kind(docs, "Role"))
    used = exercise_control_plane()
    namespaced_in_system = {("coordination.k8s.io", "leases"), ("", "secrets")}
    missing = {
        t
        for t in used
        if t not in cluster_rules and not ((t[0], t[1]) in namespaced_in_system and t in namespace_rules)
    }
    assert not missing, f"the code calls what RBAC does not grant: {sorted(missing)}"
    unused = (cluster_rules | namespace_rules) - used
    # statefulsets/scale stands for "the scale subresource of the workload kind a rule targets"; the
    # exercise scales a Deployment, so it is the one grant that is the same call on another kind
    unused -= {("apps", "statefulsets/scale", "get"), ("apps", "statefulsets/scale", "update")}
    assert not unused, f"RBAC grants what the code never calls: {sorted(unused)}"
