"""The one mapping of a request's failures to the ports' errors, and what an error may say."""

from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from controller.errors import ClusterUnreachableError, ConflictError, GoneError, NotFoundError
from controller.kube.api_errors import (
    STATUS_MESSAGE_LIMIT,
    AccessDeniedError,
    RequestRejectedError,
    map_error,
)


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


def _retries_exhausted(cause: Exception) -> urllib3.exceptions.MaxRetryError:
    return urllib3.exceptions.MaxRetryError(None, "https://host:6443/api/v1/secrets?token=x", cause)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (
            _retries_exhausted(urllib3.exceptions.NewConnectionError(None, "refused")),
            "cannot connect (refused, or no route",
        ),  # type: ignore[arg-type]
        (
            _retries_exhausted(urllib3.exceptions.NameResolutionError("h", None, OSError())),
            "does not resolve",
        ),  # type: ignore[arg-type]
        (_retries_exhausted(urllib3.exceptions.SSLError("bad cert")), "TLS handshake failed"),
        (_retries_exhausted(urllib3.exceptions.ProtocolError("reset")), "connection broke"),
        (urllib3.exceptions.ReadTimeoutError(None, "/x", "timed out"), "timed out waiting for the answer"),  # type: ignore[arg-type]
        (ConnectionRefusedError(111, "Connection refused"), "cannot connect (connection refused)"),
        (OSError(101, "Network is unreachable"), "network error: Network is unreachable"),
    ],
)
def test_a_transport_failure_is_said_in_words_not_the_client_s_exception_name(
    exc: Exception, words: str
) -> None:
    message = str(map_error("m1", exc, "GET /x"))
    assert message.startswith("cluster m1: GET /x: ") and words in message
    assert "Error" not in message and "token" not in message


def test_the_status_message_is_kept_and_the_rest_of_the_body_dropped() -> None:
    body = '{"kind":"Status","message":"the object has been modified","details":{"token":"zzz"}}'
    mapped = map_error("m1", _with_body(409, body))
    assert "the object has been modified" in str(mapped) and "zzz" not in str(mapped)


def test_a_status_message_is_trimmed_and_scrubbed_of_identities_and_credentials() -> None:
    """Security review L6: a member's Status.message goes into Events; it may name our identity there."""
    message = (
        'admission webhook "v.example" denied the request: User "system:serviceaccount:kube-system:fhpa" '
        "sent Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzYSJ9.sig\n" + "padding " * 100
    )
    mapped = str(map_error("m1", _with_body(422, json.dumps({"kind": "Status", "message": message}))))
    assert "denied the request" in mapped
    assert (
        "system:serviceaccount:kube-system" not in mapped and "eyJhbGci" not in mapped and "\n" not in mapped
    )
    assert len(mapped) <= len("cluster m1: HTTP 422: ") + STATUS_MESSAGE_LIMIT


def test_an_admission_denial_is_a_rejected_request_not_a_credentials_problem() -> None:
    # found by the real-API-server delete test: the webhook's 403 read "credentials rejected"
    message = 'admission webhook "validate.example" denied the request: spec.x: not allowed'
    mapped = map_error("cp", _with_body(403, json.dumps({"kind": "Status", "message": message})), "PATCH /x")
    assert type(mapped) is RequestRejectedError
    assert "denied the request: spec.x: not allowed" in str(mapped) and "credentials" not in str(mapped)
    rbac = 'User "system:serviceaccount:a:b" cannot patch resource "x"'
    assert (
        type(map_error("cp", _with_body(403, json.dumps({"kind": "Status", "message": rbac}))))
        is AccessDeniedError
    )


def _with_body(status: int, body: str) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.body = body
    return exc
