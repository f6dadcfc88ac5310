"""A throw-away certificate authority for the real-server harnesses: their admin client certificates,
serving certificates and the webhook servers' certificates, made with the same code as `fhpa certs
generate`."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from certs.generate import build_ca, issue_certificate


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


class CertificateAuthority:
    """A throw-away CA (valid 7 days) that signs client and serving certificates, built with the same
    code as `fhpa certs generate`."""

    def __init__(self, directory: Path, common_name: str = "fhpa-realapi-ca") -> None:
        self.directory = directory
        self.cert, self.key = build_ca(common_name, days=7, now=datetime.datetime.now(datetime.UTC))
        self.cert_path = directory / "ca.crt"
        self.cert_path.write_bytes(self.pem)

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(
        self,
        name: str,
        *,
        common_name: str,
        organizations: Sequence[str] = (),
        hosts: Sequence[str] = (),
        client: bool = False,
        server: bool = False,
    ) -> tuple[Path, Path]:
        """Write ``<name>.crt`` and ``<name>.key`` into the CA's directory; return their paths."""
        ips, dns_names = [], []
        for host in hosts:
            try:
                ips.append(ipaddress.ip_address(host))
            except ValueError:
                dns_names.append(host)
        cert, key = issue_certificate(
            self.cert,
            self.key,
            common_name,
            days=7,
            now=datetime.datetime.now(datetime.UTC),
            organizations=organizations,
            dns_names=dns_names,
            ips=ips,
            server=server,
            client=client,
        )
        cert_path = self.directory / f"{name}.crt"
        key_path = self.directory / f"{name}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key_path, key)
        return cert_path, key_path
