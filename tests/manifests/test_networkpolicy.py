"""The NetworkPolicies shipped for the controller and the webhook (review M4, L4), rendered by the real
`kubectl kustomize`: they select the right pods, admit only the serving port, and are in the bundles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.kustomize import by_kind_and_name, kustomize, needs_kubectl

REPO = Path(__file__).resolve().parents[2]
pytestmark = needs_kubectl


def render(directory: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return by_kind_and_name(kustomize(directory))


def pod_labels(objects: dict[tuple[str, str], dict[str, Any]], name: str) -> dict[str, str]:
    return dict(objects[("Deployment", name)]["spec"]["template"]["metadata"]["labels"])


@pytest.mark.parametrize(
    ("directory", "name", "port"),
    [
        ("manifests/controller", "federated-hpa-controller", 8080),
        ("manifests/webhook", "federated-hpa-webhook", 8443),
    ],
)
def test_each_component_ships_a_network_policy_for_its_serving_port(
    directory: str, name: str, port: int
) -> None:
    objects = render(REPO / directory)
    policy = objects[("NetworkPolicy", name)]
    assert policy["metadata"]["namespace"] == "federated-hpa-system"
    selector = policy["spec"]["podSelector"]["matchLabels"]
    labels = pod_labels(objects, name)
    assert selector.items() <= labels.items()  # it selects the component's pods
    assert "Ingress" in policy["spec"]["policyTypes"]
    for rule in policy["spec"]["ingress"]:
        assert [p["port"] for p in rule["ports"]] == [port]  # no other port is reachable
        assert rule["from"]  # never "from anywhere in the cluster" by omission
    container = objects[("Deployment", name)]["spec"]["template"]["spec"]["containers"][0]
    assert port in [p["containerPort"] for p in container["ports"]]


def test_the_webhook_policy_keeps_pods_out_and_denies_egress() -> None:
    policy = render(REPO / "manifests/webhook")[("NetworkPolicy", "federated-hpa-webhook")]
    blocks = [f["ipBlock"] for rule in policy["spec"]["ingress"] for f in rule["from"] if "ipBlock" in f]
    assert blocks and all(b.get("except") for b in blocks)  # the pod CIDR is excluded
    assert "Egress" in policy["spec"]["policyTypes"] and policy["spec"]["egress"] == []


def test_the_webhook_policy_admits_the_api_server_over_ipv6_too() -> None:
    """N14: an IPv4-only policy shuts out an API server that connects over IPv6 (dual-stack clusters)."""
    import ipaddress

    policy = render(REPO / "manifests/webhook")[("NetworkPolicy", "federated-hpa-webhook")]
    blocks = [f["ipBlock"] for rule in policy["spec"]["ingress"] for f in rule["from"] if "ipBlock" in f]
    versions = {ipaddress.ip_network(b["cidr"]).version for b in blocks}
    assert versions == {4, 6}
    for block in blocks:  # each family keeps its pods out
        network = ipaddress.ip_network(block["cidr"])
        assert all(ipaddress.ip_network(e).version == network.version for e in block["except"])
