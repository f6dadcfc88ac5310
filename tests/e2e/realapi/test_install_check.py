"""docs/install.md's webhook check, run word for word with the real `kubectl` against the real API server
tier: it succeeds with the webhook registered and serving, and fails without it (the CRDs as shipped,
schema defaults kept, so a dry run alone would look the same either way)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.realapi.test_webhook import loopback_configs, server_with_crds
from tests.support.builds import Binaries
from tests.support.realapi import RealAPIServer
from tests.support.webhook_serving import REPO, RunningWebhook

pytestmark = [pytest.mark.realapi, pytest.mark.slow]

DOC = REPO / "docs" / "install.md"


def the_check() -> str:
    """The doc's one shell block that looks for the webhook's refusal."""
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S)
    (check,) = [b for b in blocks if "denied the request" in b]
    return str(check)


@pytest.fixture(scope="module")
def cluster(realapi_binaries: Binaries) -> Iterator[RealAPIServer]:
    with server_with_crds(realapi_binaries, "install-check") as server:
        yield server


def run_check(cluster: RealAPIServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = cluster.kubectl_env(tmp_path / "kubecache")
    kubectl = env.get("FHPA_KUBECTL") or shutil.which("kubectl") or "/usr/bin/kubectl"
    env["PATH"] = f"{Path(kubectl).parent}:{env.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-c", the_check()], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_install_docs_webhook_check_fails_without_the_webhook_and_passes_with_it(
    cluster: RealAPIServer, webhook_process: RunningWebhook, certs: Path, tmp_path: Path
) -> None:
    without = run_check(cluster, tmp_path)
    assert without.returncode == 1 and without.stdout == "", without

    mutating, validating = loopback_configs(webhook_process.port, (certs / "ca.crt").read_bytes())
    cluster.set_webhooks(mutating=mutating, validating=validating)
    try:
        with_webhook = run_check(cluster, tmp_path)
    finally:
        cluster.set_webhooks(mutating=[], validating=[])
    assert with_webhook.returncode == 0, with_webhook
    assert 'admission webhook "validate.federated-hpa.autoscaling.karmada.io" denied the request' in (
        with_webhook.stdout
    )
    status, listed = cluster.request("GET", "/apis/autoscaling.karmada.io/v1alpha1/federatedhpas")
    assert status == 200 and listed["items"] == []  # a dry run: nothing stored
