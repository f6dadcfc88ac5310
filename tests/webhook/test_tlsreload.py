"""Certificate hot reload: in process, and the swap test on the running server (no restart, no request
in flight fails, new connections get the new certificate)."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import logging
import os
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from cryptography import x509

from certs.generate import generate
from fhpa_api.defaulting import apply_defaults
from tests.support.reviews import fhpa, review
from tests.support.webhook_serving import generate_certs, run_webhook
from webhook.metrics import WebhookMetrics
from webhook.tlsreload import CertificateReloader


def load_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _serial(cert_file: Path) -> int:
    return x509.load_pem_x509_certificate(cert_file.read_bytes()).serial_number


def _served_serial(reloader: CertificateReloader) -> int:
    """The serial of the certificate a new connection would get (read back through a TLS handshake in
    memory, so the test sees what the context serves, not what the files say)."""
    import ssl

    server_in, server_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    client_in, client_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    server = reloader.context().wrap_bio(server_in, server_out, server_side=True)
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_ctx.check_hostname = False
    client_ctx.verify_mode = ssl.CERT_NONE
    client = client_ctx.wrap_bio(client_in, client_out)
    for _ in range(10):
        for side in (client, server):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        server_in.write(client_out.read())
        client_in.write(server_out.read())
    der = client.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_reloader_serves_the_new_pair_once_both_files_changed(tmp_path: Path) -> None:
    generate_certs(tmp_path)
    reloader = CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key")
    first = _served_serial(reloader)
    assert first == _serial(tmp_path / "tls.crt")
    assert reloader.context() is reloader.context()  # unchanged files: the cached context

    old_cert = (tmp_path / "tls.crt").read_bytes()
    generate_certs(tmp_path)
    renewed_key = (tmp_path / "tls.key").read_bytes()
    (tmp_path / "tls.crt").write_bytes(old_cert)  # half a renewal: new key, old certificate
    assert _served_serial(reloader) == first
    assert reloader.readiness() is None

    generate_certs(tmp_path)
    assert (tmp_path / "tls.key").read_bytes() != renewed_key
    assert _served_serial(reloader) == _serial(tmp_path / "tls.crt") != first


def test_reloader_follows_a_kubernetes_secret_volume_swap(tmp_path: Path) -> None:
    """Kubelet updates a Secret volume by pointing the `..data` symlink at a new directory."""
    for version in ("v1", "v2"):
        generate_certs(tmp_path / version)
    volume = tmp_path / "volume"
    volume.mkdir()
    os.symlink("../v1", volume / "..data")
    for name in ("tls.crt", "tls.key"):
        os.symlink(f"..data/{name}", volume / name)
    reloader = CertificateReloader(volume / "tls.crt", volume / "tls.key")
    assert _served_serial(reloader) == _serial(tmp_path / "v1" / "tls.crt")
    os.symlink("../v2", volume / "..data_tmp")
    os.replace(volume / "..data_tmp", volume / "..data")
    assert _served_serial(reloader) == _serial(tmp_path / "v2" / "tls.crt")


def test_readiness_says_why_before_any_certificate_loads(tmp_path: Path) -> None:
    reloader = CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key")
    reason = reloader.readiness()
    assert reason is not None and "not loaded" in reason
    generate_certs(tmp_path)
    assert reloader.readiness() is None


@pytest.mark.slow
def test_certificate_swap_on_the_running_server(tmp_path: Path) -> None:
    certs, staged = tmp_path / "certs", tmp_path / "renewed"
    generate_certs(certs)
    generate_certs(staged)  # the renewal, with a CA of its own, written into place below
    old_ca, new_ca = certs / "ca.crt", staged / "ca.crt"
    body = json.dumps(review(apply_defaults(fhpa()))).encode()
    with run_webhook(certs, tmp_path, ["--threads", "4"]) as server:
        failures: list[str] = []
        done = threading.Event()
        counts = [0, 0, 0]

        def load(slot: int) -> None:
            """Keep requests going through the swap, reconnecting now and then, trusting both CAs."""
            while not done.is_set():
                conn = server.connection(old_ca, new_ca)
                try:
                    for _ in range(5):
                        conn.request(
                            "POST", "/validate", body=body, headers={"Content-Type": "application/json"}
                        )
                        resp = conn.getresponse()
                        resp.read()
                        if resp.status != 200:
                            failures.append(f"HTTP {resp.status}")
                        counts[slot] += 1
                except OSError as exc:
                    failures.append(repr(exc))
                finally:
                    conn.close()

        threads = [threading.Thread(target=load, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        try:
            # A request caught mid-body by the swap: started on the old certificate, finished after.
            in_flight = server.connection(old_ca)
            in_flight.putrequest("POST", "/validate")
            in_flight.putheader("Content-Type", "application/json")
            in_flight.putheader("Content-Length", str(len(body)))
            in_flight.endheaders()
            in_flight.send(body[:100])
            time.sleep(0.3)

            for name in ("tls.key", "tls.crt"):  # each file replaced atomically, as a renewal does
                shutil.copy(staged / name, certs / f".{name}.new")
                os.replace(certs / f".{name}.new", certs / name)
            time.sleep(0.5)

            in_flight.send(body[100:])
            resp = in_flight.getresponse()
            assert resp.status == 200 and json.loads(resp.read())["response"]["allowed"] is True
            in_flight.close()

            assert server.request("GET", "/readyz", None, new_ca)[0] == 200
            with pytest.raises(OSError):  # the old certificate is no longer served to new connections
                server.request("GET", "/readyz", None, old_ca)
            time.sleep(0.5)
        finally:
            done.set()
            for thread in threads:
                thread.join(timeout=10)

        assert failures == []
        assert min(counts) > 0
        assert server.process.poll() is None
        assert "Booting worker" in server.log() and server.log().count("Booting worker") == 2  # no restart
        assert "Traceback" not in server.log()


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _half_renewal(directory: Path) -> None:
    """A new key beside the old certificate: a pair that cannot load."""
    old_cert = (directory / "tls.crt").read_bytes()
    generate(directory, "webhook", "ns", ["127.0.0.1"])
    (directory / "tls.crt").write_bytes(old_cert)


def _generate(directory: Path, days: int = 365, now: dt.datetime | None = None) -> None:
    generate(directory, "webhook", "ns", ["127.0.0.1"], days=days, now=now)


def test_a_pair_that_stays_broken_is_retried_with_backoff_and_warned_about_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Review L3: 20 connections and 20 /readyz on a mismatched pair gave 40 WARNING lines."""
    _generate(tmp_path)
    clock = FakeClock()
    reloader = CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key", monotonic=clock)
    first = _served_serial(reloader)
    _half_renewal(tmp_path)
    caplog.set_level(logging.WARNING, logger="webhook.tlsreload")
    for _ in range(20):
        assert _served_serial(reloader) == first  # the old pair keeps serving
        assert reloader.readiness() is None  # far from its expiry: still ready
    assert reloader.attempts == 2  # the first load, and one try of the broken pair
    assert len(caplog.records) == 1 and "keeping the previous certificate" in caplog.text

    tries = []
    for _ in range(10):  # the backoff for this pair doubles: 1, 2, 4, ... s, capped at 60 s
        before = reloader.attempts
        while reloader.attempts == before:
            clock.now += 0.25
            reloader.context()
        tries.append(clock.now)
    gaps = [b - a for a, b in itertools.pairwise(tries)]
    assert gaps[:5] == [2.0, 4.0, 8.0, 16.0, 32.0] and max(gaps) == 60.0
    # one more warning a minute at most over those ~5 minutes, never one per try
    assert 2 <= len(caplog.records) <= 2 + (tries[-1] - tries[0]) / 60 + 1 < 11

    caplog.clear()
    _half_renewal(tmp_path)  # the files change (still broken): tried at once, and said once
    reloader.context()
    reloader.context()
    assert len(caplog.records) == 1

    _generate(tmp_path)  # a good pair: loaded at once despite the backoff of the broken one
    assert _served_serial(reloader) == _serial(tmp_path / "tls.crt") != first


