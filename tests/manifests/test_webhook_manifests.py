"""manifests/webhook rendered by the real `kubectl kustomize`: the cert-manager base and the self-signed
overlay fed by `fhpa certs generate`, checked against what the server and the API server expect."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

import pytest

from certs.generate import service_dns_names
from fhpa.cli import build_parser
from tests.support.kustomize import by_kind_and_name, kustomize, needs_kubectl
from tests.support.webhook_serving import REPO, fhpa_command

MANIFESTS = REPO / "manifests" / "webhook"
SERVICE, NAMESPACE = "federated-hpa-webhook", "federated-hpa-system"

pytestmark = needs_kubectl


def rendered(directory: Path, home: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return by_kind_and_name(kustomize(directory, home))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    return rendered(MANIFESTS, tmp_path_factory.mktemp("kube"))


@pytest.fixture(scope="module")
def self_signed(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[tuple[str, str], dict[str, Any]], Path]:
    copy = tmp_path_factory.mktemp("manifests") / "webhook"
    shutil.copytree(MANIFESTS, copy, ignore=shutil.ignore_patterns("certs"))
    certs = copy / "overlays" / "self-signed" / "certs"
    fhpa_command("certs", "generate", "--out", str(certs), "--service", SERVICE, "--namespace", NAMESPACE)
    return rendered(copy / "overlays" / "self-signed", tmp_path_factory.mktemp("kube")), certs


def _webhooks(docs: dict[tuple[str, str], dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    kinds = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    return [(kind, hook) for kind in kinds for hook in docs[(kind, SERVICE)]["webhooks"]]


def test_deployment_runs_our_server_hardened_with_probes(base: dict[tuple[str, str], dict[str, Any]]) -> None:
    deploy = base[("Deployment", SERVICE)]
    assert deploy["metadata"]["namespace"] == NAMESPACE
    spec = deploy["spec"]["template"]["spec"]
    assert deploy["spec"]["replicas"] == 2
    assert spec["securityContext"]["runAsNonRoot"] is True
    (container,) = spec["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert {"requests", "limits"} <= set(container["resources"])
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}
    args = build_parser().parse_args(container["args"])  # the flags exist and parse
    assert (args.command, args.webhook_command, args.bind) == ("webhook", "serve", "0.0.0.0:8443")
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["certs"]["readOnly"] is True and mounts["certs"]["mountPath"] == str(args.cert_dir)
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["certs"]["secret"]["secretName"] == "federated-hpa-webhook-tls"
    assert container["ports"] == [{"name": "https", "containerPort": 8443, "protocol": "TCP"}]


def test_service_and_disruption_budget(base: dict[tuple[str, str], dict[str, Any]]) -> None:
    service = base[("Service", SERVICE)]
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}
    ]
    pod_labels = base[("Deployment", SERVICE)]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    pdb = base[("PodDisruptionBudget", SERVICE)]
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()


def test_webhook_configurations(base: dict[tuple[str, str], dict[str, Any]]) -> None:
    paths = {"MutatingWebhookConfiguration": "/mutate", "ValidatingWebhookConfiguration": "/validate"}
    hooks = _webhooks(base)
    assert len(hooks) == 2
    for kind, hook in hooks:
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["sideEffects"] == "None" and hook["failurePolicy"] == "Fail"
        assert hook["timeoutSeconds"] == 5 and hook["matchPolicy"] == "Equivalent"
        assert hook["clientConfig"]["service"] == {
            "name": SERVICE,
            "namespace": NAMESPACE,
            "path": paths[kind],
            "port": 443,
        }
        (rule,) = hook["rules"]
        assert rule["apiGroups"] == ["autoscaling.karmada.io"]
        assert sorted(rule["operations"]) == ["CREATE", "UPDATE"]
        assert sorted(rule["resources"]) == ["cronfederatedhpas", "federatedhpas"]
        # metadata-only updates and updates of an object being deleted never wait on the webhook
        assert [c["name"] for c in hook["matchConditions"]] == ["not-being-deleted", "spec-changes"]


def test_cert_manager_issues_the_serving_certificate(base: dict[tuple[str, str], dict[str, Any]]) -> None:
    serving = base[("Certificate", "federated-hpa-webhook-serving")]
    assert serving["spec"]["secretName"] == "federated-hpa-webhook-tls"
    assert serving["spec"]["dnsNames"] == service_dns_names(SERVICE, NAMESPACE)
    issuer = base[("Issuer", serving["spec"]["issuerRef"]["name"])]
    assert base[("Certificate", issuer["spec"]["ca"]["secretName"])]["spec"]["isCA"] is True
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = base[(kind, SERVICE)]["metadata"]["annotations"]
        assert annotations["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/federated-hpa-webhook-serving"


def test_self_signed_overlay_uses_fhpa_certs_generate_output(
    self_signed: tuple[dict[tuple[str, str], dict[str, Any]], Path],
) -> None:
    docs, certs = self_signed
    assert not [key for key in docs if key[0] in ("Issuer", "Certificate")]
    secret = docs[("Secret", "federated-hpa-webhook-tls")]
    assert secret["metadata"]["namespace"] == NAMESPACE and secret["type"] == "kubernetes.io/tls"
    for name in ("tls.crt", "tls.key"):
        assert base64.b64decode(secret["data"][name]) == (certs / name).read_bytes()
    assert "ca.key" not in secret["data"]
    for kind, hook in _webhooks(docs):
        assert "cert-manager.io/inject-ca-from" not in docs[(kind, SERVICE)]["metadata"].get(
            "annotations", {}
        )
        bundle = "".join(hook["clientConfig"]["caBundle"].split())
        assert base64.b64decode(bundle) == (certs / "ca.crt").read_bytes()
    assert docs[("Deployment", SERVICE)] is not None
