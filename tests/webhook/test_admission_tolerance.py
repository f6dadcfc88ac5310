"""A bare number in behavior.*.tolerance, as a native HPA accepts it, becomes the quantity string the
CRD schema needs: through default_patch (the one source of defaults) and the mutating webhook."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fhpa_api.defaulting import apply_defaults, default_patch, quantity_text
from fhpa_api.validation import validate
from tests.support.reviews import decode_patch, fhpa, review
from webhook import admission
from webhook.review import parse_review


def with_tolerance(up: Any = None, down: Any = None) -> dict[str, Any]:
    behavior: dict[str, Any] = {"scaleUp": {}, "scaleDown": {}}
    if up is not None:
        behavior["scaleUp"]["tolerance"] = up
    if down is not None:
        behavior["scaleDown"]["tolerance"] = down
    return fhpa(behavior=behavior)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0.05, "50m"),
        (0.1, "100m"),
        (1.5, "1500m"),
        (2.0, "2"),
        (0.0, "0"),
        (0.0000015, "1500n"),
        (-0.05, "-50m"),
    ],
)
def test_a_number_is_written_as_the_canonical_quantity(number: float, text: str) -> None:
    assert quantity_text(number) == text


def test_bare_numbers_become_strings_in_both_directions() -> None:
    defaulted = apply_defaults(with_tolerance(up=0.05, down=0.1))
    assert defaulted["spec"]["behavior"]["scaleUp"]["tolerance"] == "50m"
    assert defaulted["spec"]["behavior"]["scaleDown"]["tolerance"] == "100m"
    # without the rewrite, validation refuses the float (and so does the CRD schema)
    assert validate(defaulted).ok
    assert not validate(with_tolerance(up=0.05)).ok


def test_strings_integers_and_absent_tolerances_are_left_alone() -> None:
    for obj in (with_tolerance(up="50m", down=1), with_tolerance(), fhpa()):
        ops = [op for op in default_patch(obj) if op["path"].endswith("/tolerance")]
        assert ops == []
    # a bool is an int to Python, never a quantity: left for validation to refuse
    assert [op for op in default_patch(with_tolerance(up=True)) if "tolerance" in op["path"]] == []


def test_a_non_finite_number_is_left_for_validation() -> None:
    obj = with_tolerance(up=float("nan"))
    assert [op for op in default_patch(obj) if "tolerance" in op["path"]] == []


def test_the_mutating_webhook_sends_the_rewrite_in_its_patch() -> None:
    obj = with_tolerance(up=0.05)
    decision = admission.mutate(parse_review(json.dumps(review(obj)).encode()))
    patch = decode_patch(decision.review["response"])
    assert {"op": "add", "path": "/spec/behavior/scaleUp/tolerance", "value": "50m"} in patch
    assert decision.outcome == "patched"
