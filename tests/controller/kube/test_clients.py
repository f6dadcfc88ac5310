"""Member API clients: kubeconfigs (TLS, client certificates kept off disk), timeouts, error mapping."""

from __future__ import annotations

import base64
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.config import kube_config

from controller.errors import ClusterUnreachableError
from controller.kube.clients import (
    CredentialPolicy,
    KubeClient,
    KubeconfigError,
    Timeouts,
    build_api_client,
    build_configuration,
    opt_ins_used,
    parse_kubeconfig,
)
from tests.support.fake_pki import fake_pki
from tests.support.fakekube import FakeKube


@pytest.fixture
def tls_fake() -> Iterator[FakeKube]:
    with FakeKube(tls=True) as fk:
        yield fk


def client_for(kubeconfig: object, policy: CredentialPolicy | None = None, **kw: object) -> KubeClient:
    api = build_api_client(kubeconfig, policy=policy)  # type: ignore[arg-type]
    return KubeClient("c", api, Timeouts(connect=1, read=2, probe=1), **kw)  # type: ignore[arg-type]


def without_credentials(config: dict[str, Any]) -> dict[str, Any]:
    """A plain-HTTP FakeKube's kubeconfig with no credential: the only http:// kubeconfig accepted."""
    config["users"][0]["user"] = {}
    return config


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
    with pytest.raises(KubeconfigError, match="allow-insecure-tls"):  # only by explicit opt-in
        build_api_client(insecure)
    assert client_for(insecure, CredentialPolicy(allow_insecure_tls=True)).get("/version")


SA_TOKEN = "eyJhbGciOi.CONTROLLER-SA-TOKEN.sig"


@pytest.mark.parametrize(
    ("section", "entry", "message"),
    [
        ("users", {"tokenFile": "{path}"}, "user.tokenFile names a file"),
        ("users", {"token": "t", "tokenFile": "{path}"}, "user.tokenFile names a file"),
        (
            "users",
            {"client-certificate": "{path}", "client-key": "{path}"},
            "user.client-certificate names a file",
        ),
        (
            "users",
            {"client-key": "{path}", "client-certificate-data": "QUFB"},
            "user.client-key names a file",
        ),
        ("clusters", {"certificate-authority": "{path}"}, "cluster.certificate-authority names a file"),
    ],
)
def test_a_kubeconfig_from_a_secret_may_not_name_local_files(
    tls_fake: FakeKube, tmp_path: Path, section: str, entry: dict[str, str], message: str
) -> None:
    """Security review H1: a Secret's kubeconfig naming the controller's ServiceAccount token file made the
    controller send that token, as a bearer credential, to whatever server the Secret named."""
    token_file = tmp_path / "token"
    token_file.write_text(SA_TOKEN + "\n")
    config = tls_fake.kubeconfig(token="t0k")
    filled = {k: v.replace("{path}", str(token_file)) for k, v in entry.items()}
    config[section][0][section[:-1]].update(filled)
    with pytest.raises(KubeconfigError, match=message) as err:
        build_api_client(config)
    assert SA_TOKEN not in str(err.value) and str(token_file) not in str(err.value)
    assert tls_fake.requests == []  # nothing was sent anywhere


def test_http_servers_only_without_credentials_and_basic_auth_over_tls(tls_fake: FakeKube) -> None:
    with FakeKube() as fk:
        for user in ({"token": "t0k"}, {"username": "u", "password": "p"}):
            config = fk.kubeconfig()
            config["users"][0]["user"] = user
            with pytest.raises(KubeconfigError, match="http:// and the user has a credential"):
                build_api_client(config)
        assert client_for(without_credentials(fk.kubeconfig())).get("/version")
        assert fk.requests[-1].headers["authorization"] == ""
    config = tls_fake.kubeconfig()
    config["users"][0]["user"] = {"username": "u", "password": "p"}
    assert client_for(config).get("/version")
    assert tls_fake.requests[-1].headers["authorization"] == "<present>"


def test_a_proxy_url_only_by_explicit_opt_in(tls_fake: FakeKube) -> None:
    config = tls_fake.kubeconfig()
    config["clusters"][0]["cluster"]["proxy-url"] = "http://proxy.example:3128"
    with pytest.raises(KubeconfigError, match="allow-proxy-url"):
        build_api_client(config)
    conf, _ = build_configuration(config, policy=CredentialPolicy(allow_proxy_url=True))
    assert conf.proxy == "http://proxy.example:3128"
    assert opt_ins_used(config) == ["proxy-url"]
    config["clusters"][0]["cluster"]["proxy-url"] = "socks5://proxy.example:1080"
    with pytest.raises(KubeconfigError, match="proxy-url must be"):
        build_api_client(config, policy=CredentialPolicy(allow_proxy_url=True))


def test_context_selection() -> None:
    with FakeKube() as fk:
        config = without_credentials(fk.kubeconfig(cluster="one"))
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


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _set(section: str, field: str, value: object) -> Callable[[dict[str, Any]], None]:
    def mutate(config: dict[str, Any]) -> None:
        config[section][0][section[:-1]][field] = value

    return mutate


