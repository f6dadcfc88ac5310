"""Fuzzing /mutate and /validate: whatever the body, the answer is 200 (an AdmissionReview echoing the
uid) or 400 (a JSON error), never a 500 and never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fhpa_api.defaulting import apply_defaults
from tests.webhook.reviews import cronfhpa, fhpa, review
from tests.webhook.serving import RunningWebhook, generate_certs, run_webhook
from webhook.app import create_app

SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
FIELD_NAMES = st.sampled_from(
    [
        "minReplicas",
        "maxReplicas",
        "metrics",
        "behavior",
        "scaleTargetRef",
        "clusterAffinity",
        "federatedHPAAssignment",
        "scaleAssist",
        "scalingToZero",
        "autoscaleMultiClusterDelay",
        "rules",
        "schedule",
        "timeZone",
        "targetReplicas",
        "targetMinReplicas",
        "name",
        "kind",
        "apiVersion",
    ]
)


@st.composite
def mangled_objects(draw: st.DrawFn) -> Any:
    """A valid object of one of our kinds with random fields replaced, added or removed at any depth."""
    obj = (
        apply_defaults(draw(st.sampled_from([fhpa(), cronfhpa()])))
        if draw(st.booleans())
        else (draw(st.sampled_from([fhpa(), cronfhpa()])))
    )
    for _ in range(draw(st.integers(1, 4))):
        target = obj
        for _ in range(draw(st.integers(0, 3))):
            children = [v for v in target.values() if isinstance(v, dict)] if isinstance(target, dict) else []
            lists = (
                [v[0] for v in target.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
                if isinstance(target, dict)
                else []
            )
            options = children + lists
            if not options:
                break
            target = draw(st.sampled_from(options))
        key = draw(FIELD_NAMES | st.sampled_from(sorted(target)) if target else FIELD_NAMES)
        if draw(st.booleans()):
            target[key] = draw(JSON_VALUES)
        else:
            target.pop(key, None)
    return obj


@st.composite
def admission_bodies(draw: st.DrawFn) -> bytes:
    """Bodies from plausible to hostile: mangled objects in real reviews, mangled reviews, any JSON,
    any bytes."""
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return draw(st.binary(max_size=200))
    if choice == 1:
        return json.dumps(draw(JSON_VALUES)).encode()
    operation = draw(st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]))
    obj = draw(mangled_objects())
    body = review(
        obj,
        operation,
        old=draw(mangled_objects()) if operation == "UPDATE" else None,
        kind=draw(st.sampled_from(["FederatedHPA", "CronFederatedHPA"])),
        dry_run=draw(st.booleans()),
    )
    if choice == 3:  # break the envelope too
        request = body["request"]
        request[draw(st.sampled_from(sorted(request)))] = draw(JSON_VALUES)
    if choice == 4:
        body[draw(st.sampled_from(sorted(body)))] = draw(JSON_VALUES)
    return json.dumps(body, allow_nan=True).encode()


def check_answer(status: int, raw: bytes, sent: bytes) -> None:
    assert status in (200, 400), raw[:500]
    answer = json.loads(raw)
    assert "Traceback" not in raw.decode()
    if status == 400:
        assert isinstance(answer["error"], str)
        return
    request = json.loads(sent)["request"]
    assert answer["response"]["uid"] == request["uid"]
    assert isinstance(answer["response"]["allowed"], bool)


@pytest.fixture(scope="module")
def client() -> FlaskClient:
    return create_app().test_client()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/mutate", "/validate"]), body=admission_bodies())
def test_any_body_gets_200_or_400(client: FlaskClient, path: str, body: bytes) -> None:
    resp = client.post(path, data=body, content_type="application/json")
    check_answer(resp.status_code, resp.get_data(), body)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningWebhook]:
    certs = tmp_path_factory.mktemp("certs")
    generate_certs(certs)
    with run_webhook(certs, tmp_path_factory.mktemp("logs")) as running:
        yield running


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/mutate", "/validate"]), body=admission_bodies())
def test_any_body_over_tls_gets_200_or_400(server: RunningWebhook, path: str, body: bytes) -> None:
    conn = server.connection()
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        check_answer(resp.status, resp.read(), body)
    finally:
        conn.close()


def test_the_fuzzed_server_logged_no_traceback(server: RunningWebhook) -> None:
    assert "Traceback" not in server.log()
    assert Path(server.log_path).exists()
