"""The member-side manifests (manifests/member): they render, and their RBAC grants exactly what the code
calls on a member cluster, no more and no less, both the cluster-wide ClusterRole and the namespaced
variant (a Role per allowed namespace, plus a probe ClusterRole and an optional capacity ClusterRole).

What the code calls is recorded, not listed by hand: the manager runs against a FakeKube control plane
and a FakeKube member, creates, updates and deletes a member HPA, and the member port's scale write is
called once; every request the member saw becomes an (apiGroup, resource, verb) triple, with whether
it was made inside the FederatedHPA's namespace or cluster-wide.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.kube.registry import MEMBER_LABEL, MemberRegistry
from fhpa_api.models import FederatedHPA
from tests.manifests.test_controller_rbac import PATH
from tests.support.fakekube import FakeKube
from tests.support.fakekube_builders import pod
from tests.support.fakekube_faults import RequestRecord
from tests.support.fakekube_store import Resource
from tests.support.kustomize import kustomize
from tests.support.manager_world import FHPA, HPA, SYSTEM, control_plane_fake, fhpa, start_manager
from tests.support.members import member_cluster, member_secret, registry
from tests.support.waiting import wait_for
from tests.support.writes import scale

MEMBER = Path(__file__).resolve().parents[2] / "manifests" / "member"
NONRESOURCE = "nonResourceURL"
Call = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb), or (NONRESOURCE, path, verb)
# statefulsets stand for "the other workload kind"; the exercise scales a Deployment
SAME_CALL_OTHER_KIND = {
    ("apps", "statefulsets", "list"),
    ("apps", "statefulsets", "watch"),
    ("apps", "statefulsets/scale", "get"),
    ("apps", "statefulsets/scale", "update"),
}


def render() -> list[dict[str, Any]]:
    return kustomize(MEMBER)


def load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MEMBER / name).read_text()) if d]


def named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def granted(role: dict[str, Any]) -> set[Call]:
    out: set[Call] = set()
    for rule in role["rules"]:
        verbs = rule["verbs"]
        if "nonResourceURLs" in rule:
            out |= {(NONRESOURCE, url, verb) for url in rule["nonResourceURLs"] for verb in verbs}
            continue
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out |= {(group, resource, verb) for verb in verbs}
    return out


def classify(record: RequestRecord) -> tuple[Call, bool] | None:
    """(the call, made inside a namespace); None for discovery, which every authenticated user may read."""
    m = PATH.match(record.path)
    if m is None:
        if record.path in ("/api", "/apis") or record.path.startswith(("/api/", "/apis/")):
            return None  # discovery: /api/v1, /apis/<group>, /apis/<group>/<version>
        assert record.method == "GET", record
        return (NONRESOURCE, record.path, "get"), False
    group, res, name, sub = m.group("group") or "", m.group("res"), m.group("name"), m.group("sub")
    resource = f"{res}/{sub}" if sub else res
    if record.method == "GET":
        verb = (
            "get" if name else ("watch" if record.query.get("watch", [""])[-1] in ("true", "1") else "list")
        )
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[record.method]
    return (group, resource, verb), m.group("ns") is not None


# what a member with only the namespaced Role and the probe ClusterRole refuses: the member cache's
# cluster-wide lists, after which it watches the FederatedHPA's namespace (capacity unknown)
REFUSED_WITHOUT_CLUSTER_ROLE = (
    r"^/(apis/autoscaling/v2/horizontalpodautoscalers|apis/apps/v1/deployments|api/v1/pods|api/v1/nodes"
    r"|api/v1/resourcequotas|api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status"
    r"|apis/karpenter.sh/v1/nodepools)$"
)
NODE_POOLS = Resource("karpenter.sh", "v1", "nodepools", "NodePool", namespaced=False, status=True)


def exercise_member(namespaced_rbac: bool = False) -> tuple[set[Call], set[Call], set[str]]:
    """(calls inside a namespace, cluster-wide calls, the namespaces used) from a real run; with
    ``namespaced_rbac`` the member refuses (403) what role-namespaced.yaml does not grant cluster-wide,
    and the refused attempts are left out (they are what RBAC answers, not what the grant must cover)."""
    cp: FakeKube = control_plane_fake()
    member = member_cluster()
    # a pod that pends (its Events are read) and Karpenter served (its NodePools are read)
    member.store.create("pods", pod("web-pending", labels={"app": "web"}, unschedulable=True))
    member.store.add_resource(NODE_POOLS)
    if namespaced_rbac:
        member.faults.add("GET", REFUSED_WITHOUT_CLUSTER_ROLE, status=403, times=-1)
    try:
        cp.store.create("secrets", member_secret("member1", member, SYSTEM))
        reg: MemberRegistry = registry(
            SYSTEM, live_window_seconds=0.0, quiet_probe_seconds=0.0
        )  # real probes
        manager, stop, thread, _ = start_manager(cp, reg, watch_timeout_seconds=5)
        try:
            cp.store.create(FHPA, fhpa(policy="Duplicated"))
            wait_for(lambda: member.store.find(HPA, "default", "web"), what="member HPA")
            obj = cp.store.get(FHPA, "default", "web")
            obj["spec"]["maxReplicas"] = 12
            cp.store.put(FHPA, obj)
            wait_for(lambda: member.store.get(HPA, "default", "web")["spec"]["maxReplicas"] == 12, what="PUT")
            port = manager.registry.members()["member1"]
            scale(
                port, FederatedHPA.model_validate(fhpa(policy="Duplicated")), 4
            )  # the executor's scale write
            member.faults.add("GET", r"^/readyz$", status=404)  # a member without /readyz: /healthz
            assert port.probe()
            cp.store.delete(FHPA, "default", "web")
            wait_for(lambda: cp.store.find(FHPA, "default", "web") is None, what="cleanup")
            time.sleep(0.5)
        finally:
            stop.set()
            thread.join(15)
        with member._requests_lock:
            records = list(member.requests)
    finally:
        cp.stop()
        member.stop()
    inside: set[Call] = set()
    cluster_wide: set[Call] = set()
    namespaces: set[str] = set()
    for record in records:
        if namespaced_rbac and record.status == 403:
            continue
        found = classify(record)
        if found is None:
            continue
        call, namespaced = found
        (inside if namespaced else cluster_wide).add(call)
        if namespaced and (m := PATH.match(record.path)):
            namespaces.add(m.group("ns"))
    return inside, cluster_wide, namespaces


@pytest.fixture(scope="module")
def member_calls() -> tuple[set[Call], set[Call], set[str]]:
    return exercise_member()


@pytest.fixture(scope="module")
def namespaced_member_calls() -> tuple[set[Call], set[Call], set[str]]:
    return exercise_member(namespaced_rbac=True)


def test_the_member_manifests_render_and_bind_the_service_account() -> None:
    docs = render()
    assert sorted(d["kind"] for d in docs) == sorted(
        ["Namespace", "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding"]
    )
    account = named(docs, "ServiceAccount", "federated-hpa-member")
    assert account["metadata"]["namespace"] == SYSTEM
    token = named(docs, "Secret", "federated-hpa-member-token")
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"]["kubernetes.io/service-account.name"] == "federated-hpa-member"
    binding = named(docs, "ClusterRoleBinding", "federated-hpa-member")
    assert (
        binding["roleRef"]["name"] == named(docs, "ClusterRole", "federated-hpa-member")["metadata"]["name"]
    )
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "federated-hpa-member", "namespace": SYSTEM}
    ]


def test_the_member_cluster_role_grants_exactly_what_the_code_calls(
    member_calls: tuple[set[Call], set[Call], set[str]],
) -> None:
    inside, cluster_wide, _ = member_calls
    rules = granted(named(render(), "ClusterRole", "federated-hpa-member"))
    used = inside | cluster_wide
    missing = used - rules
    assert not missing, f"the code calls on members what the ClusterRole does not grant: {sorted(missing)}"
    unused = rules - used - SAME_CALL_OTHER_KIND
    assert not unused, f"the member ClusterRole grants what the code never calls: {sorted(unused)}"


def test_the_namespaced_variant_grants_exactly_what_the_code_calls_in_and_outside_the_namespace(
    namespaced_member_calls: tuple[set[Call], set[Call], set[str]],
    member_calls: tuple[set[Call], set[Call], set[str]],
) -> None:
    inside, cluster_wide, namespaces = namespaced_member_calls
    assert namespaces == {"default"}  # only the FederatedHPA's namespace is touched
    docs = load("role-namespaced.yaml")
    role = named(docs, "Role", "federated-hpa-member")
    probe = granted(named(docs, "ClusterRole", "federated-hpa-member-probe"))
    capacity = granted(named(docs, "ClusterRole", "federated-hpa-member-capacity"))
    in_namespace = granted(role)
    assert not inside - in_namespace, f"the Role misses: {sorted(inside - in_namespace)}"
    assert not in_namespace - inside - SAME_CALL_OTHER_KIND, "the Role grants what the code never calls"
    assert all(g == NONRESOURCE for g, _, _ in probe), "the probe ClusterRole grants only non-resource URLs"
    assert cluster_wide == probe, "without the capacity ClusterRole, the only cluster-wide calls are probes"
    # with it, the capacity estimate's cluster-wide calls are exactly what it grants
    full_cluster_wide = member_calls[1]
    node_autoscaler = {("", "configmaps", "get"), ("karpenter.sh", "nodepools", "list")}
    assert capacity == {c for c in full_cluster_wide if c[1] in ("nodes", "pods", "nodepools")} | {
        c for c in member_calls[0] if c[1] == "configmaps"
    }
    assert (
        capacity
        == {(g, r, v) for g, r in (("", "nodes"), ("", "pods")) for v in ("list", "watch")} | node_autoscaler
    )
    for binding_kind, role_kind, name in (
        ("RoleBinding", "Role", "federated-hpa-member"),
        ("ClusterRoleBinding", "ClusterRole", "federated-hpa-member-probe"),
        ("ClusterRoleBinding", "ClusterRole", "federated-hpa-member-capacity"),
    ):
        binding = named(docs, binding_kind, name)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": name,
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "federated-hpa-member", "namespace": SYSTEM}
        ]
    assert binding_namespace(docs) == role["metadata"]["namespace"]


def binding_namespace(docs: list[dict[str, Any]]) -> str:
    return str(named(docs, "RoleBinding", "federated-hpa-member")["metadata"]["namespace"])


def test_the_one_configmap_read_is_granted_by_name_only() -> None:
    """The cluster autoscaler's status, not every ConfigMap of the member (they may hold secrets)."""
    roles = [named(render(), "ClusterRole", "federated-hpa-member")]
    roles.append(named(load("role-namespaced.yaml"), "ClusterRole", "federated-hpa-member-capacity"))
    for role in roles:
        rules = [r for r in role["rules"] if "configmaps" in r.get("resources", [])]
        assert [r.get("resourceNames") for r in rules] == [["cluster-autoscaler-status"]]
        assert [r["verbs"] for r in rules] == [["get"]]


