"""Member API clients: kubeconfigs (TLS, client certificates kept off disk), timeouts, error mapping."""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.config import kube_config

from controller.errors import ClusterUnreachableError, ConflictError, GoneError, NotFoundError
from controller.kube.clients import (
    AccessDeniedError,
    KubeClient,
    KubeconfigError,
    RequestRejectedError,
    Timeouts,
    build_api_client,
    map_error,
    parse_kubeconfig,
)
from tests.support.fakekube import FakeKube, fake_pki


@pytest.fixture
def tls_fake() -> Iterator[FakeKube]:
    with FakeKube(tls=True) as fk:
        yield fk


def client_for(kubeconfig: object, **kw: object) -> KubeClient:
    return KubeClient("c", build_api_client(kubeconfig), Timeouts(connect=1, read=2, probe=1), **kw)  # type: ignore[arg-type]


def temp_listing() -> set[str]:
    return set(os.listdir(tempfile.gettempdir()))


def test_client_certificate_over_tls_leaves_no_file_behind(tls_fake: FakeKube) -> None:
    before_files, before_cache = temp_listing(), dict(kube_config._temp_files)
    client = client_for(tls_fake.kubeconfig(client_cert=True))
    assert client.get("/version")["gitVersion"]
    assert tls_fake.requests[-1].client_cn == "fhpa-controller"
    assert tls_fake.requests[-1].headers["authorization"] == ""  # the certificate was the credential
    assert temp_listing() == before_files and kube_config._temp_files == before_cache


def test_bearer_token_over_tls_with_the_ca_as_data(tls_fake: FakeKube) -> None:
    client = client_for(tls_fake.kubeconfig(token="t0k"))
    assert client.probe() == (True, "ok")
    assert tls_fake.requests[-1].headers["authorization"] == "<present>"


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_a_server_certificate_from_another_ca_is_refused(tls_fake: FakeKube) -> None:
    config = tls_fake.kubeconfig()
    wrong_ca = fake_pki().client_cert  # a certificate, but not the issuing CA
    config["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(wrong_ca).decode()
    with pytest.raises(ClusterUnreachableError):
        client_for(config).get("/version")
    insecure = tls_fake.kubeconfig()
    cluster = insecure["clusters"][0]["cluster"]
    del cluster["certificate-authority-data"]
    cluster["insecure-skip-tls-verify"] = True
    assert client_for(insecure).get("/version")


def test_token_file_and_basic_auth(tmp_path: Path) -> None:
    with FakeKube() as fk:
        token_file = tmp_path / "token"
        token_file.write_text("from-file\n")
        config = fk.kubeconfig()
        config["users"][0]["user"] = {"tokenFile": str(token_file)}
        client_for(config).get("/version")
        config["users"][0]["user"] = {"username": "u", "password": "p"}
        client_for(config).get("/version")
        assert [r.headers["authorization"] for r in fk.requests] == ["<present>", "<present>"]


def test_context_selection() -> None:
    with FakeKube() as fk:
        config = fk.kubeconfig(cluster="one")
        config["contexts"].append({"name": "two", "context": {"cluster": "nope", "user": "one"}})
        assert build_api_client(config).configuration.host == fk.url
        with pytest.raises(KubeconfigError, match="no cluster named 'nope'"):
            build_api_client(config, context="two")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c["clusters"][0]["cluster"].pop("server"), "server must be an http"),
        (lambda c: c["users"][0].__setitem__("user", {"exec": {"command": "x"}}), "not supported"),
        (lambda c: c["users"][0].__setitem__("user", {"auth-provider": {"name": "gcp"}}), "not supported"),
        (lambda c: c["users"][0].__setitem__("user", {"client-certificate-data": "AAAA"}), "both"),
        (lambda c: c["users"][0].__setitem__("user", {"client-key-data": "%%%"}), "not valid base64"),
        (
            lambda c: c.pop("current-context") and c["contexts"].append({"name": "x", "context": {}}),
            "current-context",
        ),
    ],
)
def test_unusable_kubeconfigs_are_refused_without_quoting_them(mutate: object, message: str) -> None:
    with FakeKube() as fk:
        config = fk.kubeconfig(token="very-secret")
        mutate(config)  # type: ignore[operator]
        with pytest.raises(KubeconfigError, match=message) as err:
            build_api_client(config)
        assert "very-secret" not in str(err.value)


def test_kubeconfig_text_is_parsed_and_bad_yaml_is_not_echoed() -> None:
    assert parse_kubeconfig("clusters: []\n")["clusters"] == []
    with pytest.raises(KubeconfigError) as err:
        parse_kubeconfig("token: hunter2\n  bad: [")
    assert "hunter2" not in str(err.value)
    with pytest.raises(KubeconfigError):
        parse_kubeconfig("- just a list")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ApiException(status=404, reason="Not Found"), NotFoundError),
        (ApiException(status=409, reason="Conflict"), ConflictError),
        (ApiException(status=410, reason="Gone"), GoneError),
        (ApiException(status=500, reason="boom"), ClusterUnreachableError),
        (ApiException(status=503, reason="busy"), ClusterUnreachableError),
        (ApiException(status=429, reason="slow down"), ClusterUnreachableError),
        (ApiException(status=0, reason="SSLError"), ClusterUnreachableError),
        (ApiException(status=403, reason="Forbidden"), AccessDeniedError),
        (ApiException(status=401, reason="Unauthorized"), AccessDeniedError),
        (ApiException(status=422, reason="Invalid"), RequestRejectedError),
        (urllib3.exceptions.ReadTimeoutError(None, "/x", "timed out"), ClusterUnreachableError),  # type: ignore[arg-type]
        (urllib3.exceptions.NewConnectionError(None, "refused"), ClusterUnreachableError),  # type: ignore[arg-type]
        (ConnectionResetError(), ClusterUnreachableError),
    ],
)
def test_one_mapping_of_failures(exc: Exception, expected: type) -> None:
    mapped = map_error("m1", exc, "GET /x")
    assert type(mapped) is expected
    assert "m1" in str(mapped)


def test_the_status_message_is_kept_and_the_rest_of_the_body_dropped() -> None:
    body = '{"kind":"Status","message":"the object has been modified","details":{"token":"zzz"}}'
    mapped = map_error("m1", _with_body(409, body))
    assert "the object has been modified" in str(mapped) and "zzz" not in str(mapped)


def _with_body(status: int, body: str) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.body = body
    return exc


def test_timeouts_and_refused_connections_are_unreachable_and_observed() -> None:
    seen: list[tuple[str, str, str]] = []
    with FakeKube(stall_seconds=3) as fk:
        client = client_for(fk.kubeconfig(), observer=lambda c, m, s, o: seen.append((c, m, o)))
        fk.faults.add("GET", "/version", stall=3)
        with pytest.raises(ClusterUnreachableError):
            client.get("/version")
        client.get("/version")
        config = fk.kubeconfig()
    dead = client_for(config)  # the server is gone: connection refused
    with pytest.raises(ClusterUnreachableError):
        dead.get("/version")
    assert seen == [("c", "GET", "ClusterUnreachableError"), ("c", "GET", "ok")]
