"""Which requests the rules see, and what happens when the rule functions themselves fail."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fhpa_api.defaulting import apply_defaults, default_patch
from tests.webhook.reviews import cronfhpa, decode_patch, fhpa, review
from webhook import admission
from webhook.review import AdmissionRequest, parse_review


def request_for(body: dict[str, Any]) -> AdmissionRequest:
    return parse_review(json.dumps(body).encode())


def test_mutate_returns_exactly_the_defaulting_patch() -> None:
    for obj in (fhpa(), cronfhpa()):
        decision = admission.mutate(request_for(review(obj)))
        assert decision.outcome == "patched"
        assert decode_patch(decision.review["response"]) == default_patch(obj)


def test_only_creates_and_updates_of_our_kinds_are_checked() -> None:
    obj = apply_defaults(fhpa(minReplicas=8, maxReplicas=2))
    assert admission.review_validation(request_for(review(obj))).outcome == "denied"
    assert admission.review_validation(request_for(review(obj, "UPDATE", old=obj))).outcome == "denied"
    for body in (
        review(None, "DELETE", old=obj),
        review(obj, "CONNECT"),
        review(obj, "UPDATE", old=obj, sub_resource="status"),
        review(obj, group="apps", kind="Deployment"),
    ):
        decision = admission.review_validation(request_for(body))
        assert decision.outcome == "skipped" and decision.review["response"]["allowed"] is True


def test_update_passes_the_old_object_to_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def spy(obj: Any, old: Any = None) -> Any:
        seen.append(old)
        return real(obj, old)

    real = admission.validate
    monkeypatch.setattr(admission, "validate", spy)
    old = apply_defaults(fhpa())
    admission.review_validation(request_for(review(old, "UPDATE", old=old)))
    admission.review_validation(request_for(review(old, "CREATE")))
    assert seen == [old, None]


def test_a_defaulting_crash_lets_the_object_through_to_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(obj: Any) -> Any:
        raise KeyError("spec")

    monkeypatch.setattr(admission, "default_patch", boom)
    decision = admission.mutate(request_for(review(fhpa())))
    assert decision.outcome == "error"
    assert decision.review["response"] == {"uid": decision.review["response"]["uid"], "allowed": True}
