"""The webhook on the real path: `fhpa webhook serve` (gunicorn) on loopback with certificates from
`fhpa certs generate`, every request over HTTPS verified against the generated CA."""

from __future__ import annotations

import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from fhpa_api.defaulting import apply_defaults
from tests.support.reviews import cronfhpa, decode_patch, fhpa, review
from tests.support.waiting import wait_for
from tests.support.webhook_serving import (
    RunningWebhook,
    client_context,
    fhpa_command,
    generate_certs,
    run_webhook,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(certs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningWebhook]:
    with run_webhook(certs, tmp_path_factory.mktemp("logs")) as running:
        yield running


def test_mutate_and_validate_over_verified_https(server: RunningWebhook) -> None:
    status, answer = server.request("POST", "/mutate", review(fhpa()))
    assert status == 200
    assert {"op": "add", "path": "/spec/minReplicas", "value": 1} in decode_patch(answer["response"])
    status, answer = server.request(
        "POST", "/validate", review(apply_defaults(cronfhpa(rules=[{"name": "a", "schedule": "0 8 * * *"}])))
    )
    assert status == 200 and answer["response"]["allowed"] is False
    assert "spec.rules[0]" in answer["response"]["status"]["message"]


def test_a_client_trusting_another_ca_refuses_the_server(server: RunningWebhook, tmp_path: Path) -> None:
    other = tmp_path / "other"
    generate_certs(other)
    with pytest.raises(ssl.SSLCertVerificationError):
        server.request("GET", "/healthz", None, other / "ca.crt")


def test_bad_bodies_over_the_wire_get_400(server: RunningWebhook) -> None:
    assert server.request("POST", "/validate", b"\x00garbage")[0] == 400
    assert server.request("POST", "/mutate", {"kind": "AdmissionReview"})[0] == 400
    huge = json.dumps(review(fhpa(filler="x" * (3 * 1024 * 1024)))).encode()
    status, answer = server.request("POST", "/validate", huge)
    assert status == 400 and "limit" in answer["error"]


def test_a_chunked_body_over_the_limit_is_cut_off(server: RunningWebhook) -> None:
    conn = server.connection()
    conn.putrequest("POST", "/validate")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.putheader("Content-Type", "application/json")
    conn.endheaders()
    chunk = b"x" * 65536
    try:
        for _ in range(60):  # 3.75 MiB
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        conn.send(b"0\r\n\r\n")
    except OSError:
        pass  # the server may close once it has answered
    resp = conn.getresponse()
    assert resp.status == 400
    assert "limit" in json.loads(resp.read())["error"]
    conn.close()


def test_metrics_sum_over_workers(server: RunningWebhook) -> None:
    def count(text: str) -> float:
        labels = 'kind="FederatedHPA",operation="UPDATE",outcome="allowed",path="/validate"'
        pattern = r"fhpa_webhook_requests_total\{" + labels + r"\} (\S+)"
        found = re.search(pattern, text)
        return float(found.group(1)) if found else 0.0

    before = count(server.request("GET", "/metrics")[1])
    obj = apply_defaults(fhpa())
    # the spec changes, so the update is checked (an unchanged spec is "skipped": issue 12, M3)
    previous = {**obj, "spec": {**obj["spec"], "maxReplicas": obj["spec"]["maxReplicas"] + 1}}
    for _ in range(12):  # each on a new connection, so both workers answer some
        assert server.request("POST", "/validate", review(obj, "UPDATE", old=previous))[0] == 200
    for _ in range(4):  # whichever worker answers the scrape, it reports the sum
        assert count(server.request("GET", "/metrics")[1]) == before + 12


def test_serve_refuses_a_directory_without_certificates(tmp_path: Path) -> None:
    result = fhpa_command("webhook", "serve", "--cert-dir", str(tmp_path), check=False)
    assert result.returncode == 2
    assert "no tls.crt" in result.stderr and "fhpa certs generate" in result.stderr


def test_a_stalled_client_cannot_hold_the_only_thread(certs: Path, tmp_path: Path) -> None:
    limits = ["--threads", "1", "--read-timeout", "1", "--request-timeout", "3"]
    with run_webhook(certs, tmp_path, limits, workers=1) as server:
        context = client_context(certs / "ca.crt")
        stalled = context.wrap_socket(
            socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1"
        )
        stalled.sendall(b'POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"kind":')
        started = time.monotonic()
        assert server.request("GET", "/healthz")[0] == 200  # served once the stalled read times out
        assert time.monotonic() - started < 5
        stalled.settimeout(5)
        answer = stalled.recv(4096)
        assert answer == b"" or b" 400 " in answer.split(b"\r\n")[0]
        stalled.close()

        trickle = context.wrap_socket(
            socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1"
        )
        trickle.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        with pytest.raises(OSError):
            for _ in range(40):  # a header line every 0.5 s: each read is quick, the request is not
                trickle.sendall(b"X-Slow: 1\r\n")
                time.sleep(0.5)
        assert time.monotonic() - started < 8
        trickle.close()
        assert server.request("GET", "/healthz")[0] == 200
        assert server.process.poll() is None


@pytest.mark.parametrize(
    ("bind", "workers", "problem"),
    [
        ("0.0.0.0", 2, "--bind '0.0.0.0' must be HOST:PORT"),
        ("127.0.0.1:99999", 2, "must be HOST:PORT"),
        ("127.0.0.1:8443", 0, "--workers and --threads must be at least 1"),
    ],
)
def test_serve_options_say_what_is_wrong(certs: Path, bind: str, workers: int, problem: str) -> None:
    from webhook.server import ServeOptions

    assert ServeOptions(cert_dir=certs).problems() == []
    assert any(problem in p for p in ServeOptions(cert_dir=certs, bind=bind, workers=workers).problems())


def test_gunicorn_settings_bound_every_client_limit(certs: Path) -> None:
    from webhook.server import ServeOptions, gunicorn_settings
    from webhook.tlsreload import CertificateReloader

    reloader = CertificateReloader(certs / "tls.crt", certs / "tls.key")
    settings = gunicorn_settings(ServeOptions(cert_dir=certs, keepalive=2.4), reloader)
    assert settings["worker_class"] == "webhook.prefetch.PrefetchWorker" and settings["keepalive"] == 2
    assert settings["ssl_context"] == reloader.gunicorn_hook
    assert settings["control_socket_disable"] is True  # several servers on one machine must not collide
    assert settings["limit_request_line"] > 0 and settings["limit_request_fields"] > 0


def test_idle_connections_do_not_starve_reviews(certs: Path, tmp_path: Path) -> None:
    """M4: 64 connections that never send a byte (any pod could open them) alongside real reviews.
    Before, each held a pool thread for 5 s: with 2 x 4 threads a review waited tens of seconds. Now
    a silent connection is parked after 0.05 s and reviews are answered within a generous budget."""
    with run_webhook(certs, tmp_path) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(64)]
        try:
            time.sleep(0.5)  # every idle connection has been accepted and handed to a thread
            for _ in range(3):
                started = time.monotonic()
                status, answer = server.request("POST", "/validate", review(fhpa()))
                took = time.monotonic() - started
                assert status == 200 and answer["response"]["allowed"] is True
                assert took < 5.0, f"a review took {took:.1f}s behind idle connections"
        finally:
            for sock in idle:
                sock.close()
        assert server.process.poll() is None


