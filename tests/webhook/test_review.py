"""The AdmissionReview envelope: parsing what the API server sends and shaping the answer."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.reviews import decode_patch, fhpa, review
from webhook.review import MAX_WARNING_CHARS, BadReview, allow, clean_warning, deny, parse_review


def test_parse_keeps_what_the_decision_needs() -> None:
    old = fhpa()
    body = review(fhpa(), "UPDATE", old=old, dry_run=True, uid="u-1")
    request = parse_review(json.dumps(body).encode())
    assert (request.uid, request.operation, request.kind, request.group) == (
        "u-1",
        "UPDATE",
        "FederatedHPA",
        "autoscaling.karmada.io",
    )
    assert request.dry_run is True and request.old_object == old and request.name == "web"


def test_parse_names_the_missing_field() -> None:
    body = review(fhpa())
    del body["request"]["operation"]
    with pytest.raises(BadReview, match=r"request\.operation is missing"):
        parse_review(json.dumps(body).encode())


def test_allow_sends_a_patch_only_with_operations() -> None:
    request = parse_review(json.dumps(review(fhpa())).encode())
    assert allow(request, [])["response"] == {"uid": request.uid, "allowed": True}
    ops = [{"op": "add", "path": "/spec/minReplicas", "value": 1}]
    assert decode_patch(allow(request, ops)["response"]) == ops


def test_deny_carries_code_reason_and_message() -> None:
    request = parse_review(json.dumps(review(fhpa())).encode())
    status = deny(request, "spec.maxReplicas: must be >= 1", 403, "Forbidden")["response"]["status"]
    assert status == {
        "status": "Failure",
        "code": 403,
        "reason": "Forbidden",
        "message": "spec.maxReplicas: must be >= 1",
    }


@given(st.text(max_size=400))
def test_warnings_are_printable_single_lines_under_120(text: str) -> None:
    cleaned = clean_warning(text)
    assert len(cleaned) <= MAX_WARNING_CHARS < 120
    assert cleaned.isprintable()


def test_a_short_warning_is_kept_as_is_and_empty_ones_dropped() -> None:
    request = parse_review(json.dumps(review(fhpa())).encode())
    answer = allow(request, warnings=["spec.x: is ignored", "\n\t"])
    assert answer["response"]["warnings"] == ["spec.x: is ignored"]


def test_nesting_depth_counts_container_levels_and_stops_past_the_limit() -> None:
    from webhook.review import MAX_NESTING_DEPTH, nesting_depth

    assert nesting_depth("x") == 0 and nesting_depth({}) == 1 and nesting_depth([1, "a", None]) == 1
    assert nesting_depth({"a": [{"b": 1}, 2], "c": {"d": {}}}) == 3
    deep: list[object] = []
    for _ in range(10 * MAX_NESTING_DEPTH):
        deep = [deep]
    assert nesting_depth(deep) == MAX_NESTING_DEPTH + 1
