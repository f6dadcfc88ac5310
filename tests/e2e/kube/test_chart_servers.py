"""The chart's rendered objects, applied with a server-side dry run to real API servers.

Two tiers serve the kinds between them: the real API server tier (a current apiextensions-apiserver)
takes the CRDs, with their CEL rules; the kube tier (a whole Kubernetes v1.20 control plane) takes
everything else the chart renders except what v1.20 does not serve: `policy/v1` PodDisruptionBudgets
(v1.21+), and the kinds whose CRDs are not installed there (cert-manager's Issuer and Certificate,
prometheus-operator's ServiceMonitor), and the webhooks' matchConditions (1.28+). Those are listed,
not silently dropped.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.charts.test_chart import CHART, NAMESPACE, VALUE_SETS, render
from tests.support.helm import REPO, HelmTools
from tests.support.kubemember import KubeMember
from tests.support.realapi import RealAPIServer

NOT_ON_V1_20 = {
    ("policy/v1", "PodDisruptionBudget"),
    ("cert-manager.io/v1", "Issuer"),
    ("cert-manager.io/v1", "Certificate"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
}


def without_match_conditions(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a v1.20 server can take it by server-side apply: matchConditions (1.28+) are an
    undeclared field there, which a typed apply patch refuses (a create or a client-side apply drops
    it instead). The chart's kubeVersion (>= 1.28) keeps `helm install` off such servers."""
    obj = copy.deepcopy(obj)
    for hook in obj.get("webhooks") or []:
        hook.pop("matchConditions", None)
    return obj


def dry_run(helm: HelmTools, kubeconfig: Path, objects: list[dict[str, Any]], *flags: str) -> str:
    """`kubectl apply --server-side --dry-run=server` of the objects; their `kind/name` lines."""
    result = helm.run(
        "kubectl",
        "apply",
        "--server-side",
        "--dry-run=server",
        "--field-manager=helm-chart-test",
        *flags,
        "-f",
        "-",
        env={"KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(kubeconfig.parent / "kubecache")},
        input=yaml.safe_dump_all(objects),
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.realapi
def test_the_chart_crds_pass_a_server_side_dry_run(helm: HelmTools, realapi: RealAPIServer) -> None:
    crds = [
        doc
        for path in sorted((REPO / CHART / "crds").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    out = dry_run(helm, realapi.kubeconfig_path, crds)
    for crd in crds:
        assert (
            f"customresourcedefinition.apiextensions.k8s.io/{crd['metadata']['name']} serverside-applied"
            in out
        )


@pytest.mark.kube
@pytest.mark.parametrize("value_set", sorted(VALUE_SETS))
def test_every_value_set_passes_a_server_side_dry_run(
    helm: HelmTools, kube_members: dict[str, KubeMember], value_set: str, tmp_path: Path
) -> None:
    member = kube_members["m1"]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(member.kubeconfig()))
    if not member.request("GET", f"/api/v1/namespaces/{NAMESPACE}")[1].get("metadata"):
        member.create_namespace(NAMESPACE)
    objects = render(helm, *VALUE_SETS[value_set])
    served = [o for o in objects if (o["apiVersion"], o["kind"]) not in NOT_ON_V1_20]
    out = dry_run(helm, kubeconfig, [without_match_conditions(o) for o in served])
    assert out.count("serverside-applied (server dry run)") == len(served), out
