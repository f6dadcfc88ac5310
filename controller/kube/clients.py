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
import ssl
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import urllib3
import yaml
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

from controller.errors import ClusterUnreachableError, ConflictError, GoneError, NotFoundError, PortError

T = TypeVar("T")

RequestObserver = Callable[[str, str, float, str], None]
"""Called after every request with (cluster, HTTP method, seconds, outcome): "ok" or the error's class
name. For member-API latency metrics; it sees no paths, bodies or credentials."""

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says what is wrong, never what it contains."""


class AccessDeniedError(ClusterUnreachableError):
    """HTTP 401/403: the cluster answers but will not serve us. Unreachable for failover purposes; a
    caller that can do without one optional read (node capacity) tells it apart from an outage."""


class RequestRejectedError(PortError):
    """The cluster answered and refused the request (400, 422, ...): a bug or a policy, not an outage."""

    def __init__(self, cluster: str, status: int, detail: str) -> None:
        super().__init__(f"cluster {cluster}: HTTP {status}: {detail}")
        self.cluster = cluster
        self.status = status


@dataclass(frozen=True)
class Timeouts:
    """Per-request timeouts in seconds: ``connect`` and ``read`` for API calls, ``probe`` for /readyz."""

    connect: float = 3.0
    read: float = 10.0
    probe: float = 2.0


# --- kubeconfig -------------------------------------------------------------------------------------


def parse_kubeconfig(source: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """A kubeconfig as a dict, from YAML/JSON text or a mapping."""
    if isinstance(source, Mapping):
        return dict(source)
    try:
        loaded = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        # the parser's message can quote the offending line: give only where it is
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise KubeconfigError(f"kubeconfig is not valid YAML{where}") from None
    if not isinstance(loaded, dict):
        raise KubeconfigError("kubeconfig must be a YAML mapping with clusters, users and contexts")
    return loaded


def _named(config: Mapping[str, Any], section: str, name: str) -> dict[str, Any]:
    key = section[:-1]  # clusters -> cluster
    for entry in config.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return dict(entry.get(key) or {})
    raise KubeconfigError(f"kubeconfig has no {key} named {name!r}")


def _data(entry: Mapping[str, Any], key: str) -> bytes | None:
    """``<key>-data`` (base64) or ``<key>`` (a file path) of a kubeconfig entry."""
    if entry.get(f"{key}-data"):
        try:
            return base64.b64decode(entry[f"{key}-data"], validate=True)
        except (ValueError, TypeError):
            raise KubeconfigError(f"{key}-data is not valid base64") from None
    if entry.get(key):
        try:
            with open(entry[key], "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise KubeconfigError(f"cannot read {key} file: {exc.strerror}") from None
    return None


def build_configuration(
    kubeconfig: str | bytes | Mapping[str, Any], context: str | None = None
) -> tuple[Configuration, ssl.SSLContext | None]:
    """A client Configuration (and an SSL context when a client certificate is used) from a kubeconfig.

    Supported: bearer ``token`` or ``tokenFile``, ``username``/``password``, client certificate and key
    (data or files), ``certificate-authority(-data)``, ``insecure-skip-tls-verify``, ``tls-server-name``,
    ``proxy-url``. Exec and auth-provider plugins are refused: a Secret must not make us run programs.
    """
    config = parse_kubeconfig(kubeconfig)
    ctx_name = context or config.get("current-context")
    if not ctx_name:
        contexts = config.get("contexts") or []
        if len(contexts) != 1:
            raise KubeconfigError("kubeconfig has no current-context and not exactly one context")
        ctx_name = contexts[0].get("name")
    ctx = _named(config, "contexts", str(ctx_name))
    cluster = _named(config, "clusters", str(ctx.get("cluster")))
    user = _named(config, "users", str(ctx.get("user"))) if ctx.get("user") else {}
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise KubeconfigError("cluster.server must be an http(s) URL")
    if user.get("exec") or user.get("auth-provider"):
        raise KubeconfigError(
            "exec and auth-provider credentials are not supported; use a token or a certificate"
        )

    conf = Configuration(host=server.rstrip("/"))
    conf.verify_ssl = not cluster.get("insecure-skip-tls-verify", False)
    ca = _data(cluster, "certificate-authority")
    if ca:
        conf.ca_cert_data = ca.decode()
    if cluster.get("tls-server-name"):
        conf.tls_server_name = cluster["tls-server-name"]
    if cluster.get("proxy-url"):
        conf.proxy = cluster["proxy-url"]

    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = (_data({"t": user["tokenFile"]}, "t") or b"").decode().strip()
    if token:
        conf.api_key = {"authorization": f"Bearer {token}"}
    elif user.get("username") and user.get("password"):
        raw = f"{user['username']}:{user['password']}".encode()
        conf.api_key = {"authorization": "Basic " + base64.b64encode(raw).decode()}

    cert, key = _data(user, "client-certificate"), _data(user, "client-key")
    if bool(cert) != bool(key):
        raise KubeconfigError("a client certificate needs both client-certificate and client-key")
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
    kubeconfig: str | bytes | Mapping[str, Any], context: str | None = None, pool_maxsize: int = 4
) -> ApiClient:
    """An ApiClient for one cluster, with no urllib3 retries: the controller's reconcile loop retries,
    and a request that hangs must fail within its timeout rather than three times its timeout."""
    conf, ssl_context = build_configuration(kubeconfig, context)
    conf.retries = False
    conf.connection_pool_maxsize = pool_maxsize
    api = ApiClient(conf)
    if ssl_context is not None:
        pool_args: dict[str, Any] = {"ssl_context": ssl_context, "maxsize": pool_maxsize, "retries": False}
        if conf.tls_server_name:
            pool_args["server_hostname"] = conf.tls_server_name
        if conf.proxy:
            api.rest_client.pool_manager = urllib3.ProxyManager(proxy_url=conf.proxy, **pool_args)
        else:
            api.rest_client.pool_manager = urllib3.PoolManager(**pool_args)
    api.user_agent = "federated-hpa"
    return api


# --- errors -----------------------------------------------------------------------------------------


def _status_message(body: Any) -> str:
    """The ``message`` of a metav1.Status body, shortened; never the rest of the body."""
    try:
        parsed = json.loads(body) if isinstance(body, str | bytes) else None
    except ValueError:
        parsed = None
    message = parsed.get("message") if isinstance(parsed, dict) else None
    return str(message)[:300] if message else ""


def map_error(cluster: str, exc: BaseException, what: str = "") -> PortError:
    """The one mapping from HTTP-library failures to the ports' errors.

    404 NotFound, 409 Conflict, 410 Gone; connection failures, timeouts, 5xx and 429 mean the cluster
    is not serving us: ClusterUnreachableError. 401/403 too: a cluster we may not use is as good as
    down for failover, and the message says why. Other 4xx are RequestRejectedError.
    """
    prefix = f"{what}: " if what else ""
    if isinstance(exc, PortError):
        return exc
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        detail = _status_message(exc.body) or str(exc.reason or "")
        if status == 404:
            return NotFoundError(f"cluster {cluster}: {prefix}not found")
        if status == 409:
            return ConflictError(f"cluster {cluster}: {prefix}{detail or 'conflict'}")
        if status == 410:
            return GoneError(f"cluster {cluster}: {prefix}{detail or 'gone'}")
        if status in (401, 403):
            return AccessDeniedError(cluster, f"{prefix}credentials rejected (HTTP {status})")
        if status == 0 or status == 429 or status >= 500:
            # status 0: the client failed before a response (TLS); its reason names the error type
            reason = f"HTTP {status}" if status else "TLS or transport error"
            return ClusterUnreachableError(cluster, f"{prefix}{reason} {detail}".rstrip())
        return RequestRejectedError(cluster, status, f"{prefix}{detail}")
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError | TimeoutError):
        return ClusterUnreachableError(cluster, f"{prefix}{type(exc).__name__}")
    return ClusterUnreachableError(cluster, f"{prefix}unexpected {type(exc).__name__}")


def call(cluster: str, fn: Callable[[], T], what: str = "") -> T:
    """Run ``fn`` (a client call) and raise only controller.errors types."""
    try:
        return fn()
    except PortError:
        raise
    except (ApiException, urllib3.exceptions.HTTPError, OSError, TimeoutError) as exc:
        raise map_error(cluster, exc, what) from None


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
            serialized = self.api.param_serialize(
                method,
                path,
                query_params=params,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            resp = self.api.call_api(
                *serialized, _request_timeout=timeout or (self.timeouts.connect, self.timeouts.read)
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