def _top(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    def mutate(config: dict[str, Any]) -> None:
        config[key] = value

    return mutate


# Security review M2: each of these raised AttributeError, TypeError, ValueError, ssl.SSLError or
# UnicodeDecodeError, and the registry, which caught only KubeconfigError, dropped the cluster.
TYPE_CONFUSION = [
    (_top("clusters", "very-secret"), "clusters must be a list, not str"),
    (_top("clusters", {"name": "fake", "cluster": {}}), "clusters must be a list, not dict"),
    (_top("users", ["very-secret"]), r"users\[0\] must be a mapping, not str"),
    (_top("contexts", [["fake"]]), r"contexts\[0\] must be a mapping, not list"),
    (_top("current-context", ["fake"]), "current-context must be a string, not list"),
    (lambda c: c.pop("current-context") and c.__setitem__("contexts", "x"), "not exactly one context"),
    (lambda c: c.pop("current-context") and c.__setitem__("contexts", ["x"]), "must be a mapping, not str"),
    (lambda c: c["clusters"][0].__setitem__("cluster", ["https://x"]), "cluster must be a mapping, not list"),
    (lambda c: c["users"][0].__setitem__("user", "very-secret"), "user must be a mapping, not str"),
    (_top("users", [None]), r"users\[0\] must be a mapping, not empty$"),
    (
        lambda c: c["contexts"][0].__setitem__("context", {"cluster": {"x": 1}}),
        "cluster must be a string, not dict",
    ),
    (_set("clusters", "server", 443), "cluster.server must be a string, not int"),
    (_set("clusters", "server", "https://u:very-secret@host"), "must not carry a user name"),
    (_set("clusters", "server", "https://host:99999"), "not a valid URL"),
    (_set("clusters", "server", "https://ho st"), "spaces or control characters"),
    (_set("clusters", "insecure-skip-tls-verify", "yes"), "must be true or false, not str"),
    (_set("clusters", "certificate-authority-data", 1234), "must be a string, not int"),
    (_set("clusters", "certificate-authority-data", "ça"), "not valid base64"),
    (_set("clusters", "certificate-authority-data", _b64(b"not a certificate")), "not a PEM certificate"),
    (_set("clusters", "certificate-authority-data", _b64(b"\xff\xfe\x00")), "not a PEM certificate"),
    (_set("clusters", "tls-server-name", ["x"]), "must be a string, not list"),
    (_set("clusters", "tls-server-name", "bad name\n"), "must be a DNS name"),
    (_set("users", "token", ["very-secret"]), "user.token must be a string, not list"),
    (_set("users", "token", {"very-secret": "very-secret"}), "user.token must be a string, not dict"),
    (_set("users", "token", "very-secret\r\nX-Injected: 1"), "printable ASCII"),
    (_set("users", "password", 12345), "user.password must be a string, not int"),
    (
        lambda c: c["users"][0].__setitem__(
            "user", {"client-certificate-data": _b64(b"very-secret"), "client-key-data": _b64(b"very-secret")}
        ),
        "do not form a valid pair",
    ),
    (_set("users", "as", "system:admin"), "impersonation"),
]


@pytest.mark.parametrize(("mutate", "message"), TYPE_CONFUSION)
def test_malformed_kubeconfig_shapes_are_kubeconfig_errors_without_quoting_them(
    tls_fake: FakeKube, mutate: Callable[[dict[str, Any]], None], message: str
) -> None:
    config = tls_fake.kubeconfig(token="very-secret")
    mutate(config)
    with pytest.raises(KubeconfigError, match=message) as err:
        build_api_client(config)
    assert "very-secret" not in str(err.value)


@pytest.mark.parametrize(
    "text",
    [b"\xff\xfe\x00clusters: []", "when: 2001-13-45\n", "[" * 5000, 12345, ["a"]],
    ids=["not-utf8", "bad-timestamp", "too-deep", "an-int", "a-list"],
)
def test_kubeconfig_text_that_cannot_be_parsed_is_a_kubeconfig_error(text: object) -> None:
    with pytest.raises(KubeconfigError):
        build_api_client(text)  # type: ignore[arg-type]


def test_kubeconfig_text_is_parsed_and_bad_yaml_is_not_echoed() -> None:
    assert parse_kubeconfig("clusters: []\n")["clusters"] == []
    with pytest.raises(KubeconfigError) as err:
        parse_kubeconfig("token: hunter2\n  bad: [")
    assert "hunter2" not in str(err.value)
    with pytest.raises(KubeconfigError):
        parse_kubeconfig("- just a list")


def test_timeouts_and_refused_connections_are_unreachable_and_observed() -> None:
    seen: list[tuple[str, str, str]] = []
    with FakeKube(stall_seconds=3) as fk:
        client = client_for(
            without_credentials(fk.kubeconfig()), observer=lambda c, m, s, o: seen.append((c, m, o))
        )
        fk.faults.add("GET", "/version", stall=3)
        with pytest.raises(ClusterUnreachableError):
            client.get("/version")
        client.get("/version")
        config = without_credentials(fk.kubeconfig())
    dead = client_for(config)  # the server is gone: connection refused
    with pytest.raises(ClusterUnreachableError):
        dead.get("/version")
    assert seen == [("c", "GET", "ClusterUnreachableError"), ("c", "GET", "ok")]


def test_a_body_is_sent_as_given_without_the_generated_clients_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A status write carries ten rows: copying it node by node cost more than the request itself."""
    with FakeKube() as fake:
        client = client_for(without_credentials(fake.kubeconfig()))
        walked: list[Any] = []
        real = client.api.sanitize_for_serialization
        monkeypatch.setattr(
            client.api, "sanitize_for_serialization", lambda obj: walked.append(obj) or real(obj)
        )
        body = {"metadata": {"name": "c1", "namespace": "default"}, "data": {"k": "v"}}
        client.request("POST", "/api/v1/namespaces/default/configmaps", body=body)
        client.close()
        assert fake.store.find("configmaps", "default", "c1")["data"] == {"k": "v"}
        assert not any(seen is body for seen in walked)
