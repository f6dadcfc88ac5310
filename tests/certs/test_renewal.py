"""The self-signed rotator's decisions (certs/renewal.py): what is renewed, and the caBundle published."""

from __future__ import annotations

import base64
import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from certs.generate import build_ca, build_serving_cert
from certs.renewal import CertificateSet, Policy, pem_pair, plan_renewal

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
NAMES = ["hook", "hook.ns", "hook.ns.svc", "hook.ns.svc.cluster.local"]
POLICY = Policy(dns_names=NAMES, days=90, renew_before=dt.timedelta(days=30))


def stored(
    now: dt.datetime = NOW, names: list[str] = NAMES, leaf_days: int = 90, ca_days: int = 3650
) -> CertificateSet:
    """A CA and a serving pair as a previous pass at `now` would have left them."""
    ca, key = build_ca("test CA", ca_days, now)
    return CertificateSet(
        *pem_pair(ca, key), *pem_pair(*build_serving_cert(ca, key, names, [], leaf_days, now))
    )


def reissued(found: CertificateSet, names: list[str]) -> CertificateSet:
    """The same CA, a serving pair for other names."""
    ca = x509.load_pem_x509_certificate(found.ca_cert)
    key = serialization.load_pem_private_key(found.ca_key, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    leaf = pem_pair(*build_serving_cert(ca, key, names, [], 90, NOW))
    return CertificateSet(found.ca_cert, found.ca_key, *leaf)


def not_after(pem: bytes) -> dt.datetime:
    return x509.load_pem_x509_certificate(pem).not_valid_after_utc


def test_nothing_stored_issues_a_ca_and_a_serving_pair_the_bundle_trusts() -> None:
    plan = plan_renewal(CertificateSet(), POLICY, NOW)
    assert plan.ca is not None and plan.serving is not None
    ca = x509.load_pem_x509_certificate(plan.ca[0])
    x509.load_pem_x509_certificate(plan.serving[0]).verify_directly_issued_by(ca)
    assert base64.b64decode(plan.ca_bundle) == plan.ca[0]
    assert not_after(plan.serving[0]) == NOW + dt.timedelta(days=90)


def test_a_valid_pair_is_kept_and_the_bundle_is_the_stored_ca() -> None:
    found = stored()
    plan = plan_renewal(found, POLICY, NOW + dt.timedelta(days=59))
    assert not plan.changes
    assert plan.ca_bundle_pem == found.ca_cert


def test_a_serving_certificate_inside_the_renewal_window_is_renewed_under_the_same_ca() -> None:
    found = stored()
    later = NOW + dt.timedelta(days=61)
    plan = plan_renewal(found, POLICY, later)
    assert plan.ca is None and plan.serving is not None
    assert "expires at" in plan.reason
    assert not_after(plan.serving[0]) == later + dt.timedelta(days=90)
    assert plan.ca_bundle_pem == found.ca_cert  # the API server's trust does not move


def test_a_short_lived_certificate_is_renewed_at_once() -> None:
    found = stored(now=NOW - dt.timedelta(days=1) + dt.timedelta(seconds=60), leaf_days=1)
    plan = plan_renewal(found, POLICY, NOW)
    assert plan.serving is not None and plan.ca is None


def test_a_ca_ending_before_the_next_certificate_is_replaced_and_both_are_trusted_meanwhile() -> None:
    found = stored(ca_days=100)
    later = NOW + dt.timedelta(days=61)
    plan = plan_renewal(found, POLICY, later)
    assert plan.ca is not None and plan.serving is not None
    assert plan.ca_bundle_pem == plan.ca[0] + found.ca_cert  # new first, old while it is valid
    x509.load_pem_x509_certificate(plan.serving[0]).verify_directly_issued_by(
        x509.load_pem_x509_certificate(plan.ca[0])
    )


def test_an_expired_old_ca_is_not_kept_in_the_bundle() -> None:
    found = stored(ca_days=100)
    plan = plan_renewal(found, POLICY, NOW + dt.timedelta(days=101))
    assert plan.ca is not None
    assert plan.ca_bundle_pem == plan.ca[0]


def test_a_pair_for_other_names_or_from_another_ca_or_with_a_foreign_key_is_reissued() -> None:
    found, other = stored(), stored()
    other_names = reissued(found, ["other", "other.ns", "other.ns.svc", "other.ns.svc.cluster.local"])
    cases = {
        "names other hosts": other_names,
        "not issued by the current CA": CertificateSet(
            other.ca_cert, other.ca_key, found.tls_cert, found.tls_key
        ),
        "does not match": CertificateSet(found.ca_cert, found.ca_key, found.tls_cert, other_names.tls_key),
        "no readable serving": CertificateSet(found.ca_cert, found.ca_key, b"junk", b""),
    }
    for words, case in cases.items():
        plan = plan_renewal(case, POLICY, NOW)
        assert plan.serving is not None and plan.ca is None, words
        assert words in plan.reason


def test_an_unreadable_or_mismatched_ca_is_replaced() -> None:
    found = stored()
    other = stored()
    for case in (
        CertificateSet(b"junk", found.ca_key, found.tls_cert, found.tls_key),
        CertificateSet(found.ca_cert, other.ca_key, found.tls_cert, found.tls_key),
    ):
        plan = plan_renewal(case, POLICY, NOW)
        assert plan.ca is not None and plan.serving is not None
        assert plan.reason == "no usable CA"