def _trickle(server: RunningWebhook, stop: threading.Event, sending: list[bool], closed: list[float]) -> None:
    """A client that announces a small review and sends its body a byte every 0.2 s; notes when it has
    sent its head, and how long after that the server closed the connection on it."""
    context = client_context(server.cert_dir / "ca.crt")
    with context.wrap_socket(
        socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1"
    ) as sock:
        sock.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n")
        started = time.monotonic()
        sending.append(True)
        try:
            while not stop.wait(0.2):
                sock.sendall(b" ")
        except OSError:
            closed.append(time.monotonic() - started)


def test_trickling_clients_do_not_starve_reviews(certs: Path, tmp_path: Path) -> None:
    """40 clients trickling their bodies (more than the 2 x 16 pool threads) beside a real review.
    When a started request held a pool thread until its deadline, the review waited tens of seconds;
    now a request is read on the worker's poller and takes a thread only once it is whole, and a
    request not whole within the deadline (5 s, the API server's timeoutSeconds) is dropped."""
    with run_webhook(certs, tmp_path) as server:
        for _ in range(4):  # each worker has served a review (its first one imports and builds more)
            assert server.request("POST", "/validate", review(fhpa()))[0] == 200
        stop, sending, closed = threading.Event(), [], []
        clients = [threading.Thread(target=_trickle, args=(server, stop, sending, closed)) for _ in range(40)]
        for client in clients:
            client.start()
        try:
            wait_for(
                lambda: len(sending) == 40, 30, "every trickler sending", interval=0.05
            )  # every trickler is connected and sending
            took = []
            for _ in range(3):
                started = time.monotonic()
                status, answer = server.request("POST", "/validate", review(fhpa()))
                took.append(round(time.monotonic() - started, 2))
                assert status == 200 and answer["response"]["allowed"] is True
            assert max(took) < 2.0, f"reviews took {took} s behind trickling clients"
            for client in clients:
                client.join(timeout=20)
        finally:
            stop.set()
            for client in clients:
                client.join()
        assert len(closed) == 40 and max(closed) < 15, closed  # each cut off about 5 s after its head
        assert server.process.poll() is None


