"""Both install paths produce a working webhook and controller: the chart rendered by `helm template`
(self-signed certificates, the chart's own rotator) and `install.yaml` from `make release-manifests`
(cert-manager), each applied with the real `kubectl apply` to the real API server tier
(tests/support/install_cluster.py), their pods run by the pod runner.

For each path: the API server calls the webhook through the Service its rendered configurations name
(refusing an invalid FederatedHPA with our message, defaulting a valid one), and the controller, with
the rendered RBAC as its ServiceAccount's only rights, takes the Lease and reconciles a FederatedHPA
against a member cluster. The rendered kinds the tier stores but does not act on are named in
STORED_ONLY (tests/support/install_cluster.py says why); a new kind in the chart makes these tests say
so rather than pass silently. docs/install.md says what these tests prove and what they do not.

Each test has an API server of its own (``realapi_factory``), not the session's: it is started with the
proxy that plays cluster DNS, and an installed webhook (failurePolicy Fail, every FederatedHPA in every
namespace) would otherwise judge the other tests' objects too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fhpa_api.defaulting import apply_defaults
from tests.charts.test_chart import CHART, NAMESPACE, render
from tests.charts.test_release_manifests import release_manifests
from tests.e2e.realapi.test_webhook import expected_denial
from tests.support.cert_manager import CertManagerStandIn
from tests.support.fakekube import FakeKube
from tests.support.helm import REPO, HelmTools
from tests.support.install_cluster import InstallCluster
from tests.support.kubemember import wait_for
from tests.support.members import member_cluster, member_secret
from tests.support.realapi import RealAPIServer
from tests.support.reviews import fhpa

pytestmark = [pytest.mark.realapi, pytest.mark.slow]

GROUP_VERSION = "autoscaling.karmada.io/v1alpha1"
APP_NAMESPACE = "shop"
LEASES = "leases.coordination.k8s.io"
HPA = "horizontalpodautoscalers.autoscaling"
# Stored where the pods can read them, acted on by nothing here: every pod is a loopback process (no
# network to police) and nothing evicts pods (no disruption to budget).
STORED_ONLY = {"NetworkPolicy", "PodDisruptionBudget"}
RUN = {"Deployment"}
CERT_MANAGER = {"Issuer", "Certificate"}  # acted on by the cert-manager stand-in
APPLIED = {
    "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}  # fmt: skip


@pytest.fixture
def cluster(realapi_factory: Callable[..., RealAPIServer], tmp_path: Path) -> Iterator[InstallCluster]:
    installed = InstallCluster(realapi_factory, tmp_path).start()
    try:
        yield installed
    finally:
        installed.stop()


@pytest.fixture
def member() -> Iterator[FakeKube]:
    fake = member_cluster(APP_NAMESPACE, name="web")
    yield fake
    fake.stop()


def check_kinds(objects: list[dict[str, Any]], *extra: set[str]) -> None:
    """Every rendered kind is one these tests apply, run or declare as stored only."""
    kinds = {o["kind"] for o in objects} - {"CustomResourceDefinition", "Namespace"}
    assert kinds <= APPLIED | RUN | STORED_ONLY | set().union(*extra), kinds


def kubectl_apply(helm: HelmTools, cluster: InstallCluster, source: str, stdin: str | None = None) -> None:
    """`kubectl apply -f SOURCE` as the installing administrator, then wait until the CRDs are served.
    Without client-side validation: the tier's OpenAPI document has our CRDs' schemas only."""
    applied = cluster.kubectl(helm, "apply", "--validate=false", "-f", source, input=stdin)
    assert applied.returncode == 0, applied.stderr
    established = cluster.kubectl(
        helm, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"
    )
    assert established.returncode == 0, established.stderr


def webhook_admits_and_refuses(cluster: InstallCluster) -> None:
    """The API server calls the running webhook through its Service: invalid refused, valid defaulted."""
    cluster.create_namespace(APP_NAMESPACE)
    bad = fhpa("bad")
    bad["metadata"]["namespace"] = APP_NAMESPACE
    bad["spec"]["scaleTargetRef"]["name"] = "a/b"
    path = f"/apis/{GROUP_VERSION}/namespaces/{APP_NAMESPACE}/federatedhpas"
    body = copy.deepcopy(bad)
    del body["metadata"]["uid"]

    # the first calls may race the CRD's first serving (404) or the API server's informer for the
    # webhook configurations (500: the caBundle is not there yet)
    def answered() -> tuple[int, Any] | None:
        reply: tuple[int, Any] = cluster.server.request("POST", path, body)
        return reply if reply[0] not in (404, 500) else None

    status, answer = wait_for(answered, 60, "an admission answer from the webhook")
    assert status == 403 and answer["message"] == expected_denial(bad), answer
    good = fhpa("defaulted")
    good["metadata"]["namespace"] = APP_NAMESPACE
    del good["metadata"]["uid"]
    status, stored = cluster.server.request("POST", path, good)
    assert status == 201, stored
    assert stored["spec"] == apply_defaults(good)["spec"] != good["spec"]
    assert any(
        host == f"federated-hpa-webhook.{NAMESPACE}.svc"
        for host, _, routed in cluster.proxy.connects
        if routed
    )


def controller_reconciles(cluster: InstallCluster, member: FakeKube) -> None:
    """With the rendered RBAC only, the controller takes the Lease and makes the member's HPA."""
    lease = wait_for(lambda: cluster.objects(LEASES), 60, "the controller's Lease")
    assert lease[0]["spec"]["holderIdentity"], lease
    body = fhpa("web", minReplicas=2, maxReplicas=6)
    body["metadata"]["namespace"] = APP_NAMESPACE
    del body["metadata"]["uid"]
    body["spec"]["federatedHPAAssignment"] = {
        "federatedHPAAssignmentType": "StaticWeighted",
        "clusterAutoscalingPreference": [{"targetCluster": {"clusterNames": ["member1"]}, "staticWeight": 1}],
    }
    status, created = cluster.server.request(
        "POST", f"/apis/{GROUP_VERSION}/namespaces/{APP_NAMESPACE}/federatedhpas", body
    )
    assert status == 201, created
    hpa = wait_for(lambda: member.store.find(HPA, APP_NAMESPACE, "web"), 60, "the member HPA")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)

    def ready() -> dict[str, Any] | None:
        _, obj = cluster.server.request(
            "GET", f"/apis/{GROUP_VERSION}/namespaces/{APP_NAMESPACE}/federatedhpas/web"
        )
        conditions = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}
        return obj if conditions.get("Ready") == "True" else None

    status_now = wait_for(ready, 60, "the FederatedHPA's Ready condition")["status"]
    assert [c["name"] for c in status_now["clusters"]] == ["member1"]
    assert cluster.front.denied == []  # the rendered RBAC covered every call the pods made


