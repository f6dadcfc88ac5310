"""cert-manager and its cainjector, played for an InstallCluster: what they would do with the applied
Issuers, Certificates and ``cert-manager.io/inject-ca-from`` annotations, in one pass (``sync``).

Issuing: a Certificate whose Issuer is ``selfSigned`` (a CA, ``isCA: true``) gets a new CA in its
Secret; one whose Issuer is ``ca`` gets a serving certificate for its ``dnsNames`` signed by the CA in
the Issuer's Secret. Both Secrets hold ``tls.crt``, ``tls.key`` and ``ca.crt`` as cert-manager writes
them, and the Certificate's status becomes Ready. A Secret that already exists is kept (no renewal
here: renewal is cert-manager's own, tested by its project). Injection: every webhook
configuration annotated ``cert-manager.io/inject-ca-from: <namespace>/<certificate>`` gets that
Certificate Secret's ``ca.crt`` as the caBundle of each of its webhooks.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from certs.generate import build_ca, build_serving_cert
from certs.renewal import pem_pair
from tests.support.install_cluster import InstallCluster
from tests.support.realapi import WEBHOOK_COLLECTIONS

JSON = dict[str, Any]
INJECT = "cert-manager.io/inject-ca-from"
CERTIFICATES = "certificates.cert-manager.io"


def _days(duration: str | None, default: int = 90) -> int:
    hours = re.fullmatch(r"(\d+)h", duration or "")
    return max(1, int(hours[1]) // 24) if hours else default


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class CertManagerStandIn:
    def __init__(self, cluster: InstallCluster) -> None:
        self.cluster = cluster

    def sync(self) -> None:
        """Issue every Certificate without a Secret (CAs first), then inject the caBundles."""
        certificates = sorted(self.cluster.objects(CERTIFICATES), key=lambda c: not c["spec"].get("isCA"))
        for certificate in certificates:
            self._issue(certificate)
        self._inject()

    def _issue(self, certificate: JSON) -> None:
        namespace = certificate["metadata"]["namespace"]
        spec = certificate["spec"]
        if self.cluster.read("secrets", namespace, spec["secretName"]) is None:
            issuer = self.cluster.read("issuers.cert-manager.io", namespace, spec["issuerRef"]["name"])
            assert issuer is not None, f"Issuer {spec['issuerRef']['name']} was not applied"
            now = dt.datetime.now(dt.UTC)
            if "selfSigned" in issuer["spec"]:
                assert spec.get("isCA"), "the chart's self-signed Issuer signs its CA only"
                ca_pem, key_pem = pem_pair(*build_ca(spec["commonName"], _days(spec.get("duration")), now))
                files = {"tls.crt": ca_pem, "tls.key": key_pem, "ca.crt": ca_pem}
            else:
                ca_secret = self.cluster.read("secrets", namespace, issuer["spec"]["ca"]["secretName"])
                assert ca_secret is not None, "the CA Issuer's Secret is issued first"
                ca_pem = base64.b64decode(ca_secret["data"]["tls.crt"])
                ca_key = serialization.load_pem_private_key(
                    base64.b64decode(ca_secret["data"]["tls.key"]), None
                )
                assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
                ca = x509.load_pem_x509_certificate(ca_pem)
                leaf = build_serving_cert(
                    ca, ca_key, list(spec["dnsNames"]), [], _days(spec.get("duration")), now
                )
                cert_pem, key_pem = pem_pair(*leaf)
                files = {"tls.crt": cert_pem, "tls.key": key_pem, "ca.crt": ca_pem}
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "kubernetes.io/tls",
                "metadata": {"name": spec["secretName"], "namespace": namespace},
                "data": {k: _b64(v) for k, v in files.items()},
            }
            self.cluster.write("secrets", secret)
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "issued by the test stand-in",
        }
        self.cluster.fake.store.set_status(
            CERTIFICATES, namespace, certificate["metadata"]["name"], {"conditions": [ready]}
        )

    def _inject(self) -> None:
        for collection in WEBHOOK_COLLECTIONS.values():
            for config in self.cluster.objects(collection):
                source = (config["metadata"].get("annotations") or {}).get(INJECT)
                if source:
                    self._inject_into(collection, config, source)

    def _inject_into(self, collection: str, config: JSON, source: str) -> None:
        namespace, name = source.split("/", 1)
        certificate = self.cluster.read(CERTIFICATES, namespace, name)
        assert certificate is not None, f"{config['metadata']['name']}: no Certificate {source}"
        secret = self.cluster.read("secrets", namespace, certificate["spec"]["secretName"])
        assert secret is not None, f"Certificate {source} was not issued"
        for hook in config.get("webhooks") or []:
            hook["clientConfig"]["caBundle"] = secret["data"]["ca.crt"]
        self.cluster.write(collection, config)