def test_a_second_large_body_is_refused_at_once_while_small_reviews_flow(certs: Path, tmp_path: Path) -> None:
    """One worker, one 3 MiB body being sent: a second one is answered 503 without waiting (it used to
    hold a thread for the budget's wait), and a normal review is served beside the first."""
    with run_webhook(certs, tmp_path, workers=1) as server:
        context = client_context(certs / "ca.crt")
        large = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n"
        with context.wrap_socket(
            socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1"
        ) as first:
            first.sendall(large + b"{" * 1000)
            time.sleep(0.5)  # the worker has read its head and holds its share of the budget
            with context.wrap_socket(
                socket.create_connection(("127.0.0.1", server.port)), server_hostname="127.0.0.1"
            ) as second:
                second.settimeout(5)
                started = time.monotonic()
                second.sendall(large)
                answer = second.recv(4096)
                assert b" 503 " in answer.split(b"\r\n")[0] and b"busy" in answer
                assert time.monotonic() - started < 2.0
            status, body = server.request("POST", "/validate", review(fhpa()))
            assert status == 200 and body["response"]["allowed"] is True


def test_an_idle_connection_is_closed_after_the_idle_timeout(certs: Path, tmp_path: Path) -> None:
    with run_webhook(certs, tmp_path, ["--keepalive", "1"]) as server:
        silent = socket.create_connection(("127.0.0.1", server.port))
        silent.settimeout(10)
        started = time.monotonic()
        assert silent.recv(1) == b""  # the server closed it
        assert time.monotonic() - started < 6
        silent.close()


def test_gunicorn_settings_bound_connections_per_worker(certs: Path) -> None:
    from webhook.server import ServeOptions, bound_first_byte_wait, gunicorn_settings
    from webhook.tlsreload import CertificateReloader

    reloader = CertificateReloader(certs / "tls.crt", certs / "tls.key")
    settings = gunicorn_settings(ServeOptions(cert_dir=certs), reloader)
    assert settings["worker_connections"] == 1000 and settings["threads"] == 16
    assert any("--max-connections" in p for p in ServeOptions(cert_dir=certs, max_connections=4).problems())
    from gunicorn.workers import gthread

    before = gthread.DEFAULT_WORKER_DATA_TIMEOUT
    try:
        assert bound_first_byte_wait(0.25) and gthread.DEFAULT_WORKER_DATA_TIMEOUT == 0.25
    finally:
        gthread.DEFAULT_WORKER_DATA_TIMEOUT = before


def test_the_certificate_expiry_is_a_metric_whichever_worker_answers(server: RunningWebhook) -> None:
    cert = x509.load_pem_x509_certificate((server.cert_dir / "tls.crt").read_bytes())
    for _ in range(4):
        text = server.request("GET", "/metrics")[1]
        found = re.search(r"^fhpa_webhook_certificate_expiry_timestamp_seconds (\S+)$", text, re.M)
        assert found, text
        assert float(found.group(1)) == cert.not_valid_after_utc.timestamp()


def test_readyz_fails_with_a_reason_when_the_certificate_expires_within_the_threshold(
    certs: Path, tmp_path: Path
) -> None:
    """The certificate (365 days) is within a 400-day threshold: not ready, and says why, while it
    still serves reviews."""
    extra = ["--cert-expiry-threshold", str(400 * 86400)]
    with run_webhook(certs, tmp_path, extra, ready_statuses=(503,)) as server:
        status, answer = server.request("GET", "/readyz")
        assert status == 503
        assert "expires at" in answer["reason"] and "still being served" in answer["reason"]
        assert server.request("POST", "/validate", review(apply_defaults(fhpa())))[0] == 200
