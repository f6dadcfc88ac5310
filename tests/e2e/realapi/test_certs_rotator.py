"""The self-signed rotator against the real API server tier: a serving certificate 90 s from expiry
is renewed under the same CA, the webhook configurations get the CA (they held a stale one), the webhook
reloads the renewed Secret, and the API server's admission calls then succeed through the new trust.

The Secrets and the webhook configurations live in the tier's core stub, which is what the API server
reads its webhooks from; the Secret's files are copied to the webhook's directory as a kubelet would.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from kubernetes import client

from certs.generate import build_ca, build_serving_cert, service_dns_names
from certs.renewal import Policy, pem_pair
from certs.rotator import Target, rotate_once
from tests.e2e.realapi.test_webhook import create, loopback_configs, server_with_crds
from tests.support.builds import Binaries
from tests.support.reviews import fhpa
from tests.support.webhook_serving import NAMESPACE, SERVICE, run_webhook

pytestmark = [pytest.mark.realapi, pytest.mark.slow]

LOOPBACK = ipaddress.ip_address("127.0.0.1")
POLICY = Policy(dns_names=service_dns_names(SERVICE, NAMESPACE), ips=[LOOPBACK], days=90)
TARGET = Target(namespace=NAMESPACE)


def seed(core: client.CoreV1Api, lifetime: dt.timedelta) -> bytes:
    """A CA and a serving certificate that ends `lifetime` from now, stored as the rotator stores them."""
    now = dt.datetime.now(dt.UTC)
    ca, key = build_ca("seed CA", 3650, now)
    issued_at = now - dt.timedelta(days=1) + lifetime  # a one-day certificate issued long enough ago
    leaf = pem_pair(*build_serving_cert(ca, key, list(POLICY.dns_names), [LOOPBACK], 1, issued_at))
    ca_pem, ca_key = pem_pair(ca, key)
    for name, data in (
        (TARGET.ca_secret, {"ca.crt": ca_pem, "ca.key": ca_key}),
        (TARGET.tls_secret, {"tls.crt": leaf[0], "tls.key": leaf[1], "ca.crt": ca_pem}),
    ):
        body = client.V1Secret(
            metadata=client.V1ObjectMeta(name=name),
            data={k: base64.b64encode(v).decode() for k, v in data.items()},
        )
        core.create_namespaced_secret(NAMESPACE, body)
    return ca_pem


def project(core: client.CoreV1Api, cert_dir: Path) -> bytes:
    """Copy the serving Secret into the webhook's directory, key first (as a renewal lands)."""
    secret = core.read_namespaced_secret(TARGET.tls_secret, NAMESPACE)
    files = {k: base64.b64decode(v) for k, v in secret.data.items()}
    for name in ("ca.crt", "tls.key", "tls.crt"):
        tmp = cert_dir / f".{name}.new"
        tmp.write_bytes(files[name])
        tmp.replace(cert_dir / name)
    return files["tls.crt"]


def served_not_after(port: int) -> dt.datetime:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    pem = ssl.get_server_certificate(("127.0.0.1", port), timeout=5)
    return x509.load_pem_x509_certificate(pem.encode()).not_valid_after_utc


def until(check: Any, what: str, deadline: float = 20) -> Any:
    stop = time.monotonic() + deadline
    while True:
        result = check()
        if result or time.monotonic() > stop:
            assert result, what
            return result
        time.sleep(0.2)


def test_a_short_lived_certificate_is_renewed_and_admission_follows_the_new_trust(
    realapi_binaries: Binaries, tmp_path: Path
) -> None:
    with server_with_crds(realapi_binaries, "rotation") as server:
        server.create_namespace("default")
        core_client = client.ApiClient(client.Configuration(host=server.core_url))
        core = client.CoreV1Api(core_client)
        ca_pem = seed(core, dt.timedelta(seconds=90))
        cert_dir = tmp_path / "certs"
        cert_dir.mkdir()
        project(core, cert_dir)
        with run_webhook(cert_dir, tmp_path) as webhook:
            stale_ca = pem_pair(*build_ca("stale", 30, dt.datetime.now(dt.UTC)))[0]
            mutating, validating = loopback_configs(webhook.port, stale_ca)
            server.set_webhooks(mutating=mutating, validating=validating)
            status, body = create(server, fhpa("before"))
            assert status == 500 and "failed calling webhook" in body["message"], body

            plan = rotate_once(core_client, TARGET, POLICY)
            assert plan.ca is None and plan.serving is not None, plan.reason
            assert "expires at" in plan.reason
            renewed = x509.load_pem_x509_certificate(project(core, cert_dir)).not_valid_after_utc
            assert renewed - dt.datetime.now(dt.UTC) > dt.timedelta(days=89)
            until(
                lambda: served_not_after(webhook.port) == renewed,
                "the webhook serves the renewed certificate",
            )

            admission = client.AdmissionregistrationV1Api(core_client)
            for config in (
                admission.read_validating_webhook_configuration("federated-hpa-webhook"),
                admission.read_mutating_webhook_configuration("federated-hpa-webhook"),
            ):
                assert {h.client_config.ca_bundle for h in config.webhooks} == {plan.ca_bundle}
            assert plan.ca_bundle_pem == ca_pem  # renewed under the CA the API server now trusts
            until(lambda: create(server, fhpa("after"))[0] == 201, "admission succeeds with the new caBundle")

            again = rotate_once(core_client, TARGET, POLICY)
            assert not again.changes and again.reason == "up to date"
