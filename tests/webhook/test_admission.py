"""Which requests the rules see, and what happens when the rule functions themselves fail."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from fhpa_api.defaulting import apply_defaults, default_patch
from tests.support.reviews import cronfhpa, decode_patch, fhpa, review
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
    valid = apply_defaults(fhpa())
    assert admission.review_validation(request_for(review(obj, "UPDATE", old=valid))).outcome == "denied"
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
    new = copy.deepcopy(old)
    new["spec"]["maxReplicas"] = 20
    admission.review_validation(request_for(review(new, "UPDATE", old=old)))
    admission.review_validation(request_for(review(old, "CREATE")))
    assert seen == [old, None]


def test_a_defaulting_crash_lets_the_object_through_to_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(obj: Any) -> Any:
        raise KeyError("spec")

    monkeypatch.setattr(admission, "default_patch", boom)
    decision = admission.mutate(request_for(review(fhpa())))
    assert decision.outcome == "error"
    assert decision.review["response"] == {"uid": decision.review["response"]["uid"], "allowed": True}


# --- M3: updates that leave the spec alone are not checked again -------------------------------------


def _stored_while_bypassed() -> dict[str, Any]:
    """An object the CRD schema admits but the rules refuse (as if stored while the webhook was off)."""
    obj = apply_defaults(fhpa())
    obj["spec"]["scaleTargetRef"] = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "name": "x",
    }
    obj["metadata"]["finalizers"] = ["autoscaling.karmada.io/federated-hpa"]
    assert admission.review_validation(request_for(review(obj))).outcome == "denied"
    return obj


def test_removing_the_finalizer_of_an_object_being_deleted_is_allowed_unchecked() -> None:
    old = _stored_while_bypassed()
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    for handler in (admission.mutate, admission.review_validation):
        decision = handler(request_for(review(new, "UPDATE", old=old)))
        assert decision.outcome == "skipped"
        assert decision.review["response"]["allowed"] is True
        assert "patch" not in decision.review["response"]


def test_an_object_being_deleted_is_not_checked_even_if_its_spec_changes() -> None:
    old = _stored_while_bypassed()
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    new = copy.deepcopy(old)
    new["spec"]["maxReplicas"] = 0
    assert admission.review_validation(request_for(review(new, "UPDATE", old=old))).outcome == "skipped"


@pytest.mark.parametrize("change", ["finalizers", "labels", "annotations", "status"])
def test_a_metadata_or_status_only_update_of_an_invalid_object_is_allowed(change: str) -> None:
    old = _stored_while_bypassed()
    new = copy.deepcopy(old)
    if change == "status":
        new["status"] = {"currentReplicas": 3}
    elif change == "finalizers":
        new["metadata"]["finalizers"] = []
    else:
        new["metadata"][change] = {"team": "payments"}
    for handler in (admission.mutate, admission.review_validation):
        decision = handler(request_for(review(new, "UPDATE", old=old)))
        assert decision.outcome == "skipped", (handler, change)
        assert "patch" not in decision.review["response"]


def test_an_update_that_changes_the_spec_is_still_checked() -> None:
    old = _stored_while_bypassed()
    new = copy.deepcopy(old)
    new["spec"]["maxReplicas"] = 20
    assert admission.review_validation(request_for(review(new, "UPDATE", old=old))).outcome == "denied"
    fixed = apply_defaults(fhpa())
    fixed["metadata"] = old["metadata"]
    assert admission.review_validation(request_for(review(fixed, "UPDATE", old=old))).outcome == "allowed"


def test_an_update_without_a_spec_is_still_checked() -> None:
    old = apply_defaults(fhpa())
    new = copy.deepcopy(old)
    del new["spec"]
    del old["spec"]
    assert admission.review_validation(request_for(review(new, "UPDATE", old=old))).outcome == "denied"


# --- L2: a denial does not echo megabytes back --------------------------------------------------------


def test_a_denial_of_a_huge_object_is_short() -> None:
    obj = apply_defaults(fhpa())
    obj["spec"]["scaleTargetRef"]["name"] = "n" * 1_000_000
    obj["spec"]["metrics"][0]["resource"]["target"]["averageValue"] = "1" * 1_000_000
    obj["metadata"]["labels"] = {f"k{i}": i for i in range(5000)}  # 5000 errors
    decision = admission.review_validation(request_for(review(obj)))
    message = decision.review["response"]["status"]["message"]
    assert decision.outcome == "denied"
    assert len(message) <= admission.MAX_DENIAL_CHARS
    assert "more errors" in message
    assert "n" * 100 not in message and "1" * 100 not in message
