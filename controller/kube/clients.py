"""API clients for member clusters: built from a kubeconfig held in memory, called with timeouts, and
every failure turned into a controller.errors type in one place.

Why not ``kubernetes.config.load_kube_config``: it writes certificate and key data to temporary files
that live until the process exits, and it runs exec plugins. A member cluster's kubeconfig comes from
a Secret, so its key material must not land on disk and nothing in it may run. Here the CA goes to
urllib3 as data, and a client certificate and key are loaded into an ``ssl.SSLContext`` through an
anonymous in-memory file (``memfd``) or, where there is none, a private file removed at once.

Nothing here logs a kubeconfig, a token or a response body: errors carry the cluster name, the HTTP
status, the reason and the server's short message only.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import ssl
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import urllib3
import yaml
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

from controller.errors import NotFoundError, PortError
from controller.kube.api_errors import (
    call,
)

T = TypeVar("T")

RequestObserver = Callable[[str, str, float, str], None]
"""Called after every request with (cluster, HTTP method, seconds, outcome): "ok" or the error's class
name. For member-API latency metrics; it sees no paths, bodies or credentials."""

MERGE_PATCH = "application/merge-patch+json"
"""The one PATCH content type the adapters send: every patch they make is a JSON merge patch."""


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says what is wrong, never what it contains."""


@dataclass(frozen=True)
class Timeouts:
    """Per-request timeouts in seconds: ``connect`` and ``read`` for API calls, ``probe`` for /readyz."""

    connect: float = 3.0
    read: float = 10.0
    probe: float = 2.0


# --- kubeconfig -------------------------------------------------------------------------------------

OPT_IN_INSECURE_TLS = "autoscaling.karmada.io/allow-insecure-tls"
OPT_IN_PROXY_URL = "autoscaling.karmada.io/allow-proxy-url"

_FILE_KEYS = {
    "cluster": ("certificate-authority",),
    "user": ("tokenFile", "client-certificate", "client-key"),
}
_PLUGIN_KEYS = ("exec", "auth-provider")
_IMPERSONATION_KEYS = ("as", "as-uid", "as-groups", "as-user-extra")
_TOKEN = re.compile(r"[\x21-\x7e]+")  # what an HTTP header carries: printable ASCII, no spaces
_HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


@dataclass(frozen=True)
class CredentialPolicy:
    """What a kubeconfig may do beyond inline credentials over verified TLS: each an explicit opt-in
    (the member Secret's annotations ``OPT_IN_INSECURE_TLS`` and ``OPT_IN_PROXY_URL`` set to "true")."""

    allow_insecure_tls: bool = False
    allow_proxy_url: bool = False


def parse_kubeconfig(source: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """A kubeconfig as a dict, from YAML/JSON text or a mapping."""
    if isinstance(source, Mapping):
        return dict(source)
    if not isinstance(source, str | bytes):
        raise KubeconfigError(f"kubeconfig must be text or a mapping, not {_kind(source)}")
    try:
        loaded = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        # the parser's message can quote the offending line: give only where it is
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise KubeconfigError(f"kubeconfig is not valid YAML{where}") from None
    except Exception as exc:  # a bad timestamp (ValueError), nesting too deep (RecursionError), ...
        raise KubeconfigError(f"kubeconfig cannot be parsed ({type(exc).__name__})") from None
    if not isinstance(loaded, dict):
        raise KubeconfigError("kubeconfig must be a YAML mapping with clusters, users and contexts")
    return loaded


def _kind(value: object) -> str:
    """The kind of a kubeconfig value; an absent or null one is "empty" (its author wrote no NoneType)."""
    return "empty" if value is None else type(value).__name__


def _quote(name: str) -> str:
    """A name from the kubeconfig, for a message: names are not credentials, but keep them short."""
    return repr(name if len(name) <= 64 else name[:63] + "…")


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise KubeconfigError(f"{where} must be a mapping, not {_kind(value)}")
    return value


def _string(entry: Mapping[str, Any], key: str, where: str) -> str | None:
    """``entry[key]`` as a string; None when absent or empty (as kubectl reads an empty field)."""
    value = entry.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise KubeconfigError(f"{where}.{key} must be a string, not {_kind(value)}")
    return value


def _flag(entry: Mapping[str, Any], key: str, where: str) -> bool:
    value = entry.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise KubeconfigError(f"{where}.{key} must be true or false, not {_kind(value)}")
    return value


def _named(config: Mapping[str, Any], section: str, name: str) -> Mapping[str, Any]:
    key = section[:-1]  # clusters -> cluster
    entries = config.get(section)
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise KubeconfigError(f"kubeconfig {section} must be a list, not {_kind(entries)}")
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise KubeconfigError(f"kubeconfig {section}[{i}] must be a mapping, not {_kind(entry)}")
        if entry.get("name") == name:
            return _mapping(entry.get(key), f"{section}[{i}].{key}")
    raise KubeconfigError(f"kubeconfig has no {key} named {_quote(name)}")


def _inline_data(entry: Mapping[str, Any], key: str, where: str) -> bytes | None:
    """``<key>-data`` (base64) of a kubeconfig entry. ``<key>`` (a file path) is refused: a Secret must
    not make the controller read its own files (its ServiceAccount token) and send them anywhere."""
    if entry.get(key) not in (None, ""):
        raise KubeconfigError(
            f"{where}.{key} names a file, which a kubeconfig from a Secret may not do; "
            f"put the content inline as {key}-data"
        )
    value = _string(entry, f"{key}-data", where)
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True) or None
    except (ValueError, TypeError):
        raise KubeconfigError(f"{where}.{key}-data is not valid base64") from None


