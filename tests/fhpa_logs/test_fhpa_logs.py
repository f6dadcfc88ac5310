"""Structured logs: one JSON object per line with the extras, and credentials never printed."""

from __future__ import annotations

import io
import json
import logging

import pytest

import fhpa_logs as logs

pytestmark = pytest.mark.usefixtures("keep_root_logger")  # configure() replaces the root handlers


def emit(**extra: object) -> dict:
    stream = io.StringIO()
    logs.configure("debug", "json", stream)
    logging.getLogger("t").info("member action failed", extra=extra)
    return dict(json.loads(stream.getvalue().strip().splitlines()[-1]))


def test_a_line_is_json_with_the_extras() -> None:
    entry = emit(object="ns/web", action="create/member1", error="boom")
    assert entry["message"] == "member action failed"
    assert entry["level"] == "info" and entry["logger"] == "t"
    assert (entry["object"], entry["action"], entry["error"]) == ("ns/web", "create/member1", "boom")


def test_credentials_are_redacted_whatever_the_caller_passes() -> None:
    entry = emit(
        kubeconfig="apiVersion: v1\nusers: [token: s3cr3t]", bearer_token="s3cr3t", cluster={"token": "x"}
    )
    assert "s3cr3t" not in json.dumps(entry)
    assert entry["kubeconfig"] == logs.REDACTED and entry["cluster"] == {"token": logs.REDACTED}


def test_an_exception_is_included() -> None:
    stream = io.StringIO()
    logs.configure("info", "json", stream)
    try:
        raise RuntimeError("bad")
    except RuntimeError:
        logging.getLogger("t").exception("reconcile crashed")
    assert "RuntimeError: bad" in json.loads(stream.getvalue())["exception"]


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="json or text"):
        logs.configure("info", "xml")
