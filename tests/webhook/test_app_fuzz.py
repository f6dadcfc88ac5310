"""Fuzzing /mutate and /validate: whatever the body, the answer is 200 (an AdmissionReview echoing the
uid) or 400 (a JSON error), never a 500 and never a traceback, and it comes within a time budget. The
generators include long strings (up to 200 KB), deep nesting (up to 5,000 levels) and long lists, the
shapes that found the review's H2 (quadratic quantity pattern), H3 (huge schedules) and L1 (500 on deep
JSON)."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fhpa_api.defaulting import apply_defaults
from tests.support.reviews import cronfhpa, fhpa, review
from tests.support.webhook_serving import RunningWebhook, generate_certs, run_webhook
from webhook.app import create_app

SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
# A generous per-request budget: a loaded CI machine stays far below it, while the old quantity pattern
# took minutes on the long strings below.
REQUEST_BUDGET_SECONDS = 1.0
"""Per request, in process: CPU seconds of the test's thread (the Flask test client answers in it), so
a loaded machine cannot make it fail."""
TLS_BUDGET_SECONDS = 5.0
"""Per request over TLS to the gunicorn server: wall time (the work is in another process), generous for
a loaded machine, and still far below what the old quantity pattern took on these bodies (minutes)."""
LONG_STRINGS = st.builds(
    lambda unit, count, tail: unit * count + tail,
    st.sampled_from(["1", "9.", "a", "0,", "a.", "-", "<", "é", " "]),
    st.integers(1_000, 100_000),
    st.sampled_from(["", "x", "Ki", "e", " * * * *", "/v1"]),
)


@st.composite
def deep_values(draw: st.DrawFn) -> Any:
    """A list or object nested from 50 to 5,000 levels (json.dumps cannot write the deepest: the body
    generator splices them in as text)."""
    return _Deep(draw(st.integers(50, 5_000)), draw(st.booleans()))


class _Deep:
    def __init__(self, depth: int, lists: bool) -> None:
        self.text = ("[" * depth + "1" + "]" * depth) if lists else ('{"a":' * depth + "1" + "}" * depth)


LARGE_LISTS = st.builds(
    lambda item, count: [copy.deepcopy(item) for _ in range(count)],  # fresh items: no shared objects
    SCALARS | st.builds(dict, a=st.integers()),
    st.integers(100, 20_000),
)
HOSTILE = LONG_STRINGS | deep_values() | LARGE_LISTS
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
        "value",
        "averageValue",
        "tolerance",
        "labels",
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
        action = draw(st.integers(0, 2))
        if action == 0:
            target[key] = draw(JSON_VALUES)
        elif action == 1:
            target[key] = draw(HOSTILE)
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
    return _dumps(body)


def _dumps(value: Any) -> bytes:
    """json.dumps, with the deep values spliced in as text (json.dumps would recurse on them)."""
    deep: list[str] = []

    def placeholder(item: Any) -> str:
        assert isinstance(item, _Deep)
        deep.append(item.text)
        return f"__DEEP_{len(deep) - 1}__"

    text = json.dumps(value, allow_nan=True, default=placeholder)
    for index, part in enumerate(deep):
        text = text.replace(f'"__DEEP_{index}__"', part)
    return text.encode()


def check_answer(
    status: int, raw: bytes, sent: bytes, seconds: float = 0.0, budget: float = REQUEST_BUDGET_SECONDS
) -> None:
    assert status in (200, 400), raw[:500]
    assert seconds < budget, f"{seconds:.1f} s for a {len(sent)}-byte body"
    assert len(raw) < 20_000, f"a {len(raw)}-byte answer echoes too much"
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
    started = time.thread_time()
    resp = client.post(path, data=body, content_type="application/json")
    check_answer(resp.status_code, resp.get_data(), body, time.thread_time() - started)


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
        started = time.perf_counter()
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        check_answer(resp.status, resp.read(), body, time.perf_counter() - started, TLS_BUDGET_SECONDS)
    finally:
        conn.close()
    SENT_OVER_TLS.append(len(body))


SENT_OVER_TLS: list[int] = []


@pytest.mark.slow
def test_the_fuzzed_server_logged_no_traceback(server: RunningWebhook) -> None:
    """Runs after the TLS fuzz test above (same module, same server, same `slow` mark), so it checks the
    log of a server that answered every fuzzed body; it fails if that traffic never happened."""
    assert len(SENT_OVER_TLS) >= 50, "the TLS fuzz test sent nothing: this check would be vacuous"
    assert Path(server.log_path).exists()
    log = server.log()
    assert "Traceback" not in log
    assert all(len(line) < 20_000 for line in log.splitlines()), "a log line echoes a huge value"