def _url(value: str, where: str, schemes: tuple[str, ...]) -> str:
    """``value`` when it is a URL with one of ``schemes``, a host and no user info; never echoed."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise KubeconfigError(f"{where} is not a valid URL") from None
    if parts.scheme not in schemes or not parts.hostname:
        raise KubeconfigError(f"{where} must be a {' or '.join(s + '://' for s in schemes)} URL")
    if parts.username is not None or parts.password is not None:
        raise KubeconfigError(f"{where} must not carry a user name or password")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise KubeconfigError(f"{where} must not contain spaces or control characters")
    return value


def _context_of(
    config: Mapping[str, Any], context: str | None
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The cluster and user entries of ``context`` (default: the current context), types checked."""
    if context is not None and not isinstance(context, str):
        raise KubeconfigError(f"the context name must be a string, not {_kind(context)}")
    ctx_name = context or _string(config, "current-context", "kubeconfig")
    if not ctx_name:
        contexts = config.get("contexts") or []
        if not isinstance(contexts, list) or len(contexts) != 1:
            raise KubeconfigError("kubeconfig has no current-context and not exactly one context")
        only = _mapping(contexts[0], "kubeconfig contexts[0]")
        ctx_name = _string(only, "name", "contexts[0]")
        if ctx_name is None:
            raise KubeconfigError("kubeconfig's only context has no name")
    ctx = _named(config, "contexts", ctx_name)
    cluster_name = _string(ctx, "cluster", "context")
    if cluster_name is None:
        raise KubeconfigError(f"context {_quote(ctx_name)} names no cluster")
    cluster = _named(config, "clusters", cluster_name)
    user_name = _string(ctx, "user", "context")
    user = _named(config, "users", user_name) if user_name else {}
    return cluster, user


def opt_ins_used(kubeconfig: str | bytes | Mapping[str, Any], context: str | None = None) -> list[str]:
    """Which opt-in settings (``insecure-skip-tls-verify``, ``proxy-url``) a usable kubeconfig turns on:
    the caller warns about them. Call after ``build_configuration`` accepted the kubeconfig."""
    try:
        cluster, _ = _context_of(parse_kubeconfig(kubeconfig), context)
        used = []
        if _flag(cluster, "insecure-skip-tls-verify", "cluster"):
            used.append("insecure-skip-tls-verify")
        if _string(cluster, "proxy-url", "cluster"):
            used.append("proxy-url")
        return used
    except KubeconfigError:
        raise
    except Exception as exc:
        raise KubeconfigError(f"kubeconfig cannot be used ({type(exc).__name__})") from None


def build_configuration(
    kubeconfig: str | bytes | Mapping[str, Any],
    context: str | None = None,
    policy: CredentialPolicy | None = None,
) -> tuple[Configuration, ssl.SSLContext | None]:
    """A client Configuration (and an SSL context when a client certificate is used) from a kubeconfig
    that came from a Secret.

    Accepted: inline credentials only: a bearer ``token``, ``username``/``password``,
    ``client-certificate-data`` with ``client-key-data``, ``certificate-authority-data``; and
    ``tls-server-name``. Refused: file paths (``tokenFile``, ``certificate-authority``,
    ``client-certificate``, ``client-key``), exec and auth-provider plugins, impersonation, and an
    ``http://`` server when there is any credential to send. ``insecure-skip-tls-verify`` and
    ``proxy-url`` only when ``policy`` allows them. Every other problem, whatever its shape, is a
    KubeconfigError that names what is wrong (a field, a type name), never what the kubeconfig holds.
    """
    try:
        return _build_configuration(kubeconfig, context, policy or CredentialPolicy())
    except KubeconfigError:
        raise
    except Exception as exc:  # a shape nobody foresaw: say which error, not what the kubeconfig holds
        raise KubeconfigError(f"kubeconfig cannot be used ({type(exc).__name__})") from None


