"""The webhook app through Flask's test client: the response contract, bad input, probes and metrics.
Transport over real TLS is in test_server.py; these pin down what each request gets back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask.testing import FlaskClient

from fhpa_api.defaulting import apply_defaults
from tests.support.reviews import API_VERSION, cronfhpa, decode_patch, fhpa, review
from webhook import admission
from webhook.app import MAX_BODY_BYTES, create_app


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def post(client: FlaskClient, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    resp = client.post(path, data=data, content_type="application/json")
    return resp.status_code, resp.get_json()


# --- /mutate ----------------------------------------------------------------------------------------


def test_mutate_fills_the_design_defaults_of_a_federatedhpa(client: FlaskClient) -> None:
    body = review(fhpa())
    status, answer = post(client, "/mutate", body)
    assert status == 200
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == body["request"]["uid"]
    assert response["allowed"] is True
    ops = {op["path"]: op for op in decode_patch(response)}
    assert ops["/spec/minReplicas"] == {"op": "add", "path": "/spec/minReplicas", "value": 1}
    cpu = ops["/spec/metrics"]["value"][0]
    assert cpu["resource"]["name"] == "cpu" and cpu["resource"]["target"]["averageUtilization"] == 80
    assert ops["/spec/federatedHPAAssignment"]["value"] == {"federatedHPAAssignmentType": "Duplicated"}
    assert "/spec/maxReplicas" not in ops  # the user's value is never touched


def test_mutate_defaults_every_rule_of_a_cronfederatedhpa(client: FlaskClient) -> None:
    rules = [
        {"name": "a", "schedule": "0 8 * * *", "targetMinReplicas": 2},
        {"name": "b", "schedule": "0 20 * * *", "targetMinReplicas": 1, "successfulHistoryLimit": 7},
    ]
    _, answer = post(client, "/mutate", review(cronfhpa(rules=rules)))
    ops = {op["path"]: op["value"] for op in decode_patch(answer["response"])}
    assert ops["/spec/rules/0/successfulHistoryLimit"] == 3
    assert ops["/spec/rules/1/suspend"] is False
    assert "/spec/rules/1/successfulHistoryLimit" not in ops


def test_mutate_sends_no_patch_when_already_defaulted(client: FlaskClient) -> None:
    for obj in (apply_defaults(fhpa()), apply_defaults(cronfhpa())):
        _, answer = post(client, "/mutate", review(obj, "UPDATE", old=obj))
        assert answer["response"] == {"uid": answer["response"]["uid"], "allowed": True}


def test_mutate_lets_a_malformed_object_through_for_validation_to_refuse(client: FlaskClient) -> None:
    _, answer = post(client, "/mutate", review(fhpa(maxReplicas="ten", minReplicas=[1])))
    assert answer["response"]["allowed"] is True


# --- /validate --------------------------------------------------------------------------------------


def test_validate_allows_a_valid_object_of_each_kind(client: FlaskClient) -> None:
    for obj in (apply_defaults(fhpa()), apply_defaults(cronfhpa())):
        status, answer = post(client, "/validate", review(obj))
        assert status == 200
        assert answer["response"]["allowed"] is True
        assert "patch" not in answer["response"]


def test_validate_denial_lists_every_field_error_with_its_path(client: FlaskClient) -> None:
    obj = apply_defaults(fhpa(minReplicas=0))
    obj["spec"]["maxReplicas"] = "ten"
    status, answer = post(client, "/validate", review(obj))
    assert status == 200
    response = answer["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    message = response["status"]["message"]
    assert "spec.minReplicas:" in message and "spec.maxReplicas:" in message


def test_validate_checks_updates_like_creates(client: FlaskClient) -> None:
    old = apply_defaults(fhpa())
    new = apply_defaults(fhpa(minReplicas=5, maxReplicas=2))
    _, answer = post(client, "/validate", review(new, "UPDATE", old=old))
    assert answer["response"]["allowed"] is False
    assert "spec.maxReplicas" in answer["response"]["status"]["message"]


def test_validate_denies_a_bad_cron_schedule_naming_the_rule(client: FlaskClient) -> None:
    obj = apply_defaults(cronfhpa(rules=[{"name": "a", "schedule": "every day", "targetMinReplicas": 1}]))
    _, answer = post(client, "/validate", review(obj))
    assert answer["response"]["allowed"] is False
    assert "spec.rules[0].schedule:" in answer["response"]["status"]["message"]


def test_ineffective_fields_come_back_as_short_warnings(client: FlaskClient) -> None:
    obj = apply_defaults(
        fhpa(
            federatedHPAAssignment={
                "federatedHPAAssignmentType": "Duplicated",
                "clusterAutoscalingPreference": [
                    {"targetCluster": {"clusterNames": ["a"]}, "staticWeight": 2}
                ],
            }
        )
    )
    _, answer = post(client, "/validate", review(obj))
    warnings = answer["response"]["warnings"]
    assert answer["response"]["allowed"] is True
    assert warnings and all(len(w) < 120 for w in warnings)
    assert any("clusterAutoscalingPreference" in w for w in warnings)


def test_dry_run_gets_the_same_answer(client: FlaskClient) -> None:
    for path, obj in (("/validate", apply_defaults(fhpa(minReplicas=9, maxReplicas=3))), ("/mutate", fhpa())):
        real = review(obj, uid="same")
        dry = review(obj, uid="same", dry_run=True)
        assert post(client, path, real) == post(client, path, dry)


def test_v1beta1_review_is_answered_in_v1beta1(client: FlaskClient) -> None:
    _, answer = post(
        client, "/validate", review(apply_defaults(fhpa()), api_version="admission.k8s.io/v1beta1")
    )
    assert answer["apiVersion"] == "admission.k8s.io/v1beta1"


@pytest.mark.parametrize("path", ["/mutate", "/validate"])
def test_delete_connect_other_kinds_and_status_pass_untouched(client: FlaskClient, path: str) -> None:
    broken = fhpa(minReplicas=50, maxReplicas=1)
    bodies = [
        review(None, "DELETE", old=broken),
        review(broken, "CONNECT"),
        review({"kind": "Deployment", "spec": "nonsense"}, kind="Deployment", group="apps"),
        review(broken, kind="FederatedHPA", group="example.com"),
        review(broken, "UPDATE", old=broken, sub_resource="status"),
    ]
    for body in bodies:
        status, answer = post(client, path, body)
        assert status == 200
        assert answer["response"] == {"uid": body["request"]["uid"], "allowed": True}


# --- bad input ---------------------------------------------------------------------------------------


def _valid_body() -> dict[str, Any]:
    return review(apply_defaults(fhpa()))


def _without_uid() -> dict[str, Any]:
    body = _valid_body()
    del body["request"]["uid"]
    return body


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    body = _valid_body()
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return body


BAD_BODIES: dict[str, Any] = {
    "not json": b"{not json",
    "not utf-8": b"\xff\xfe\x00",
    "empty": b"",
    "a list": [1, 2],
    "a string": "AdmissionReview",
    "wrong kind": _with(("kind",), "Pod"),
    "wrong apiVersion": _with(("apiVersion",), "admission.k8s.io/v2"),
    "no request": {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
    "request not an object": _with(("request",), "x"),
    "no uid": _without_uid(),
    "empty uid": _with(("request", "uid"), ""),
    "uid not a string": _with(("request", "uid"), 7),
    "unknown operation": _with(("request", "operation"), "PATCH"),
    "no kind": _with(("request", "kind"), None),
    "kind not an object": _with(("request", "kind"), "FederatedHPA"),
    "dryRun not a boolean": _with(("request", "dryRun"), "yes"),
}


@pytest.mark.parametrize("path", ["/mutate", "/validate"])
@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_bad_bodies_get_400_with_a_json_message(
    client: FlaskClient, path: str, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    status, answer = post(client, path, BAD_BODIES[name])
    assert status == 400
    assert isinstance(answer["error"], str) and answer["error"]
    assert "Traceback" not in answer["error"]
    assert any("HTTP 400" in record.getMessage() for record in caplog.records)


def test_a_body_over_the_limit_is_refused_before_it_is_parsed() -> None:
    client = create_app(max_body_bytes=1000).test_client()
    body = review(fhpa(filler="x" * 2000))
    status, answer = post(client, "/validate", body)
    assert status == 400 and "limit" in answer["error"]


def test_the_default_limit_is_three_mebibytes(client: FlaskClient) -> None:
    assert MAX_BODY_BYTES == 3 * 1024 * 1024
    just_over = json.dumps(review(fhpa(filler="x" * MAX_BODY_BYTES))).encode()
    resp = client.post("/validate", data=just_over, content_type="application/json")
    assert resp.status_code == 400
    under = json.dumps(review(apply_defaults(fhpa()), uid="x" * (2 * 1024 * 1024))).encode()
    assert client.post("/validate", data=under, content_type="application/json").status_code == 200


def test_a_crash_in_the_rules_is_a_denial_not_a_500(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(obj: Any, old: Any = None) -> Any:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(admission, "validate", boom)
    status, answer = post(client, "/validate", _valid_body())
    assert status == 200
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 500
    assert "secret detail" not in json.dumps(answer)


def test_an_unexpected_error_answers_json_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(request: Any) -> Any:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(admission, "mutate", boom)
    status, answer = post(create_app().test_client(), "/mutate", _valid_body())
    assert status == 500
    assert "secret detail" not in json.dumps(answer) and "Traceback" not in json.dumps(answer)


# --- probes and metrics ------------------------------------------------------------------------------


def test_probes(client: FlaskClient) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    reasons = iter(["TLS certificate not loaded: no tls.crt", None])
    app = create_app(readiness=lambda: next(reasons)).test_client()
    not_ready = app.get("/readyz")
    assert not_ready.status_code == 503 and "tls.crt" in not_ready.get_json()["reason"]
    assert app.get("/readyz").status_code == 200


def test_metrics_count_requests_by_path_kind_operation_and_outcome(client: FlaskClient) -> None:
    post(client, "/validate", review(apply_defaults(fhpa(minReplicas=3, maxReplicas=1))))
    post(client, "/validate", review(apply_defaults(cronfhpa())))
    post(client, "/mutate", review(fhpa()))
    post(client, "/mutate", review(None, "DELETE", old=fhpa()))
    post(client, "/mutate", b"nope")
    text = client.get("/metrics").get_data(as_text=True)
    total = "fhpa_webhook_requests_total"
    expected = [
        f'{total}{{kind="FederatedHPA",operation="CREATE",outcome="denied",path="/validate"}} 1.0',
        f'{total}{{kind="CronFederatedHPA",operation="CREATE",outcome="allowed",path="/validate"}} 1.0',
        f'{total}{{kind="FederatedHPA",operation="CREATE",outcome="patched",path="/mutate"}} 1.0',
        f'{total}{{kind="FederatedHPA",operation="DELETE",outcome="skipped",path="/mutate"}} 1.0',
        f'{total}{{kind="unknown",operation="unknown",outcome="bad_request",path="/mutate"}} 1.0',
        'fhpa_webhook_request_duration_seconds_count{path="/mutate"} 3.0',
        'fhpa_webhook_request_duration_seconds_count{path="/validate"} 2.0',
    ]
    for line in expected:
        assert line in text


def test_the_api_group_of_the_fixtures_is_ours() -> None:
    assert API_VERSION.startswith(admission.GROUP + "/")


# --- L1/L2: deep nesting, huge values -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b'{"a":' * 100_000,
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["open-lists", "open-objects", "closed-lists"],
)
@pytest.mark.parametrize("path", ["/mutate", "/validate"])
def test_deeply_nested_json_gets_400_not_500_and_no_traceback(
    client: FlaskClient, path: str, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    status, answer = post(client, path, body)
    assert status == 400, answer
    assert len(answer["error"]) < 200
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)


@pytest.mark.parametrize("depth", [150, 900, 5000])
@pytest.mark.parametrize("where", ["object", "oldObject", "request"])
def test_an_object_nested_deep_inside_a_valid_review_gets_400(
    client: FlaskClient, depth: int, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    obj = apply_defaults(fhpa())
    body = review(obj, "UPDATE", old=obj)
    if where == "request":
        body["request"]["userInfo"] = {"extra": "__DEEP__"}
        deep = "[" * depth + "1" + "]" * depth
    else:
        body["request"][where]["spec"]["metrics"][0]["resource"]["target"]["averageValue"] = "__DEEP__"
        deep = '{"a":' * depth + "1" + "}" * depth
    data = json.dumps(body).replace('"__DEEP__"', deep).encode()  # json.dumps itself would recurse
    status, answer = post(client, "/validate", data)
    assert status == 400
    assert "nests JSON more than 100 levels" in answer["error"]
    assert not any(r.exc_info for r in caplog.records)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def test_a_review_at_a_realistic_depth_is_answered(client: FlaskClient) -> None:
    obj = apply_defaults(fhpa())
    body = review(obj)
    body["request"]["object"]["metadata"]["managedFields"] = [{"fieldsV1": _nested(40)}]
    status, answer = post(client, "/validate", body)
    assert status == 200 and answer["response"]["allowed"] is True


def test_a_megabyte_operation_is_not_echoed_in_the_400_or_the_log(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    body = review(apply_defaults(fhpa()))
    body["request"]["operation"] = "X" * 1_000_000
    status, answer = post(client, "/validate", body)
    assert status == 400
    assert len(answer["error"]) < 300
    assert all(len(r.getMessage()) < 1000 for r in caplog.records)


def test_a_denial_of_megabyte_values_is_short_in_the_answer_and_the_log(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    obj = apply_defaults(fhpa())
    obj["metadata"]["name"] = "N" * 500_000
    obj["spec"]["scaleTargetRef"]["kind"] = "K" * 500_000
    obj["spec"]["metrics"][0]["resource"]["target"]["averageValue"] = "1" * 500_000 + "x"
    body = review(obj)
    body["request"]["name"] = "N" * 500_000
    status, answer = post(client, "/validate", body)
    assert status == 200 and answer["response"]["allowed"] is False
    assert len(json.dumps(answer)) < 5000
    assert all(len(r.getMessage()) < 6000 for r in caplog.records)
