"""End to end: the real API server tier calls our webhook (gunicorn, TLS, certificates from `fhpa certs
generate`) for creates and updates of both kinds, through the Python client and the real `kubectl`.

The webhook configurations are the ones in manifests/webhook, pointed at loopback. The CRDs are the
project's, with their schema defaults stripped in this server, so every default on a stored object can
only have come from the mutating webhook.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from fhpa_api.defaulting import apply_defaults
from fhpa_api.validation import validate
from tests.support.builds import Binaries
from tests.support.realapi import RealAPIServer
from tests.support.reviews import API_VERSION, cronfhpa, fhpa
from tests.support.webhook_serving import REPO, RunningWebhook, generate_certs, run_webhook

pytestmark = [pytest.mark.realapi, pytest.mark.slow]

CRDS = sorted((REPO / "manifests" / "crds").glob("*.yaml"))
EXAMPLES = REPO / "examples"
CONFIGS = REPO / "manifests" / "webhook" / "base" / "webhookconfigurations.yaml"
VALIDATING_NAME = "validate.federated-hpa.autoscaling.karmada.io"
GROUP = "autoscaling.karmada.io"
PLURALS = {"FederatedHPA": "federatedhpas", "CronFederatedHPA": "cronfederatedhpas"}


def strip_schema_defaults(node: Any) -> Any:
    """The CRD with no `default` in its schema (a schema node is a mapping with a `type` or `properties`)."""
    if isinstance(node, dict):
        return {
            k: strip_schema_defaults(v)
            for k, v in node.items()
            if not (k == "default" and ({"type", "properties", "x-kubernetes-int-or-string"} & node.keys()))
        }
    if isinstance(node, list):
        return [strip_schema_defaults(v) for v in node]
    return node


@contextmanager
def server_with_crds(binaries: Binaries, name: str) -> Iterator[RealAPIServer]:
    """A real API server with the project's CRDs as shipped (schema defaults kept), no webhook yet."""
    server = RealAPIServer(name=name, binaries=binaries)
    server.start()
    try:
        server.install_crds([d for path in CRDS for d in yaml.safe_load_all(path.read_text()) if d])
        yield server
    finally:
        server.stop()


def loopback_configs(port: int, ca_pem: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The manifests' webhook configurations, calling https://127.0.0.1:PORT with this CA."""
    import base64

    mutating: list[dict[str, Any]] = []
    validating: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(CONFIGS.read_text()):
        doc = copy.deepcopy(doc)
        doc["metadata"].pop("annotations", None)
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": base64.b64encode(ca_pem).decode(),
            }
        (mutating if doc["kind"] == "MutatingWebhookConfiguration" else validating).append(doc)
    return mutating, validating


@pytest.fixture(scope="module")
def cluster(realapi_binaries: Binaries) -> Iterator[RealAPIServer]:
    server = RealAPIServer(name="webhook-e2e", binaries=realapi_binaries)
    server.start()
    try:
        docs = [d for path in CRDS for d in yaml.safe_load_all(path.read_text()) if d]
        server.install_crds([strip_schema_defaults(d) for d in docs])
        for namespace in ("default", "shop", "e2e"):
            server.create_namespace(namespace)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def webhook(
    cluster: RealAPIServer, certs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningWebhook]:
    with run_webhook(certs, tmp_path_factory.mktemp("logs")) as server:
        mutating, validating = loopback_configs(server.port, (certs / "ca.crt").read_bytes())
        cluster.set_webhooks(mutating=mutating, validating=validating)
        yield server


def _path(obj: dict[str, Any], name: str | None = None) -> str:
    namespace = obj["metadata"].get("namespace", "default")
    base = f"/apis/{API_VERSION}/namespaces/{namespace}/{PLURALS[obj['kind']]}"
    return f"{base}/{name}" if name else base


def create(cluster: RealAPIServer, obj: dict[str, Any], dry_run: bool = False) -> tuple[int, Any]:
    body = copy.deepcopy(obj)
    body["metadata"].pop("uid", None)
    return cluster.request("POST", _path(body) + ("?dryRun=All" if dry_run else ""), body)


