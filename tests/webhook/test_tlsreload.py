"""Certificate hot reload: in process, and the swap test on the running server (no restart, no request
in flight fails, new connections get the new certificate)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from cryptography import x509

from fhpa_api.defaulting import apply_defaults
from tests.webhook.reviews import fhpa, review
from tests.webhook.serving import generate_certs, run_webhook
from webhook.tlsreload import CertificateReloader


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
