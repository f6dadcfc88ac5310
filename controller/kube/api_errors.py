"""Every failure of a request to a Kubernetes API server, as one of the ports' errors (controller.errors),
decided in one place: what is an outage (failover), what is a refusal (a bug or a policy), and what an
error may say (the cluster, the status, the server's short message; never a body or a credential).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException

from controller.errors import ClusterUnreachableError, ConflictError, GoneError, NotFoundError, PortError
from controller.executor import public_text

T = TypeVar("T")


class AccessDeniedError(ClusterUnreachableError):
    """HTTP 401/403: the cluster answers but will not serve us. Unreachable for failover purposes; a
    caller that can do without one optional read (node capacity) tells it apart from an outage."""


class RequestRejectedError(PortError):
    """The cluster answered and refused the request (400, 422, ...): a bug or a policy, not an outage."""

    def __init__(self, cluster: str, status: int, detail: str) -> None:
        super().__init__(f"cluster {cluster}: HTTP {status}: {detail}")
        self.cluster = cluster
        self.status = status


STATUS_MESSAGE_LIMIT = 200
"""The most characters of a member's Status.message that an error (then an Event or a log) carries."""


def _status_message(body: Any) -> str:
    """The ``message`` of a metav1.Status body, trimmed and scrubbed of anything that looks like a
    credential or an identity (``public_text``); never the rest of the body."""
    try:
        parsed = json.loads(body) if isinstance(body, str | bytes) else None
    except ValueError:
        parsed = None
    message = parsed.get("message") if isinstance(parsed, dict) else None
    return public_text(str(message), STATUS_MESSAGE_LIMIT) if message else ""


def map_error(cluster: str, exc: BaseException, what: str = "") -> PortError:
    """The one mapping from HTTP-library failures to the ports' errors.

    404 NotFound, 409 Conflict, 410 Gone; connection failures, timeouts, 5xx and 429 mean the cluster
    is not serving us: ClusterUnreachableError. 401/403 too: a cluster we may not use is as good as
    down for failover, and the message says why. Other 4xx, and a 403 that an admission webhook
    answered (a denial, not a credentials problem), are RequestRejectedError with the denial's text.
    """
    prefix = f"{what}: " if what else ""
    if isinstance(exc, PortError):
        return exc
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        detail = _status_message(exc.body) or public_text(str(exc.reason or ""), STATUS_MESSAGE_LIMIT)
        if status == 404:
            return NotFoundError(f"cluster {cluster}: {prefix}not found")
        if status == 409:
            return ConflictError(f"cluster {cluster}: {prefix}{detail or 'conflict'}")
        if status == 410:
            return GoneError(f"cluster {cluster}: {prefix}{detail or 'gone'}")
        if status == 403 and "admission webhook" in detail:
            # an admission webhook's denial: the request was refused, our credentials are fine
            return RequestRejectedError(cluster, status, f"{prefix}{detail}")
        if status in (401, 403):
            return AccessDeniedError(cluster, f"{prefix}credentials rejected (HTTP {status})")
        if status == 0 or status == 429 or status >= 500:
            # status 0: the client failed before a response (TLS); its reason names the error type
            reason = f"HTTP {status}" if status else "TLS or transport error"
            return ClusterUnreachableError(cluster, f"{prefix}{reason} {detail}".rstrip())
        return RequestRejectedError(cluster, status, f"{prefix}{detail}")
    if isinstance(exc, urllib3.exceptions.HTTPError | OSError | TimeoutError):
        return ClusterUnreachableError(cluster, f"{prefix}{transport_failure(exc)}")
    return ClusterUnreachableError(cluster, f"{prefix}unexpected {type(exc).__name__}")


def transport_failure(exc: BaseException) -> str:
    """What went wrong before an answer came, in words an operator acts on. The client wraps the cause
    (a MaxRetryError around a NewConnectionError around ConnectionRefusedError): the innermost one
    that says something is named; never the exception's text, which may hold a full URL."""
    errors = urllib3.exceptions
    cause: BaseException | None = exc
    while isinstance(cause, errors.MaxRetryError) and cause.reason is not None:
        cause = cause.reason
    checks: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
        (errors.NameResolutionError, "the host name does not resolve"),
        (errors.SSLError, "the TLS handshake failed"),
        (errors.NewConnectionError, "cannot connect (refused, or no route to the host)"),
        ((errors.ConnectTimeoutError,), "timed out connecting"),
        ((errors.ReadTimeoutError, TimeoutError), "timed out waiting for the answer"),
        (errors.ProtocolError, "the connection broke before the answer was complete"),
        (ConnectionRefusedError, "cannot connect (connection refused)"),
    )
    for kinds, words in checks:
        if isinstance(cause, kinds):
            return words
    if isinstance(cause, OSError) and cause.strerror:
        return f"network error: {cause.strerror}"
    return "no answer (network error)"


def call(cluster: str, fn: Callable[[], T], what: str = "") -> T:
    """Run ``fn`` (a client call) and raise only controller.errors types."""
    try:
        return fn()
    except PortError:
        raise
    except (ApiException, urllib3.exceptions.HTTPError, OSError, TimeoutError) as exc:
        raise map_error(cluster, exc, what) from None