def unique(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"]["name"] = f"{obj['metadata']['name']}-{uuid.uuid4().hex[:6]}"
    obj["metadata"]["namespace"] = "e2e"
    return obj


def expected_denial(obj: dict[str, Any]) -> str:
    """What the API server must say: the webhook's name, then every field error of our validation."""
    errors = validate(apply_defaults(obj)).errors
    assert errors, "the test object must be invalid"
    return f'admission webhook "{VALIDATING_NAME}" denied the request: ' + "; ".join(map(str, errors))


@pytest.mark.parametrize("make", [fhpa, cronfhpa], ids=["FederatedHPA", "CronFederatedHPA"])
def test_a_created_object_carries_the_webhooks_defaults(
    cluster: RealAPIServer, webhook: RunningWebhook, make: Any
) -> None:
    obj = unique(make())
    status, stored = create(cluster, obj)
    assert status == 201, stored
    assert stored["spec"] == apply_defaults(obj)["spec"]
    assert stored["spec"] != obj["spec"]  # something was defaulted, and the schema defaults nothing here


def test_invalid_objects_are_refused_with_the_field_message(
    cluster: RealAPIServer, webhook: RunningWebhook
) -> None:
    bad_fhpa = unique(
        fhpa(
            clusterAffinity={
                "fieldSelector": {
                    "matchExpressions": [{"key": "provider", "operator": "Exists", "values": ["aws"]}]
                }
            },
            scaleTargetRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "a/b"},
        )
    )
    bad_cron = unique(
        cronfhpa(
            rules=[
                {"name": "a", "schedule": "61 * * * *", "targetMinReplicas": 1},
                {"name": "b", "schedule": "0 8 * * *", "timeZone": "Mars/Olympus", "targetMinReplicas": 1},
            ]
        )
    )
    for obj in (bad_fhpa, bad_cron):
        for dry_run in (False, True):
            status, answer = create(cluster, obj, dry_run=dry_run)
            assert status == 403, answer["message"]
            assert answer["message"] == expected_denial(obj)
        assert cluster.request("GET", _path(obj, obj["metadata"]["name"]))[0] == 404


def test_updates_go_through_both_webhooks(cluster: RealAPIServer, webhook: RunningWebhook) -> None:
    obj = unique(fhpa(minReplicas=2))
    assert create(cluster, obj)[0] == 201
    path = _path(obj, obj["metadata"]["name"])
    status, current = cluster.request("GET", path)
    bad = copy.deepcopy(current)
    bad["spec"]["clusterAffinity"] = {
        "fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}
    }
    status, answer = cluster.request("PUT", path, bad)
    assert status == 403 and answer["message"] == expected_denial(bad)

    cleared = copy.deepcopy(current)
    del cleared["spec"]["minReplicas"], cleared["spec"]["metrics"]
    status, updated = cluster.request("PUT", path, cleared)
    assert status == 200, updated
    assert updated["spec"]["minReplicas"] == 1  # defaulted again on UPDATE
    assert updated["spec"]["metrics"] == apply_defaults(fhpa())["spec"]["metrics"]


def test_a_bare_number_tolerance_is_stored_as_a_quantity_string(
    cluster: RealAPIServer, webhook: RunningWebhook
) -> None:
    """As a native HPA takes `tolerance: 0.05`, so does a FederatedHPA: the mutating webhook rewrites it
    before the schema (int-or-string) would refuse the float."""
    obj = unique(fhpa(behavior={"scaleUp": {"tolerance": 0.05}, "scaleDown": {"tolerance": 0.1}}))
    status, stored = create(cluster, obj)
    assert status == 201, stored
    assert stored["spec"]["behavior"]["scaleUp"]["tolerance"] == "50m"
    assert stored["spec"]["behavior"]["scaleDown"]["tolerance"] == "100m"