def test_the_chart_with_self_signed_certificates_installs_a_working_webhook_and_controller(
    helm: HelmTools, cluster: InstallCluster, member: FakeKube
) -> None:
    objects = render(helm, "--set=webhook.certificates.mode=selfSigned")
    check_kinds(objects)
    crds = [
        d
        for p in sorted((REPO / CHART / "crds").glob("*.yaml"))
        for d in yaml.safe_load_all(p.read_text())
        if d
    ]
    cluster.create_namespace(NAMESPACE)  # helm install --create-namespace
    kubectl_apply(helm, cluster, "-", yaml.safe_dump_all([*crds, *objects]))
    cluster.write("secrets", member_secret("member1", member, NAMESPACE))

    # the webhook pod starts once the chart's own rotator has issued its Secret and patched the caBundles
    cluster.run(NAMESPACE, "federated-hpa-controller", "federated-hpa-cert-rotator", "federated-hpa-webhook")
    webhook_admits_and_refuses(cluster)
    controller_reconciles(cluster, member)


def test_install_yaml_with_cert_manager_installs_a_working_webhook_and_controller(
    helm: HelmTools, cluster: InstallCluster, member: FakeKube, tmp_path: Path
) -> None:
    objects = release_manifests(helm, tmp_path / "install.yaml")
    check_kinds(objects, CERT_MANAGER)
    kubectl_apply(helm, cluster, str(tmp_path / "install.yaml"))
    cluster.write("secrets", member_secret("member1", member, NAMESPACE))

    CertManagerStandIn(cluster).sync()
    cluster.run(NAMESPACE, "federated-hpa-controller", "federated-hpa-webhook")
    webhook_admits_and_refuses(cluster)
    controller_reconciles(cluster, member)
