"""A private CA and a serving certificate for the admission webhook, without cert-manager.

The API server calls the webhook through its Service, so the serving certificate must name every DNS form
of that Service (NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local) plus any IP the test or a
loopback setup dials directly. Keys are ECDSA P-256: the API server accepts them and their TLS handshakes
cost a fraction of RSA's, which matters at admission latency.

The CA key is kept beside the certificates (mode 0600) so that running the command again renews the
serving certificate under the same CA: the caBundle in the webhook configurations then stays valid and a
running server picks the new files up without anyone touching the API server.

Renewal (review L9). Nothing renews these certificates by itself: `check` says when each one expires and
whether regenerating is due (within `RENEW_BEFORE_DAYS`), and `fhpa certs generate` prints the same after
writing. docs/certificates.md gives the procedure and the alert on the webhook's expiry metric.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"
# Certificates are back-dated a little so that a node whose clock lags still accepts them.
CLOCK_SKEW = dt.timedelta(minutes=5)
CA_MIN_DAYS = 3650
RENEW_BEFORE_DAYS = 30  # regenerate a serving certificate when it has fewer days than this left


class CertificateError(ValueError):
    """Input that cannot produce a usable certificate (bad name, bad IP, bad validity, unreadable CA)."""


@dataclass(frozen=True)
class CertBundle:
    """What `generate` wrote, with the base64 caBundle ready for a webhook configuration."""

    out_dir: Path
    ca_cert_pem: bytes
    tls_cert_pem: bytes
    ca_reused: bool
    ca_replaced: bool = False  # a CA was in out_dir but expired before the new certificate would

    @property
    def tls_not_after(self) -> dt.datetime:
        return x509.load_pem_x509_certificate(self.tls_cert_pem).not_valid_after_utc

    @property
    def ca_not_after(self) -> dt.datetime:
        return x509.load_pem_x509_certificate(self.ca_cert_pem).not_valid_after_utc

    @property
    def ca_bundle(self) -> str:
        """The value of `clientConfig.caBundle`: base64 of the CA's PEM."""
        return base64.b64encode(self.ca_cert_pem).decode("ascii")


def service_dns_names(service: str, namespace: str) -> list[str]:
    """Every name under which in-cluster clients reach the Service, shortest first."""
    _check_dns_label(service, "service")
    _check_dns_label(namespace, "namespace")
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _check_dns_label(value: str, what: str) -> None:
    """Service and namespace names are RFC 1123 labels; anything else cannot appear in a SAN the API
    server will match, so refuse it here rather than produce a certificate that never verifies."""
    ok = (
        0 < len(value) <= 63
        and value[0].isalnum()
        and value[-1].isalnum()
        and all(c.islower() or c.isdigit() or c == "-" for c in value)
    )
    if not ok:
        raise CertificateError(
            f"{what} {value!r} is not a DNS label: use 1-63 lowercase letters, digits or '-', "
            "starting and ending with a letter or digit"
        )