def test_missing_files_are_warned_about_once_and_the_old_pair_keeps_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _generate(tmp_path)
    reloader = CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key", monotonic=FakeClock())
    first = _served_serial(reloader)
    (tmp_path / "tls.key").unlink()
    caplog.set_level(logging.WARNING, logger="webhook.tlsreload")
    for _ in range(10):
        assert _served_serial(reloader) == first
    assert len(caplog.records) == 1 and "cannot be found" in caplog.text


def test_readiness_fails_when_the_certificate_in_use_is_close_to_expiry(tmp_path: Path) -> None:
    now = dt.datetime.now(dt.UTC)
    _generate(tmp_path, days=2, now=now)
    clock = FakeClock(now.timestamp())
    reloader = CertificateReloader(
        tmp_path / "tls.crt", tmp_path / "tls.key", expiry_threshold=24 * 3600, wall_clock=clock
    )
    assert reloader.readiness() is None  # 48 h left
    assert reloader.not_after == load_cert(tmp_path / "tls.crt").not_valid_after_utc.timestamp()
    clock.now += 25 * 3600
    reason = reloader.readiness()
    assert reason is not None and "expires at" in reason and re.search(r"in 2[23]h\d\dm", reason)
    assert "still being served" in reason and "renew" in reason
    clock.now += 24 * 3600
    reason = reloader.readiness()
    assert reason is not None and "expired at" in reason

    _half_renewal(tmp_path)  # the renewal cannot load: readiness says why the old one is still served
    reason = reloader.readiness()
    assert reason is not None and "expired" in reason and "cannot be loaded" in reason

    _generate(tmp_path, days=365, now=dt.datetime.fromtimestamp(clock.now, dt.UTC))
    assert reloader.readiness() is None


def test_a_zero_threshold_fails_readiness_only_once_expired(tmp_path: Path) -> None:
    now = dt.datetime.now(dt.UTC)
    _generate(tmp_path, days=1, now=now)
    clock = FakeClock(now.timestamp())
    reloader = CertificateReloader(
        tmp_path / "tls.crt", tmp_path / "tls.key", expiry_threshold=0, wall_clock=clock
    )
    clock.now += 23 * 3600
    assert reloader.readiness() is None
    clock.now += 2 * 3600
    assert "expired at" in (reloader.readiness() or "")


def test_the_expiry_of_the_certificate_in_use_is_a_metric(tmp_path: Path) -> None:
    _generate(tmp_path, days=30)
    reloader = CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key")
    reloader.readiness()
    metrics = WebhookMetrics()
    reloader.on_certificate(metrics.set_certificate_expiry)

    def exported() -> float:
        text = metrics.exposition().decode()
        found = re.search(r"^fhpa_webhook_certificate_expiry_timestamp_seconds (\S+)$", text, re.M)
        assert found, text
        return float(found.group(1))

    assert exported() == load_cert(tmp_path / "tls.crt").not_valid_after_utc.timestamp()
    _half_renewal(tmp_path)  # not loaded: the metric keeps the certificate in use
    reloader.context()
    assert exported() == reloader.not_after
    time.sleep(0.01)
    _generate(tmp_path, days=90)
    reloader.context()
    assert exported() == load_cert(tmp_path / "tls.crt").not_valid_after_utc.timestamp() == reloader.not_after