def _build_configuration(
    kubeconfig: str | bytes | Mapping[str, Any], context: str | None, policy: CredentialPolicy
) -> tuple[Configuration, ssl.SSLContext | None]:
    config = parse_kubeconfig(kubeconfig)
    cluster, user = _context_of(config, context)
    if any(user.get(k) for k in _PLUGIN_KEYS):
        raise KubeconfigError(
            "exec and auth-provider credentials are not supported; use a token or a certificate"
        )
    if any(user.get(k) for k in _IMPERSONATION_KEYS):
        raise KubeconfigError(
            "impersonation (as, as-groups, ...) is not supported; give the user's own credential"
        )
    for path_key in _FILE_KEYS["user"]:
        if user.get(path_key) not in (None, ""):
            inline = "token" if path_key == "tokenFile" else f"{path_key}-data"
            raise KubeconfigError(
                f"user.{path_key} names a file, which a kubeconfig from a Secret may not do; "
                f"put it inline as {inline}"
            )

    server = _string(cluster, "server", "cluster")
    if server is None or not server.startswith(("https://", "http://")):
        raise KubeconfigError("cluster.server must be an http(s) URL")
    server = _url(server, "cluster.server", ("https", "http"))
    ca = _inline_data(cluster, "certificate-authority", "cluster")
    insecure = _flag(cluster, "insecure-skip-tls-verify", "cluster")
    if insecure and not policy.allow_insecure_tls:
        raise KubeconfigError(
            f"cluster.insecure-skip-tls-verify is refused unless the Secret opts in with the annotation "
            f'{OPT_IN_INSECURE_TLS}: "true"'
        )
    tls_server_name = _string(cluster, "tls-server-name", "cluster")
    if tls_server_name is not None and not _HOSTNAME.fullmatch(tls_server_name):
        raise KubeconfigError("cluster.tls-server-name must be a DNS name")
    proxy = _string(cluster, "proxy-url", "cluster")
    if proxy is not None:
        if not policy.allow_proxy_url:
            raise KubeconfigError(
                "cluster.proxy-url is refused unless the Secret opts in with the annotation "
                f'{OPT_IN_PROXY_URL}: "true"'
            )
        proxy = _url(proxy, "cluster.proxy-url", ("https", "http"))

    token = _string(user, "token", "user")
    if token is not None and not _TOKEN.fullmatch(token):
        raise KubeconfigError("user.token must be printable ASCII without spaces")
    username, password = _string(user, "username", "user"), _string(user, "password", "user")
    cert = _inline_data(user, "client-certificate", "user")
    key = _inline_data(user, "client-key", "user")
    if bool(cert) != bool(key):
        raise KubeconfigError("a client certificate needs both client-certificate-data and client-key-data")
    if server.startswith("http://") and (token or username or password or cert):
        raise KubeconfigError(
            "cluster.server is http:// and the user has a credential, which would be sent in clear text; use https://"
        )

    conf = Configuration(host=server.rstrip("/"))
    conf.verify_ssl = not insecure
    if ca:
        try:
            conf.ca_cert_data = ca.decode()
            ssl.create_default_context(cadata=conf.ca_cert_data)
        except (UnicodeDecodeError, ssl.SSLError, ValueError):
            raise KubeconfigError("cluster.certificate-authority-data is not a PEM certificate") from None
    if tls_server_name:
        conf.tls_server_name = tls_server_name
    if proxy:
        conf.proxy = proxy

    if token:
        conf.api_key = {"authorization": f"Bearer {token}"}
    elif username and password:
        raw = f"{username}:{password}".encode()
        conf.api_key = {"authorization": "Basic " + base64.b64encode(raw).decode()}

    ssl_context = _client_cert_context(conf, cert, key) if cert and key else None
    conf.client_side_validation = False
    return conf, ssl_context


