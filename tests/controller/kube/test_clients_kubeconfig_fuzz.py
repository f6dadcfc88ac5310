"""Fuzzing member kubeconfigs (security review M2): whatever shape a Secret's kubeconfig has, building a
client either works or raises KubeconfigError (which the registry turns into a broken member); never
another exception, which would make the cluster vanish or keep its old credentials; and the message
never carries credential material."""

from __future__ import annotations

import base64
import copy
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.kube.clients import CredentialPolicy, KubeconfigError, build_api_client
from tests.support.fake_pki import fake_pki

SECRET = "Zq9-SECRET-MATERIAL-7f"
SECRET_B64 = base64.b64encode(SECRET.encode()).decode()

CLUSTER_KEYS = (
    "server",
    "certificate-authority-data",
    "certificate-authority",
    "insecure-skip-tls-verify",
    "tls-server-name",
    "proxy-url",
    "disable-compression",
)
USER_KEYS = (
    "token",
    "tokenFile",
    "username",
    "password",
    "client-certificate-data",
    "client-key-data",
    "client-certificate",
    "client-key",
    "exec",
    "auth-provider",
    "as",
)
TOP_KEYS = ("clusters", "users", "contexts", "current-context", "apiVersion", "kind", "preferences")


def base_config() -> dict[str, Any]:
    pki = fake_pki()
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://127.0.0.1:6443",
                    "certificate-authority-data": b64(pki.ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {
                    "token": SECRET,
                    "password": SECRET,
                    "username": "admin",
                    "client-certificate-data": b64(pki.client_cert),
                    "client-key-data": b64(pki.client_key),
                },
            }
        ],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }


# Values that never contain the secret on their own: names, URLs, flags, junk of every JSON/YAML type.
names = st.sampled_from(["c", "u", "ctx", "", "other"]) | st.text(max_size=8)
urls = st.sampled_from(
    [
        "https://127.0.0.1:6443",
        "http://127.0.0.1:8080",
        "https://host:99999",
        "https://[::1",
        "https://x y",
        "ftp://host",
        "https://user:pw@host",
        "socks5://proxy:1080",
        "/var/run/secrets/kubernetes.io/serviceaccount/token",
    ]
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=30)
    | names
    | urls
    | st.binary(max_size=16).map(lambda b: base64.b64encode(b).decode())
)
junk = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
# Credential-bearing values: the secret, wrapped in every type a field might wrongly hold.
secretish = st.sampled_from(
    [
        SECRET,
        [SECRET],
        {"value": SECRET},
        {SECRET: 1},
        SECRET_B64,
        SECRET + "\n",
        f"Bearer {SECRET}",
        b"\xff" + SECRET.encode(),
    ]
)
values = junk | secretish


@st.composite
def mutations(draw: st.DrawFn) -> dict[str, Any]:
    config = copy.deepcopy(base_config())
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        where = draw(st.sampled_from(["cluster", "user", "context", "top", "entry"]))
        if where == "cluster":
            _inner(config, "clusters")[draw(st.sampled_from(CLUSTER_KEYS))] = draw(values)
        elif where == "user":
            _inner(config, "users")[draw(st.sampled_from(USER_KEYS))] = draw(values)
        elif where == "context":
            _inner(config, "contexts")[draw(st.sampled_from(["cluster", "user"]))] = draw(junk)
        elif where == "top":
            config[draw(st.sampled_from(TOP_KEYS))] = draw(junk)
        else:
            section = draw(st.sampled_from(["clusters", "users", "contexts"]))
            if isinstance(config.get(section), list) and config[section]:
                config[section][0] = draw(
                    junk | st.dictionaries(st.sampled_from(["name", section[:-1]]), junk)
                )
    return config


def _inner(config: dict[str, Any], section: str) -> dict[str, Any]:
    """The first entry's body in ``section`` (e.g. clusters[0].cluster), made a dict; a scratch dict when
    an earlier mutation replaced the section or the entry with something else."""
    entries = config.get(section)
    if not isinstance(entries, list) or not entries or not isinstance(entries[0], dict):
        return {}
    body = entries[0].get(section[:-1])
    entries[0][section[:-1]] = body = dict(body) if isinstance(body, dict) else {}
    return body


def _as_text(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config)


kubeconfigs = (
    mutations()
    | mutations().map(_as_text)
    | mutations().map(lambda c: _as_text(c).encode() + b"\xff")
    | st.binary(max_size=64)
    | st.text(max_size=64)
    | junk
)
policies = st.builds(CredentialPolicy, allow_insecure_tls=st.booleans(), allow_proxy_url=st.booleans())


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(kubeconfig=kubeconfigs, context=st.none() | names, policy=policies)
def test_any_kubeconfig_shape_gives_a_client_or_a_kubeconfig_error(
    kubeconfig: object, context: str | None, policy: CredentialPolicy
) -> None:
    try:
        api = build_api_client(kubeconfig, context or None, policy=policy)  # type: ignore[arg-type]
    except KubeconfigError as exc:
        message = str(exc)
        assert SECRET not in message and SECRET_B64 not in message
        # no chained error (a parser's or ssl's, which may quote the input) travels with it
        assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
        return
    api.close()
    assert api.configuration.host.startswith(("https://", "http://"))


def test_the_fuzzer_reaches_both_outcomes() -> None:
    """The base kubeconfig builds, so the property above sees usable configs as well as refusals."""
    api = build_api_client(base_config())
    api.close()
    assert api.configuration.api_key["authorization"].startswith("Bearer ")
