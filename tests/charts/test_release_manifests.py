"""`make release-manifests` (scripts/release-manifests.sh): one install.yaml with the image as a parameter."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.support.helm import REPO, HelmTools


def release_manifests(helm: HelmTools, out: Path, image: str = "example.com/team/fhpa:2.0.1") -> list[dict]:
    """`scripts/release-manifests.sh IMAGE OUT` with the extracted helm; the documents it wrote."""
    subprocess.run(
        ["bash", "scripts/release-manifests.sh", image, str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
        env={"FHPA_HELM_DIR": str(helm.helm.parent.parent), "PATH": "/usr/bin:/bin"},
    )
    return [d for d in yaml.safe_load_all(out.read_text()) if d]


def test_install_yaml_holds_crds_first_then_everything_with_the_given_image(
    helm: HelmTools, tmp_path: Path
) -> None:
    out = tmp_path / "install.yaml"
    docs = release_manifests(helm, out)
    kinds = [d["kind"] for d in docs]
    assert kinds[:3] == ["CustomResourceDefinition", "CustomResourceDefinition", "Namespace"]
    assert {"ClusterRole", "Role", "Deployment", "MutatingWebhookConfiguration", "Certificate"} <= set(kinds)
    assert "federated-hpa-cert-rotator" not in out.read_text()  # cert-manager issues the certificates
    images = {
        c["image"]
        for d in docs
        if d["kind"] == "Deployment"
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert images == {"example.com/team/fhpa:2.0.1"}
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] == "Deployment"} == {
        "federated-hpa-system"
    }


def test_an_image_without_a_tag_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", "scripts/release-manifests.sh", "fhpa", str(tmp_path / "install.yaml")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "repository:tag" in result.stderr
