"""The Helm chart (charts/federated-hpa) with a real `helm`: lint, rendering of the default and three other
value sets, agreement with the kustomize manifests, and refusal of contradictory values.

Server-side dry runs of the rendered objects are in test_chart_servers.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from fhpa.cli import build_parser
from tests.support.helm import REPO, HelmTools

CHART = "charts/federated-hpa"
NAMESPACE = "federated-hpa-system"
Obj = dict[str, Any]

VALUE_SETS: dict[str, list[str]] = {
    "default": [],
    "self-signed": [
        "--set=webhook.certificates.mode=selfSigned",
        "--set=webhook.certificates.selfSigned.days=30",
        "--set=webhook.certificates.selfSigned.renewBeforeDays=10",
    ],
    "sharded": [
        "--set=controller.replicas=3",
        "--set=controller.shards=3",
        "--set=namespaces.allow={team-a,team-b}",
        "--set=namespaces.deny=",
        "--set=image.repository=example.com/fhpa",
        "--set=image.tag=1.2.3",
        "--set=controller.resources.limits.memory=1Gi",
        "--set=metrics.serviceMonitor.enabled=true",
    ],
    "member-rbac": [
        "--set=memberRBAC.enabled=true",
        "--set=createNamespace=true",
        "--set=metrics.enabled=false",
    ],
}


def render(helm: HelmTools, *values: str) -> list[Obj]:
    return helm.documents("helm", "template", "fhpa", CHART, "--namespace", NAMESPACE, *values)


def by_key(objects: list[Obj]) -> dict[tuple[str, str], Obj]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


def container(objects: list[Obj], deployment: str) -> Obj:
    found: Obj = by_key(objects)[("Deployment", deployment)]["spec"]["template"]["spec"]["containers"][0]
    return found


@pytest.fixture(scope="module")
def rendered(helm: HelmTools) -> Iterator[dict[str, list[Obj]]]:
    yield {name: render(helm, *values) for name, values in VALUE_SETS.items()}


def test_the_chart_lints_strictly_with_every_value_set(helm: HelmTools) -> None:
    for name, values in VALUE_SETS.items():
        result = helm.run("helm", "lint", "--strict", CHART, *values)
        assert result.returncode == 0, f"{name}: {result.stdout}{result.stderr}"


def test_the_default_renders_the_controller_and_the_webhook_with_cert_manager(
    rendered: dict[str, list[Obj]],
) -> None:
    objects = by_key(rendered["default"])
    assert ("Certificate", "federated-hpa-webhook-serving") in objects
    assert not any(kind == "Deployment" and "rotator" in name for kind, name in objects)
    hook = objects[("ValidatingWebhookConfiguration", "federated-hpa-webhook")]
    assert hook["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{NAMESPACE}/federated-hpa-webhook-serving"
    }
    assert all(o["metadata"].get("namespace") in (None, NAMESPACE) for o in objects.values())
    assert ("Namespace", NAMESPACE) not in objects
    assert ("Service", "federated-hpa-controller-metrics") in objects
    assert ("ServiceMonitor", "federated-hpa") not in objects


def test_self_signed_mode_runs_a_rotator_with_rights_on_its_own_objects_only(
    rendered: dict[str, list[Obj]],
) -> None:
    objects = by_key(rendered["self-signed"])
    assert not any(o["apiVersion"].startswith("cert-manager.io") for o in objects.values())
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert "annotations" not in objects[(kind, "federated-hpa-webhook")]["metadata"]
    args = container(rendered["self-signed"], "federated-hpa-cert-rotator")["args"]
    assert args[:3] == ["certs", "rotate", "--in-cluster"]
    assert {"--days=30", "--renew-before-days=10", f"--namespace={NAMESPACE}"} <= set(args)
    cluster_rules = objects[("ClusterRole", "federated-hpa-cert-rotator")]["rules"]
    assert cluster_rules == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            "resourceNames": ["federated-hpa-webhook"],
            "verbs": ["get", "update"],
        }
    ]
    secret_rules = objects[("Role", "federated-hpa-cert-rotator")]["rules"]
    named = [r for r in secret_rules if r.get("resourceNames")]
    assert named == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["federated-hpa-webhook-ca", "federated-hpa-webhook-tls"],
            "verbs": ["get", "update"],
        }
    ]
    assert [r["verbs"] for r in secret_rules if not r.get("resourceNames")] == [["create"]]


def test_sharding_namespaces_image_and_monitoring_come_from_values(rendered: dict[str, list[Obj]]) -> None:
    objects = by_key(rendered["sharded"])
    controller = container(rendered["sharded"], "federated-hpa-controller")
    assert objects[("Deployment", "federated-hpa-controller")]["spec"]["replicas"] == 3
    assert {"--shards=3", "--allow-namespaces=team-a,team-b", "--deny-namespaces="} <= set(controller["args"])
    assert controller["image"] == "example.com/fhpa:1.2.3"
    assert container(rendered["sharded"], "federated-hpa-webhook")["image"] == "example.com/fhpa:1.2.3"
    assert controller["resources"]["limits"]["memory"] == "1Gi"
    monitor = objects[("ServiceMonitor", "federated-hpa")]
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics", "https"]


def test_member_rbac_renders_what_fhpa_cluster_join_creates(
    helm: HelmTools, rendered: dict[str, list[Obj]]
) -> None:
    objects = by_key(rendered["member-rbac"])
    members = helm.documents("kubectl", "kustomize", "manifests/member")
    assert ("Namespace", NAMESPACE) in objects  # createNamespace (a member's namespace is its own)
    for wanted in (m for m in members if m["kind"] != "Namespace"):
        got = objects[(wanted["kind"], wanted["metadata"]["name"])]
        assert comparable(got, wanted) == wanted, wanted["kind"]
    assert not any("prometheus.io/scrape" in str(o) for o in objects.values())
    assert ("Service", "federated-hpa-controller-metrics") not in objects


def comparable(obj: Obj, like: Obj) -> Obj:
    """`obj` with only the labels `like` has (Helm adds its own, which the manifests do not carry)."""
    obj = yaml.safe_load(yaml.safe_dump(obj))
    labels = obj["metadata"].pop("labels", None) or {}
    wanted = like["metadata"].get("labels") or {}
    if wanted:
        obj["metadata"]["labels"] = {k: v for k, v in labels.items() if k in wanted}
    return obj


def test_the_chart_and_the_kustomize_manifests_render_the_same_objects(
    helm: HelmTools, rendered: dict[str, list[Obj]]
) -> None:
    chart = by_key(rendered["default"])
    kustomize = [
        o
        for path in ("manifests/controller", "manifests/webhook")
        for o in helm.documents("kubectl", "kustomize", path)
        if o["kind"] != "Namespace"  # the chart leaves it to --create-namespace
    ]
    assert {"ClusterRole", "Role", "RoleBinding", "ClusterRoleBinding", "Deployment"} <= {
        o["kind"] for o in kustomize
    }
    for wanted in kustomize:
        key = (wanted["kind"], wanted["metadata"]["name"])
        assert key in chart, key
        assert comparable(chart[key], wanted) == wanted, key


def test_the_crds_are_the_manifests_crds() -> None:
    crds = REPO / CHART / "crds"
    assert sorted(p.name for p in crds.glob("*.yaml")) == sorted(
        p.name for p in (REPO / "manifests" / "crds").glob("*.yaml")
    )
    for path in crds.glob("*.yaml"):
        assert path.read_text() == (REPO / "manifests" / "crds" / path.name).read_text()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["--set=webhook.certificates.mode=vault"], "must be certManager or selfSigned"),
        (
            [
                "--set=webhook.certificates.mode=selfSigned",
                "--set=webhook.certificates.selfSigned.renewBeforeDays=90",
            ],
            "renewBeforeDays must be below days",
        ),
        (
            ["--set=metrics.enabled=false", "--set=metrics.serviceMonitor.enabled=true"],
            "needs metrics.enabled",
        ),
    ],
)
def test_contradictory_values_are_refused_with_the_reason(
    helm: HelmTools, values: list[str], message: str
) -> None:
    result = helm.run("helm", "template", "fhpa", CHART, *values)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize("mode", ["certManager", "selfSigned"])
def test_install_notes_tell_the_next_step_and_the_certificate_mode(helm: HelmTools, mode: str) -> None:
    result = helm.run(
        "helm",
        "install",
        "fhpa",
        CHART,
        "--namespace",
        "ops",
        "--dry-run=client",
        f"--set=webhook.certificates.mode={mode}",
    )
    assert result.returncode == 0, result.stderr
    notes = result.stdout.split("NOTES:", 1)[1]
    assert "fhpa cluster join <name> --kubeconfig <member kubeconfig> --namespace ops" in notes
    assert ("federated-hpa-cert-rotator" in notes) == (mode == "selfSigned")


@pytest.mark.parametrize("value_set", sorted(VALUE_SETS))
def test_every_rendered_container_command_is_one_the_fhpa_cli_accepts(
    rendered: dict[str, list[Obj]], value_set: str
) -> None:
    deployments = [o for o in rendered[value_set] if o["kind"] == "Deployment"]
    assert deployments
    for deployment in deployments:
        for spec in deployment["spec"]["template"]["spec"]["containers"]:
            try:
                build_parser().parse_args(spec["args"])
            except SystemExit as exc:  # argparse's way of refusing
                pytest.fail(f"{deployment['metadata']['name']}: {spec['args']} refused ({exc})")
