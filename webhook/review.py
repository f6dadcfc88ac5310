"""The AdmissionReview envelope: reading a request the API server sent, and writing the answer.

Only the envelope lives here; what to answer is `webhook.admission`'s business. Anything that is not a
well-formed `admission.k8s.io` AdmissionReview raises `BadReview`, which the app turns into HTTP 400:
the API server never sends such a body, so whoever did gets a plain error instead of an admission verdict.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from fhpa_api.limits import cut, shorten

ADMISSION_API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
# No object the API server sends nests this deep (pruning drops unknown fields before admission; the
# deepest path in our kinds is ~12 levels, metadata.managedFields ~30); deeper input is refused with
# a 400 before any code walks it recursively.
MAX_NESTING_DEPTH = 100
ECHO_CHARS = 64
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
# The API server cuts longer warnings and rejects non-printable ones; we keep each under this length.
MAX_WARNING_CHARS = 119


class BadReview(ValueError):
    """The body is not an AdmissionReview this webhook can answer; the message says what is wrong."""


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of `AdmissionReview.request` the webhook decides on."""

    api_version: str
    uid: str
    group: str
    kind: str
    operation: str
    sub_resource: str
    name: str
    namespace: str
    object: Any
    old_object: Any
    dry_run: bool


def _field(mapping: dict[str, Any], key: str, expected: type, where: str, required: bool) -> Any:
    value = mapping.get(key)
    if value is None:
        if required:
            raise BadReview(f"{where}.{key} is missing")
        return expected()
    if not isinstance(value, expected):
        raise BadReview(f"{where}.{key} must be a {_type_name(expected)}, got {_type_name(type(value))}")
    return value


def _type_name(t: type) -> str:
    return {dict: "JSON object", str: "string", bool: "boolean", list: "list"}.get(t, t.__name__)


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode and check a request body; raise BadReview with a reason a person can act on."""
    try:
        review = json.loads(body)
    except RecursionError:
        raise BadReview(f"the body nests JSON more than {MAX_NESTING_DEPTH} levels deep") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadReview(f"the body is not JSON ({cut(str(exc), 200)})") from None
    if nesting_depth(review) > MAX_NESTING_DEPTH:
        raise BadReview(f"the body nests JSON more than {MAX_NESTING_DEPTH} levels deep")
    if not isinstance(review, dict):
        raise BadReview("the body must be a JSON object (an AdmissionReview)")
    api_version = review.get("apiVersion")
    if review.get("kind") != "AdmissionReview" or api_version not in ADMISSION_API_VERSIONS:
        raise BadReview(
            "the body is not an AdmissionReview: expected kind AdmissionReview and apiVersion "
            f"{' or '.join(ADMISSION_API_VERSIONS)}"
        )
    request = _field(review, "request", dict, "AdmissionReview", required=True)
    uid = _field(request, "uid", str, "request", required=True)
    if not uid:
        raise BadReview("request.uid is empty")
    operation = _field(request, "operation", str, "request", required=True)
    if operation not in OPERATIONS:
        raise BadReview(
            f"request.operation must be one of {', '.join(OPERATIONS)}, got {shorten(operation, ECHO_CHARS)}"
        )
    gvk = _field(request, "kind", dict, "request", required=True)
    kind = _field(gvk, "kind", str, "request.kind", required=True)
    group = _field(gvk, "group", str, "request.kind", required=False)
    return AdmissionRequest(
        api_version=api_version,
        uid=uid,
        group=group,
        kind=kind,
        operation=operation,
        sub_resource=_field(request, "subResource", str, "request", required=False),
        name=_field(request, "name", str, "request", required=False),
        namespace=_field(request, "namespace", str, "request", required=False),
        object=request.get("object"),
        old_object=request.get("oldObject"),
        dry_run=_field(request, "dryRun", bool, "request", required=False),
    )


def nesting_depth(value: Any) -> int:
    """How deep lists and objects nest in ``value`` (a scalar is 0), without recursion; counting stops
    past MAX_NESTING_DEPTH. One level at a time, and only containers are kept: the walk runs under the
    GIL beside every other review in the worker, so a 3 MiB body's 300,000 values must cost little."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level and depth <= MAX_NESTING_DEPTH:
        depth += 1
        inner: list[Any] = []
        for node in level:
            children = node.values() if isinstance(node, dict) else node
            inner += [child for child in children if isinstance(child, dict | list)]
        level = inner
    return depth


def clean_warning(text: str) -> str:
    """A warning the API server will pass on unchanged: printable, one line, under 120 characters."""
    line = "".join(c if c.isprintable() else " " for c in str(text)).strip()
    if len(line) > MAX_WARNING_CHARS:
        line = line[: MAX_WARNING_CHARS - 3].rstrip() + "..."
    return line


def allow(
    request: AdmissionRequest, patch: list[dict[str, Any]] | None = None, warnings: list[str] | None = None
) -> dict[str, Any]:
    """An allowing AdmissionReview; the JSONPatch is sent only when there are operations."""
    response: dict[str, Any] = {"uid": request.uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode("ascii")
    return _envelope(request, response, warnings)


def deny(
    request: AdmissionRequest, message: str, code: int, reason: str, warnings: list[str] | None = None
) -> dict[str, Any]:
    """A denying AdmissionReview. The API server shows `message` to the user after
    `admission webhook "NAME" denied the request: `, and answers with `code`."""
    status = {"status": "Failure", "code": code, "reason": reason, "message": message}
    return _envelope(request, {"uid": request.uid, "allowed": False, "status": status}, warnings)


def _envelope(
    request: AdmissionRequest, response: dict[str, Any], warnings: list[str] | None
) -> dict[str, Any]:
    cleaned = [w for w in (clean_warning(w) for w in warnings or []) if w]
    if cleaned:
        response["warnings"] = cleaned
    return {"apiVersion": request.api_version, "kind": "AdmissionReview", "response": response}
