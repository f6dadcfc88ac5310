"""Invariant: validation never raises, whatever JSON-like input it gets; it reports errors instead."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fhpa_api.defaulting import apply_defaults, default_patch
from fhpa_api.documents import load_documents
from fhpa_api.validation import validate

EXAMPLES = [doc for _, doc in load_documents(Path(__file__).resolve().parents[2] / "examples")]

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12)
json_like = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(value=json_like, old=json_like)
def test_validate_never_raises_on_arbitrary_input(value: Any, old: Any) -> None:
    result = validate(value, old)
    assert isinstance(result.errors, list)
    assert result.ok == (not result.errors)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out.extend(_paths(value, (*prefix, index)))
    return out


@st.composite
def mutated_examples(draw: st.DrawFn) -> dict[str, Any]:
    """A shipped example with one node replaced by arbitrary JSON: near-valid input reaches deep rules."""
    doc = copy.deepcopy(draw(st.sampled_from(EXAMPLES)))
    path = draw(st.sampled_from(_paths(doc)[1:]))
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = draw(json_like)
    return doc


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=mutated_examples())
def test_validate_and_defaulting_never_raise_on_mutated_examples(doc: dict[str, Any]) -> None:
    default_patch(doc)
    result = validate(apply_defaults(doc), doc)
    assert all(error.path and error.message for error in result.errors)
