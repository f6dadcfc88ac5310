"""The namespace guard end to end (security review M5): the manager against a FakeKube control plane
and two FakeKube members. A FederatedHPA or CronFederatedHPA in a refused namespace gets Ready=False
(NamespaceNotAllowed) and a Warning Event, and the members see no request at all in that namespace;
one in an allowed namespace is served as usual."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from controller.finalizer import FINALIZER
from controller.planning.namespaces import REASON_NAMESPACE_NOT_ALLOWED, NamespacePolicy
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import cron_federated_hpa, deployment, node
from tests.support.manager_world import FHPA, GROUP, HPA, SYSTEM, fhpa, serve_our_crds, start_manager
from tests.support.members import member_secret, registry
from tests.support.waiting import wait_for

ALLOWED = "team-a"
OFF_LIST = "payments"  # matches no --allow-namespaces pattern
DENIED = "kube-system"  # allowed by name, but --deny-namespaces kube-* wins
NAMESPACES = ("default", ALLOWED, OFF_LIST, DENIED, SYSTEM)
POLICY = NamespacePolicy(allow=("team-*", DENIED), deny=("kube-*",))
CRON = f"cronfederatedhpas.{GROUP}"


def member() -> FakeKube:
    fake = FakeKube(namespaces=NAMESPACES, watch_max_seconds=5.0)
    fake.start()
    fake.store.create("nodes", node("node-1", cpu="8", memory="16Gi"))
    for ns in (ALLOWED, OFF_LIST, DENIED):
        fake.store.create("deployments.apps", deployment("web", ns))
    return fake


def in_namespace(name: str, namespace: str) -> dict[str, Any]:
    obj = fhpa(name)
    obj["metadata"]["namespace"] = namespace
    return obj


def ready(obj: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Ready"), None)


def refused(cp: FakeKube, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
    obj = cp.store.find(resource, namespace, name)
    cond = ready(obj) if obj else None
    return cond if cond and cond["reason"] == REASON_NAMESPACE_NOT_ALLOWED else None


def warnings(cp: FakeKube, namespace: str) -> list[dict[str, Any]]:
    events = cp.store.list_objects("events", namespace)[0]
    return [e for e in events if e["reason"] == REASON_NAMESPACE_NOT_ALLOWED and e["type"] == "Warning"]


# the node autoscaler's state, read by name for every member whatever the FederatedHPAs' namespaces
CLUSTER_STATUS = "/namespaces/kube-system/configmaps/cluster-autoscaler-status"


def member_requests_in(fake: FakeKube, namespace: str) -> list[str]:
    """Requests on behalf of objects in ``namespace`` (not the member's own autoscaler status)."""
    with fake._requests_lock:
        return [
            f"{r.method} {r.path}"
            for r in fake.requests
            if f"/namespaces/{namespace}/" in r.path and not r.path.endswith(CLUSTER_STATUS)
        ]


@pytest.fixture
def world() -> Iterator[dict[str, Any]]:
    cp = serve_our_crds(FakeKube(namespaces=NAMESPACES, watch_max_seconds=5.0))
    cp.start()
    members = {"member1": member(), "member2": member()}
    for name, fake in members.items():
        cp.store.create("secrets", member_secret(name, fake, SYSTEM))
    manager, stop, thread, _ = start_manager(cp, registry(SYSTEM), watch_timeout_seconds=5, namespaces=POLICY)
    yield {"cp": cp, "members": members, "manager": manager}
    stop.set()
    thread.join(15)
    for fake in (cp, *members.values()):
        fake.stop()


def test_refused_namespaces_get_a_condition_and_an_event_and_no_member_request(world: dict[str, Any]) -> None:
    cp: FakeKube = world["cp"]
    members: dict[str, FakeKube] = world["members"]
    for ns in (OFF_LIST, DENIED, ALLOWED):
        cp.store.create(FHPA, in_namespace("web", ns))
        cp.store.create(CRON, cron_federated_hpa("c", ns))

    # the allowed namespace works as before: an HPA in each member, a finalizer, Ready=True
    wait_for(lambda: all(f.store.find(HPA, ALLOWED, "web") for f in members.values()), what="allowed HPAs")
    wait_for(lambda: (c := ready(cp.store.get(FHPA, ALLOWED, "web"))) and c["status"] == "True", what="Ready")
    assert FINALIZER in cp.store.get(FHPA, ALLOWED, "web")["metadata"]["finalizers"]
    assert refused(cp, CRON, ALLOWED, "c") is None

    time.sleep(2.5)  # two more resyncs: the members saw nothing in the refused namespaces
    for fake in members.values():
        for ns in (OFF_LIST, DENIED):
            assert member_requests_in(fake, ns) == []
            assert fake.store.get("deployments.apps", ns, "web")["spec"]["replicas"] == 1

    for ns, why in ((OFF_LIST, "matches no --allow-namespaces pattern"), (DENIED, "--deny-namespaces")):
        for resource, name in ((FHPA, "web"), (CRON, "c")):
            cond = wait_for(lambda r=resource, n=name, s=ns: refused(cp, r, s, n), what=f"{resource} {ns}")
            assert cond["status"] == "False" and why in cond["message"]
        wait_for(lambda s=ns: len(warnings(cp, s)) == 2, what=f"Warning Events in {ns}")
        assert "finalizers" not in cp.store.get(FHPA, ns, "web")["metadata"]
    assert all(e.get("count", 1) == 1 for ns in (OFF_LIST, DENIED) for e in warnings(cp, ns))  # said once
    assert all(member_requests_in(f, ALLOWED) for f in members.values())  # the check can see requests


def test_a_refused_object_being_deleted_loses_its_finalizer_without_member_cleanup(
    world: dict[str, Any],
) -> None:
    """Made while its namespace was allowed (it carries our finalizer), deleted after it was refused:
    the finalizer is released so the delete does not hang, and no member is asked to delete anything."""
    cp: FakeKube = world["cp"]
    members: dict[str, FakeKube] = world["members"]
    obj = in_namespace("old", OFF_LIST)
    obj["metadata"]["finalizers"] = [FINALIZER]
    cp.store.create(FHPA, obj)
    wait_for(lambda: refused(cp, FHPA, OFF_LIST, "old"), what="refused")
    cp.store.delete(FHPA, OFF_LIST, "old")
    wait_for(lambda: cp.store.find(FHPA, OFF_LIST, "old") is None, what="the FederatedHPA gone")
    assert any("Finalizer released" in e["message"] for e in warnings(cp, OFF_LIST))
    for fake in members.values():
        assert member_requests_in(fake, OFF_LIST) == []


def test_the_shipped_deployment_passes_the_default_namespace_flags() -> None:
    from fhpa.cli import build_parser
    from tests.manifests.test_controller_rbac import by_kind, render

    args = by_kind(render(), "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    flags = [a for a in args if a.startswith(("--allow-namespaces=", "--deny-namespaces="))]
    assert flags == ["--allow-namespaces=*", "--deny-namespaces=kube-*"]
    parsed = build_parser().parse_args(args)
    assert NamespacePolicy.from_flags(parsed.allow_namespaces, parsed.deny_namespaces) == NamespacePolicy()