@contextlib.contextmanager
def _secret_file(data: bytes) -> Iterator[str]:
    """A path to ``data`` that exists only for the ``with`` block: an anonymous memfd where possible."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kubeconfig-credential", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="fhpa-") as tmp:  # pragma: no cover - non-Linux fallback
        path = os.path.join(tmp, "credential")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        yield path


def _client_cert_context(conf: Configuration, cert: bytes, key: bytes) -> ssl.SSLContext:
    context = (
        ssl.create_default_context(cadata=conf.ca_cert_data)
        if conf.verify_ssl
        else ssl.create_default_context()
    )
    if not conf.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with _secret_file(cert) as cert_path, _secret_file(key) as key_path:
            context.load_cert_chain(cert_path, key_path)
    except ssl.SSLError:
        raise KubeconfigError("client-certificate and client-key do not form a valid pair") from None
    return context


def build_api_client(
    kubeconfig: str | bytes | Mapping[str, Any],
    context: str | None = None,
    pool_maxsize: int = 4,
    policy: CredentialPolicy | None = None,
) -> ApiClient:
    """An ApiClient for one cluster, with no urllib3 retries: the controller's reconcile loop retries,
    and a request that hangs must fail within its timeout rather than three times its timeout. Raises
    KubeconfigError (and nothing else) when the kubeconfig cannot be used."""
    conf, ssl_context = build_configuration(kubeconfig, context, policy)
    try:
        conf.retries = False
        conf.connection_pool_maxsize = pool_maxsize
        api = ApiClient(conf)
        if ssl_context is not None:
            pool_args: dict[str, Any] = {
                "ssl_context": ssl_context,
                "maxsize": pool_maxsize,
                "retries": False,
            }
            if conf.tls_server_name:
                pool_args["server_hostname"] = conf.tls_server_name
            if conf.proxy:
                api.rest_client.pool_manager = urllib3.ProxyManager(proxy_url=conf.proxy, **pool_args)
            else:
                api.rest_client.pool_manager = urllib3.PoolManager(**pool_args)
    except Exception as exc:
        raise KubeconfigError(f"kubeconfig cannot be used ({type(exc).__name__})") from None
    api.user_agent = "federated-hpa"
    return api


# --- raw JSON requests ------------------------------------------------------------------------------


class KubeClient:
    """Raw JSON requests to one cluster through the official client's transport.

    Raw paths rather than the generated API classes: the member adapter reaches any kind with a scale
    subresource (found through discovery), falls back from autoscaling/v2 to v2beta2, and must choose
    patch content types itself; dicts in, dicts out keeps one code path for all of them.
    """

    def __init__(
        self,
        cluster: str,
        api: ApiClient,
        timeouts: Timeouts | None = None,
        observer: RequestObserver | None = None,
    ) -> None:
        self.cluster = cluster
        self.api = api
        self.timeouts = timeouts or Timeouts()
        self.observer = observer

    def close(self) -> None:
        self.api.close()

    def request(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float | tuple[float, float] | None = None,
    ) -> Any:
        """One request; returns the decoded JSON (or text) body. Raises controller.errors types only."""
        what = f"{method} {path}"

        def send() -> Any:
            headers = {"Accept": "application/json"}
            if body is not None:
                headers["Content-Type"] = content_type or "application/json"
            params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
            # the body is given to the request as it is: it is plain JSON already, and the generated
            # client's walk over it (meant for its model classes) would only copy every node of it
            method_, url, headers_, _, post = self.api.param_serialize(
                method, path, query_params=params, header_params=headers, auth_settings=["BearerToken"]
            )
            resp = self.api.call_api(
                method_,
                url,
                headers_,
                body,
                post,
                _request_timeout=timeout or (self.timeouts.connect, self.timeouts.read),
            )
            data = resp.read()
            if not 200 <= resp.status <= 299:
                raise ApiException(status=resp.status, reason=resp.reason, body=data.decode(errors="replace"))
            if not data:
                return None
            try:
                return json.loads(data)
            except ValueError:
                return data.decode(errors="replace")

        started = time.monotonic()
        outcome = "ok"
        try:
            return call(self.cluster, send, what)
        except PortError as exc:
            outcome = type(exc).__name__
            raise
        finally:
            if self.observer is not None:
                self.observer(self.cluster, method, time.monotonic() - started, outcome)

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query)

    def find(self, path: str, **query: Any) -> Any | None:
        """GET that answers None for 404."""
        try:
            return self.request("GET", path, query)
        except NotFoundError:
            return None

    def probe(self) -> tuple[bool, str]:
        """GET /readyz (then /healthz when /readyz is not served) with the short probe timeout."""
        timeout = (self.timeouts.probe, self.timeouts.probe)
        for path in ("/readyz", "/healthz"):
            try:
                self.request("GET", path, timeout=timeout)
                return True, "ok"
            except NotFoundError:
                continue
            except PortError as exc:
                return False, str(exc)
        return False, "neither /readyz nor /healthz is served"


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
