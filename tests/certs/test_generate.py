"""`fhpa certs generate` and certs.generate: names, trust chain, file modes, CA reuse, bad input."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import io
import ipaddress
import ssl
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from certs.generate import CertificateError, build_ca, check, generate, issue_certificate, service_dns_names
from fhpa.cli import main

REPO = Path(__file__).resolve().parents[2]


def run_certs(action: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`fhpa certs ACTION ARGS` in this process, its exit code and output as a process would give them: a
    process per call cost a second of start-up. The entry point itself runs as a process in
    test_cli_writes_the_files_and_prints_the_ca_bundle."""
    argv = ["certs", action, *args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse refuses bad flags this way
            code = exit.code if isinstance(exit.code, int) else 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def handshake(out: Path, server_hostname: str) -> None:
    """A TLS handshake in memory: a client trusting only ca.crt dials `server_hostname` and the server
    presents tls.crt/tls.key; raises ssl.SSLCertVerificationError when the name is not covered."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(out / "tls.crt", out / "tls.key")
    client_ctx = ssl.create_default_context(cafile=str(out / "ca.crt"))
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=server_hostname)
    for _ in range(10):
        done = True
        for side in (client, server):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                done = False
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if done:
            return
    raise AssertionError("handshake did not finish")


def test_cli_writes_the_files_and_prints_the_ca_bundle(tmp_path: Path) -> None:
    flags = ["--out", str(tmp_path), "--service", "fhpa-webhook", "--namespace", "fhpa-system"]
    flags += ["--ip", "127.0.0.1", "--ip", "::1", "--days", "30"]
    result = subprocess.run(
        [sys.executable, "-m", "fhpa", "certs", "generate", *flags],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert base64.b64decode(result.stdout.strip()) == (tmp_path / "ca.crt").read_bytes()
    for key in ("tls.key", "ca.key"):
        assert stat.S_IMODE((tmp_path / key).stat().st_mode) == 0o600
    cert, ca = load(tmp_path / "tls.crt"), load(tmp_path / "ca.crt")
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [
        "fhpa-webhook",
        "fhpa-webhook.fhpa-system",
        "fhpa-webhook.fhpa-system.svc",
        "fhpa-webhook.fhpa-system.svc.cluster.local",
    ]
    assert sans.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    cert.verify_directly_issued_by(ca)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    lifetime = cert.not_valid_after_utc - dt.datetime.now(dt.UTC)
    assert dt.timedelta(days=29) < lifetime <= dt.timedelta(days=30)


@pytest.mark.parametrize(
    "name",
    [
        "fhpa-webhook.fhpa-system.svc",
        "fhpa-webhook.fhpa-system.svc.cluster.local",
        "fhpa-webhook",
        "127.0.0.1",
    ],
)
def test_a_client_trusting_the_ca_accepts_every_service_name(tmp_path: Path, name: str) -> None:
    generate(tmp_path, "fhpa-webhook", "fhpa-system", ["127.0.0.1"])
    handshake(tmp_path, name)


def test_a_name_outside_the_sans_is_refused(tmp_path: Path) -> None:
    generate(tmp_path, "fhpa-webhook", "fhpa-system")
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(tmp_path, "other.fhpa-system.svc")


def test_running_again_renews_the_serving_cert_under_the_same_ca(tmp_path: Path) -> None:
    first = generate(tmp_path, "fhpa-webhook", "fhpa-system")
    first_tls = (tmp_path / "tls.crt").read_bytes()
    second = generate(tmp_path, "fhpa-webhook", "fhpa-system")
    assert second.ca_reused and second.ca_bundle == first.ca_bundle
    assert (tmp_path / "tls.crt").read_bytes() != first_tls
    load(tmp_path / "tls.crt").verify_directly_issued_by(load(tmp_path / "ca.crt"))
    third = generate(tmp_path, "fhpa-webhook", "fhpa-system", new_ca=True)
    assert not third.ca_reused and third.ca_bundle != first.ca_bundle


def test_a_ca_expiring_before_the_new_cert_is_replaced(tmp_path: Path) -> None:
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=3640)
    old = generate(tmp_path, "fhpa-webhook", "fhpa-system", days=1, now=long_ago)
    renewed = generate(tmp_path, "fhpa-webhook", "fhpa-system", days=365)
    assert not renewed.ca_reused and renewed.ca_bundle != old.ca_bundle


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--service", "Web_Hook", "--namespace", "ns"], "service 'Web_Hook' is not a DNS label"),
        (["--service", "web", "--namespace=ns-"], "namespace 'ns-' is not a DNS label"),
        (["--service", "web", "--namespace", "ns", "--ip", "10.0.0.300"], "--ip '10.0.0.300'"),
        (["--service", "web", "--namespace", "ns", "--days", "0"], "--days must be at least 1"),
    ],
)
def test_bad_input_is_refused_with_a_message(tmp_path: Path, args: list[str], message: str) -> None:
    result = run_certs("generate", "--out", str(tmp_path / "out"), *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_unreadable_ca_is_an_error_not_a_crash(tmp_path: Path) -> None:
    generate(tmp_path, "web", "ns")
    (tmp_path / "ca.key").write_text("not a key")
    with pytest.raises(CertificateError, match="--new-ca"):
        generate(tmp_path, "web", "ns")


LABEL = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?\Z")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(service=LABEL, namespace=LABEL, ips=st.lists(st.ip_addresses(), max_size=3, unique=True))
def test_sans_are_the_service_names_and_the_ips(
    tmp_path_factory: pytest.TempPathFactory, service: str, namespace: str, ips: list[ipaddress.IPv4Address]
) -> None:
    out = tmp_path_factory.mktemp("p")
    generate(out, service, namespace, [str(ip) for ip in ips])
    sans = load(out / "tls.crt").extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == service_dns_names(service, namespace)
    assert sans.get_values_for_type(x509.IPAddress) == ips


def test_a_client_certificate_carries_its_groups_and_client_usage_only() -> None:
    now = dt.datetime.now(dt.UTC)
    ca_cert, ca_key = build_ca("test CA", days=1, now=now)
    cert, _ = issue_certificate(
        ca_cert, ca_key, "admin", days=1, now=now, organizations=["system:masters"], server=False, client=True
    )
    groups = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert groups == ["system:masters"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    cert.verify_directly_issued_by(ca_cert)


def test_generate_says_when_the_certificate_expires_and_when_to_regenerate(tmp_path: Path) -> None:
    """Review L9: a 365-day certificate with nothing that says when it runs out."""
    result = run_certs("generate", "--out", str(tmp_path), "--service", "web", "--namespace", "ns")
    assert result.returncode == 0, result.stderr
    not_after = load(tmp_path / "tls.crt").not_valid_after_utc
    renew_by = (not_after - dt.timedelta(days=30)).date().isoformat()
    assert f"tls.crt expires at {not_after.isoformat(timespec='minutes')}" in result.stderr
    assert f"regenerate it before {renew_by}" in result.stderr and "docs/certificates.md" in result.stderr
    assert "WARNING" not in result.stderr
    short = run_certs(
        "generate", "--out", str(tmp_path), "--service", "web", "--namespace", "ns", "--days", "7"
    )
    assert short.returncode == 0 and "WARNING: tls.crt is valid for fewer than 30 days" in short.stderr


def test_generate_warns_when_an_expiring_ca_was_replaced(tmp_path: Path) -> None:
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=3640)
    generate(tmp_path, "web", "ns", days=1, now=long_ago)
    result = run_certs("generate", "--out", str(tmp_path), "--service", "web", "--namespace", "ns")
    assert result.returncode == 0
    assert "a new CA was made and the caBundle changed" in result.stderr


def test_check_warns_when_regenerating_is_due(tmp_path: Path) -> None:
    fresh, soon, expired = tmp_path / "fresh", tmp_path / "soon", tmp_path / "expired"
    generate(fresh, "web", "ns")
    generate(soon, "web", "ns", days=10)
    generate(expired, "web", "ns", days=1, now=dt.datetime.now(dt.UTC) - dt.timedelta(days=2))

    ok = run_certs("check", "--dir", str(fresh))
    assert ok.returncode == 0, ok.stderr
    assert "tls.crt expires at" in ok.stdout and "(in 364 days)" in ok.stdout and not ok.stderr

    due = run_certs("check", "--dir", str(soon))
    assert due.returncode == 1
    assert "WARNING: tls.crt expires within 30 days: regenerate it" in due.stderr
    assert run_certs("check", "--dir", str(soon), "--renew-before-days", "5").returncode == 0

    gone = run_certs("check", "--dir", str(expired))
    assert gone.returncode == 1 and "tls.crt EXPIRED at" in gone.stdout and "has expired" in gone.stderr

    empty = run_certs("check", "--dir", str(tmp_path / "nothing"))
    assert empty.returncode == 2 and "holds neither" in empty.stderr


def test_check_reports_both_files() -> None:
    now = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    with tempfile.TemporaryDirectory() as directory:
        generate(Path(directory), "web", "ns", days=40, now=now)
        found = {e.name: e for e in check(Path(directory), now=now + dt.timedelta(days=9))}
        later = {e.name: e for e in check(Path(directory), now=now + dt.timedelta(days=11))}
    assert not found["tls.crt"].due and found["tls.crt"].left.days == 31
    assert later["tls.crt"].due and later["tls.crt"].left.days == 29
    assert not later["ca.crt"].due and later["ca.crt"].left.days > 3000