def test_without_the_capacity_cluster_role_the_member_still_works_with_capacity_unknown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The note in role-namespaced.yaml: omit federated-hpa-member-capacity and nothing breaks."""
    cp: FakeKube = control_plane_fake()
    member = member_cluster()
    member.faults.add("GET", r"^/api/v1/(nodes|pods)$", status=403, times=-1)  # cluster-wide lists refused
    try:
        cp.store.create("secrets", member_secret("member1", member, SYSTEM))
        _, stop, thread, _ = start_manager(cp, registry(SYSTEM), watch_timeout_seconds=5)
        try:
            cp.store.create(FHPA, fhpa(policy="Duplicated"))
            wait_for(lambda: member.store.find(HPA, "default", "web"), what="member HPA without capacity")
        finally:
            stop.set()
            thread.join(15)
        assert any("Capacity unknown" in r.getMessage() for r in caplog.records)
    finally:
        cp.stop()
        member.stop()


def test_the_example_member_secret_registers_a_cluster_once_its_placeholders_are_filled() -> None:
    """example-secret.yaml: the label, the key, inline token and CA only; with real values it works."""
    (secret,) = load("example-secret.yaml")
    assert secret["metadata"]["labels"][MEMBER_LABEL] == "true"
    assert secret["metadata"]["namespace"] == SYSTEM
    text = secret["stringData"]["kubeconfig"]
    config = yaml.safe_load(text)
    (user,) = config["users"]
    (cluster,) = config["clusters"]
    assert set(user["user"]) == {"token"}
    assert set(cluster["cluster"]) == {"server", "certificate-authority-data"}
    assert cluster["cluster"]["server"].startswith("https://")
    fake = FakeKube(tls=True)
    fake.start()
    try:
        real = fake.kubeconfig(token="t0ken")["clusters"][0]["cluster"]
        filled = (
            text.replace("https://member1.example.com:6443", real["server"])
            .replace("<BASE64-ENCODED-CA-CERTIFICATE>", real["certificate-authority-data"])
            .replace("<SERVICE-ACCOUNT-TOKEN>", "t0ken")
        )
        as_data = {
            **{k: v for k, v in secret.items() if k != "stringData"},
            "data": {"kubeconfig": base64.b64encode(filled.encode()).decode()},
        }
        for shape in (as_data, {**secret, "stringData": {"kubeconfig": filled}}):
            reg = registry(SYSTEM)
            reg.apply_event("ADDED", json.loads(json.dumps(shape)))
            assert reg.problems() == {}
            assert set(reg.members()) == {"member1"}
            assert reg.probe_all()["member1"].healthy
    finally:
        fake.stop()
