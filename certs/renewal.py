"""What a self-signed webhook needs renewed, decided from the certificates it holds now (no I/O).

The rotator (`certs/rotator.py`) keeps a private CA and the serving pair in two Secrets. On each pass it
hands what it read to `plan_renewal`, which answers with the PEMs to write and the caBundle the webhook
configurations must carry. Keeping the decision here makes every branch testable without an API server.

The CA outlives many serving certificates, so an ordinary renewal leaves the caBundle as it was: the API
server keeps trusting the old certificate (still served by pods that have not reloaded yet) and the new
one alike. Only when the CA itself must be replaced (missing, unreadable, or ending before the next
serving certificate would) does the bundle change, and then it lists the new CA first and the old one
after it while the old one is valid, so the handover has no window in which either certificate fails.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from certs.generate import CA_MIN_DAYS, IPAddress, build_ca, build_serving_cert


@dataclass(frozen=True)
class CertificateSet:
    """PEMs as stored; any of them may be missing (empty)."""

    ca_cert: bytes = b""
    ca_key: bytes = b""
    tls_cert: bytes = b""
    tls_key: bytes = b""


@dataclass(frozen=True)
class RenewalPlan:
    """What to write: a new CA pair, a new serving pair (None: keep), and the caBundle PEM to publish."""

    reason: str
    ca: tuple[bytes, bytes] | None
    serving: tuple[bytes, bytes] | None
    ca_bundle_pem: bytes

    @property
    def changes(self) -> bool:
        return self.ca is not None or self.serving is not None

    @property
    def ca_bundle(self) -> str:
        """The base64 form `clientConfig.caBundle` takes."""
        return base64.b64encode(self.ca_bundle_pem).decode("ascii")


@dataclass(frozen=True)
class Policy:
    """Who the certificate is for, how long it lasts and how early it is renewed."""

    dns_names: Sequence[str]
    ips: Sequence[IPAddress] = ()
    days: int = 90
    renew_before: dt.timedelta = dt.timedelta(days=30)


def _load_ca(found: CertificateSet) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None:
    try:
        cert = x509.load_pem_x509_certificate(found.ca_cert)
        key = serialization.load_pem_private_key(found.ca_key, password=None)
    except ValueError:
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        return None
    return cert, key


def _serving_problem(found: CertificateSet, ca: x509.Certificate, policy: Policy, now: dt.datetime) -> str:
    """Why the stored serving pair cannot stay (empty: it can)."""
    try:
        cert = x509.load_pem_x509_certificate(found.tls_cert)
        key = serialization.load_pem_private_key(found.tls_key, password=None)
    except ValueError:
        return "no readable serving certificate"
    if key.public_key() != cert.public_key():
        return "the serving key does not match its certificate"
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return "the serving certificate was not issued by the current CA"
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    if set(sans.get_values_for_type(x509.DNSName)) != set(policy.dns_names) or set(
        sans.get_values_for_type(x509.IPAddress)
    ) != set(policy.ips):
        return "the serving certificate names other hosts"
    left = cert.not_valid_after_utc - now
    if left < policy.renew_before:
        return f"the serving certificate expires at {cert.not_valid_after_utc.isoformat(timespec='seconds')}"
    return ""


def pem_pair(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> tuple[bytes, bytes]:
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


def _still_valid(pem: bytes, now: dt.datetime) -> bool:
    try:
        return x509.load_pem_x509_certificate(pem).not_valid_after_utc > now
    except ValueError:
        return False


def plan_renewal(found: CertificateSet, policy: Policy, now: dt.datetime) -> RenewalPlan:
    """The certificates to write so that a valid serving pair, signed by a CA that outlives it, is
    stored and trusted; nothing when the stored ones already are."""
    ca = _load_ca(found)
    leaf_end = now + dt.timedelta(days=policy.days)
    new_ca: tuple[bytes, bytes] | None = None
    reason = ""
    if ca is None or ca[0].not_valid_after_utc < leaf_end:
        reason = "no usable CA" if ca is None else "the CA expires before a new serving certificate would"
        ca = build_ca(f"{policy.dns_names[0]} webhook CA", max(policy.days, CA_MIN_DAYS), now)
        new_ca = pem_pair(*ca)
    ca_pem = pem_pair(*ca)[0]
    problem = "a new CA" if new_ca else _serving_problem(found, ca[0], policy, now)
    serving = None
    if problem:
        reason = reason or problem
        leaf = build_serving_cert(ca[0], ca[1], list(policy.dns_names), list(policy.ips), policy.days, now)
        serving = pem_pair(*leaf)
    bundle = ca_pem
    if new_ca and found.ca_cert and _still_valid(found.ca_cert, now):
        bundle = ca_pem + found.ca_cert
    return RenewalPlan(reason or "up to date", new_ca, serving, bundle)