def parse_ips(values: list[str]) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """IP SANs from text, with an error naming the bad value."""
    parsed = []
    for value in values:
        try:
            parsed.append(ipaddress.ip_address(value))
        except ValueError as exc:
            raise CertificateError(f"--ip {value!r} is not an IPv4 or IPv6 address") from exc
    return parsed


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _validity(days: int, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    if days < 1:
        raise CertificateError(f"--days must be at least 1, got {days}")
    return now - CLOCK_SKEW, now + dt.timedelta(days=days)


def _key_usage(ca: bool) -> x509.KeyUsage:
    """A CA signs certificates; a leaf only signs handshakes (ECDSA has no key encipherment)."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def build_ca(
    common_name: str, days: int, now: dt.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    not_before, not_after = _validity(days, now)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def issue_certificate(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    *,
    days: int,
    now: dt.datetime,
    organizations: Sequence[str] = (),
    dns_names: Sequence[str] = (),
    ips: Sequence[IPAddress] = (),
    server: bool = True,
    client: bool = False,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A leaf certificate signed by the CA: a serving certificate, a client certificate, or both.

    Organizations become the subject's O (Kubernetes reads a client certificate's O as its groups).
    """
    key = _new_key()
    not_before, not_after = _validity(days, now)
    subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    subject.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
    usages += [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
    )
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ip) for ip in ips]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def build_serving_cert(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    dns_names: list[str],
    ips: list[IPAddress],
    days: int,
    now: dt.datetime,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A server certificate for `dns_names` and `ips`, signed by the CA. Go's TLS stack reads only the
    SANs (never the CN), so every name the API server may dial must be listed there."""
    return issue_certificate(
        ca_cert, ca_key, dns_names[-1], days=days, now=now, dns_names=dns_names, ips=ips, server=True
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Write through a temporary file and rename, so a server watching the directory never reads a
    half-written file; the mode is set before any byte of a key lands on disk."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load_existing_ca(out_dir: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None:
    cert_path, key_path = out_dir / CA_CERT, out_dir / CA_KEY
    if not (cert_path.exists() and key_path.exists()):
        return None
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except ValueError as exc:
        raise CertificateError(f"{out_dir} holds a CA that cannot be read ({exc}); use --new-ca") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertificateError(f"{key_path} is not an ECDSA key; use --new-ca")
    return cert, key


def generate(
    out_dir: Path,
    service: str,
    namespace: str,
    ips: list[str] | None = None,
    days: int = 365,
    new_ca: bool = False,
    now: dt.datetime | None = None,
) -> CertBundle:
    """Write ca.crt, ca.key, tls.crt and tls.key into `out_dir` (keys mode 0600).

    An existing CA in `out_dir` is reused unless `new_ca` is set (or it expires before the new serving
    certificate would), so a renewal keeps the caBundle already registered with the API server.
    """
    now = now or dt.datetime.now(dt.UTC)
    dns_names = service_dns_names(service, namespace)
    ip_sans = parse_ips(ips or [])
    _validity(days, now)
    out_dir.mkdir(parents=True, exist_ok=True)
    existing = None if new_ca else _load_existing_ca(out_dir)
    ca_replaced = False
    if existing and existing[0].not_valid_after_utc < now + dt.timedelta(days=days):
        existing, ca_replaced = None, True
    ca_cert, ca_key = existing or build_ca(f"{service}.{namespace} webhook CA", max(days, CA_MIN_DAYS), now)
    tls_cert, tls_key = build_serving_cert(ca_cert, ca_key, dns_names, ip_sans, days, now)
    if existing is None:
        write_atomically(out_dir / CA_KEY, _pem_key(ca_key), 0o600)
        write_atomically(out_dir / CA_CERT, _pem_cert(ca_cert), 0o644)
    # Key first: a reloading server that sees the new certificate with the old key refuses the pair
    # and keeps serving the old one until both are in place.
    write_atomically(out_dir / TLS_KEY, _pem_key(tls_key), 0o600)
    write_atomically(out_dir / TLS_CERT, _pem_cert(tls_cert), 0o644)
    return CertBundle(
        out_dir,
        _pem_cert(ca_cert),
        _pem_cert(tls_cert),
        ca_reused=existing is not None,
        ca_replaced=ca_replaced,
    )


@dataclass(frozen=True)
class Expiry:
    """When one certificate file expires, and whether it is time to regenerate it."""

    name: str
    not_after: dt.datetime
    left: dt.timedelta
    due: bool  # fewer than the renewal window's days left (or expired)

    @property
    def expired(self) -> bool:
        return self.left <= dt.timedelta(0)

    def describe(self) -> str:
        when = self.not_after.isoformat(timespec="minutes")
        if self.expired:
            return f"{self.name} EXPIRED at {when}"
        return f"{self.name} expires at {when} (in {self.left.days} days)"


def check(
    out_dir: Path, renew_before_days: int = RENEW_BEFORE_DAYS, now: dt.datetime | None = None
) -> list[Expiry]:
    """The expiry of tls.crt and ca.crt in `out_dir` (those present); raises CertificateError when a
    file cannot be read or neither exists."""
    now = now or dt.datetime.now(dt.UTC)
    found = []
    for name in (TLS_CERT, CA_CERT):
        path = out_dir / name
        if not path.exists():
            continue
        try:
            not_after = x509.load_pem_x509_certificate(path.read_bytes()).not_valid_after_utc
        except (OSError, ValueError) as exc:
            raise CertificateError(f"cannot read {path}: {exc}") from exc
        left = not_after - now
        found.append(Expiry(name, not_after, left, left < dt.timedelta(days=renew_before_days)))
    if not found:
        raise CertificateError(f"{out_dir} holds neither {TLS_CERT} nor {CA_CERT}")
    return found