def test_python_client_sees_the_denial(cluster: RealAPIServer, webhook: RunningWebhook) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = client.CustomObjectsApi(cluster.api_client())
    obj = unique(fhpa(scaleTargetRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": ".."}))
    with pytest.raises(ApiException) as caught:
        api.create_namespaced_custom_object("autoscaling.karmada.io", "v1alpha1", "e2e", "federatedhpas", obj)
    assert caught.value.status == 403
    assert json.loads(caught.value.body or "{}")["message"] == expected_denial(obj)
    good: Any = api.create_namespaced_custom_object(
        "autoscaling.karmada.io", "v1alpha1", "e2e", "federatedhpas", unique(fhpa())
    )
    assert good["spec"]["scaleAssist"] is True


def _break(doc: dict[str, Any]) -> dict[str, Any]:
    """A hand-broken copy the schema lets through: a '/' in the target's name, a minute out of range."""
    bad = copy.deepcopy(doc)
    if bad["kind"] == "FederatedHPA":
        bad["spec"]["scaleTargetRef"]["name"] = "a/b"
    else:
        bad["spec"]["rules"][0]["schedule"] = "61 * * * *"
    return bad


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_is_stored_with_defaults_and_its_broken_copy_refused(
    cluster: RealAPIServer, webhook: RunningWebhook, name: str
) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    api = client.CustomObjectsApi(cluster.api_client())
    doc = unique(_example(name))
    plural = PLURALS[doc["kind"]]
    stored: Any = api.create_namespaced_custom_object(GROUP, "v1alpha1", "e2e", plural, doc)
    assert stored["spec"] == apply_defaults(doc)["spec"]
    bad = unique(_break(_example(name)))
    with pytest.raises(ApiException) as caught:
        api.create_namespaced_custom_object(GROUP, "v1alpha1", "e2e", plural, bad)
    assert caught.value.status == 403
    assert json.loads(caught.value.body or "{}")["message"] == expected_denial(bad)


# --- kubectl, the way users meet it ------------------------------------------------------------------


def _example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return doc


def _write(tmp_path: Path, name: str, doc: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def test_kubectl_apply_get_and_denials(
    cluster: RealAPIServer, webhook: RunningWebhook, tmp_path: Path
) -> None:
    cache = tmp_path / "kubecache"

    def kubectl(*args: str) -> Any:
        return cluster.kubectl(*args, cache_dir=cache)

    fhpa_file, cron_file = (
        EXAMPLES / "federatedhpa-duplicated.yaml",
        EXAMPLES / "cronfederatedhpa-federatedhpa.yaml",
    )
    for path in (fhpa_file, cron_file):
        result = kubectl("apply", "-f", str(path))
        assert result.returncode == 0, result.stderr
        assert "created" in result.stdout

    stored = json.loads(kubectl("get", "fhpa", "storefront", "-n", "shop", "-o", "json").stdout)
    assert stored["spec"] == apply_defaults(_example("federatedhpa-duplicated.yaml"))["spec"]

    table = kubectl("get", "fhpa", "-n", "shop")
    assert table.returncode == 0, table.stderr
    print(table.stdout)
    header, row = table.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "REFERENCE", "MINPODS", "MAXPODS", "REPLICAS", "POLICY", "AGE"]
    assert row.split()[:4] == ["storefront", "storefront", "3", "20"]
    cron_table = kubectl("get", "cronfhpa", "-n", "shop").stdout.splitlines()
    assert cron_table[0].split() == ["NAME", "REFERENCE-KIND", "REFERENCE-NAME", "NEXT", "LAST-RESULT", "AGE"]
    assert cron_table[1].split()[:3] == ["storefront-business-hours", "FederatedHPA", "storefront"]

    bad = _example("cronfederatedhpa-federatedhpa.yaml")
    bad["metadata"]["name"] = "broken-schedule"
    bad["spec"]["rules"][0]["schedule"] = "30 25 * * MON-FRI"
    result = kubectl("apply", "-f", str(_write(tmp_path, "bad-cron.yaml", bad)))
    print(result.stderr)  # shown with -s: what a user sees
    assert result.returncode == 1
    assert (
        f'admission webhook "{VALIDATING_NAME}" denied the request: spec.rules[0].schedule:' in result.stderr
    )
    assert expected_denial(bad).split("denied the request: ")[1] in result.stderr

    changed = _example("federatedhpa-duplicated.yaml")
    changed["spec"]["clusterAffinity"]["fieldSelector"] = {
        "matchExpressions": [{"key": "region", "operator": "DoesNotExist", "values": ["eu"]}]
    }
    result = kubectl("apply", "-f", str(_write(tmp_path, "bad-fhpa.yaml", changed)))
    assert result.returncode == 1
    assert (
        "error when patching" in result.stderr and "denied the request: spec.clusterAffinity" in result.stderr
    )


def test_a_ca_that_does_not_match_is_refused(
    cluster: RealAPIServer, webhook: RunningWebhook, tmp_path: Path
) -> None:
    """Last in the module: it swaps the configurations' CA for another and restores them after."""
    generate_certs(tmp_path / "other")
    wrong = loopback_configs(webhook.port, (tmp_path / "other" / "ca.crt").read_bytes())
    right = loopback_configs(webhook.port, (webhook.cert_dir / "ca.crt").read_bytes())
    cluster.set_webhooks(mutating=wrong[0], validating=wrong[1])
    try:
        status, answer = create(cluster, unique(fhpa()))
        assert status == 500, answer
        assert "failed calling webhook" in answer["message"]
        assert "x509" in answer["message"] or "certificate" in answer["message"]
    finally:
        cluster.set_webhooks(mutating=right[0], validating=right[1])
    assert create(cluster, unique(fhpa()))[0] == 201
