"""The webhook's Flask app: /mutate, /validate, /healthz, /readyz and /metrics.

Transport rules live here: the body limit, HTTP 400 for anything that is not an AdmissionReview, and a
catch-all so no input leaks a traceback. Admission decisions are `webhook.admission`'s.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from fhpa_api.limits import cut
from webhook import admission
from webhook.cost import MemoryBudget, OverBudget, TooManyContainers, check_containers
from webhook.metrics import CONTENT_TYPE, WebhookMetrics
from webhook.review import AdmissionRequest, BadReview, parse_review

log = logging.getLogger(__name__)

# The API server's own request limit is 3 MiB; an AdmissionReview carries the object twice at most.
MAX_BODY_BYTES = 3 * 1024 * 1024
READ_CHUNK = 64 * 1024
DRAIN_FACTOR = 4
# An error message or log line quotes at most this much of what the client sent.
MAX_LOGGED_CHARS = 500

Readiness = Callable[[], str | None]
"""Returns None when the server may take traffic, else the reason it may not."""

Handler = Callable[[AdmissionRequest], admission.Decision]


def create_app(
    readiness: Readiness | None = None,
    metrics: WebhookMetrics | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    budget: MemoryBudget | None = None,
) -> Flask:
    """Build the app. `readiness` is the TLS layer's "certificate loaded" check (None: always ready,
    as under Flask's test client); `metrics` defaults to a fresh registry of this app's own; `budget` is
    the memory its threads share (one app per worker process, so one budget per worker)."""
    app = Flask("fhpa-webhook")
    app.config["MAX_BODY_BYTES"] = max_body_bytes
    webhook_metrics = metrics or WebhookMetrics()
    memory = budget or MemoryBudget()

    def review_endpoint(path: str, handler: Handler) -> Callable[[], Response]:
        def endpoint() -> Response:
            declared = request.content_length
            try:
                with memory.reserve(max_body_bytes if declared is None else declared):
                    return _serve_review(path, handler, webhook_metrics, max_body_bytes)
            except OverBudget as exc:
                log.warning("HTTP 503 on %s from %s: %s", path, request.remote_addr, exc)
                return _json(503, {"error": str(exc)})

        endpoint.__name__ = f"review_{path.strip('/')}"
        return endpoint

    app.add_url_rule("/mutate", view_func=review_endpoint("/mutate", admission.mutate), methods=["POST"])
    app.add_url_rule(
        "/validate", view_func=review_endpoint("/validate", admission.review_validation), methods=["POST"]
    )

    @app.get("/healthz")
    def healthz() -> Response:
        return _json(200, {"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        reason = readiness() if readiness else None
        if reason:
            return _json(503, {"status": "not ready", "reason": reason})
        return _json(200, {"status": "ready"})

    @app.get("/metrics")
    def metrics_endpoint() -> Response:
        return Response(webhook_metrics.exposition(), status=200, content_type=CONTENT_TYPE)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        return _json(exc.code or 400, {"error": exc.description or exc.name})

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _json(500, {"error": "internal error; the webhook logged the details"})

    return app


def _serve_review(path: str, handler: Handler, metrics: WebhookMetrics, limit: int) -> Response:
    started = time.perf_counter()
    try:
        body = _read_body(limit)
        check_containers(body)
        review_request = parse_review(body)
    except (BadReview, TooManyContainers) as exc:
        log.warning("HTTP 400 on %s from %s: %s", path, request.remote_addr, cut(str(exc), MAX_LOGGED_CHARS))
        metrics.observe(path, "unknown", "unknown", "bad_request", time.perf_counter() - started)
        # No "Connection: close": gunicorn drains an unread remainder (for at most a few seconds) so that
        # a client still sending its body gets to read this answer instead of a reset connection.
        return _json(400, {"error": cut(str(exc), MAX_LOGGED_CHARS)})
    decision = handler(review_request)
    response = _json(200, decision.review)
    metrics.observe(
        path,
        admission.kind_label(review_request),
        review_request.operation,
        decision.outcome,
        time.perf_counter() - started,
    )
    return response


def _read_body(limit: int) -> bytes:
    """The request body, refused (as BadReview) past `limit` bytes. The over-limit rest is read and
    dropped up to DRAIN_FACTOR times the limit, so that a client that sends its whole body before
    reading (most do) gets the 400 rather than a reset connection; beyond that it is cut off."""
    declared = request.content_length
    stream = request.stream
    if declared is not None and declared > limit:
        _discard(stream, min(declared, DRAIN_FACTOR * limit))
        raise BadReview(f"the body is {declared} bytes; the limit is {limit}")
    try:  # one read: both gunicorn's and werkzeug's streams return at most this much, less at the end
        body: bytes = stream.read(limit + 1)
    except Exception as exc:  # a client that stalls or breaks off mid-body; the socket layer times it out
        raise BadReview(f"the body could not be read ({type(exc).__name__})") from None
    if len(body) > limit:
        _discard(stream, (DRAIN_FACTOR - 1) * limit)
        raise BadReview(f"the body is over the {limit}-byte limit")
    if not body:
        raise BadReview("the body is empty; expected an AdmissionReview")
    return body


def _discard(stream: Any, budget: int) -> None:
    """Read and drop up to `budget` bytes (bounded in time by the socket deadlines)."""
    try:
        while budget > 0:
            chunk = stream.read(min(READ_CHUNK, budget))
            if not chunk:
                return
            budget -= len(chunk)
    except Exception:  # the client went away or stalled; the 400 is answered regardless
        return


def _json(status: int, payload: dict[str, Any]) -> Response:
    return Response(json.dumps(payload), status=status, content_type="application/json")
