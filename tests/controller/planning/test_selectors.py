"""Label selectors in their three forms (API model, LabelSelector object, query string) select alike."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.planning.selectors import (
    label_selector_matches,
    parse_selector,
    selector_matches,
    selector_string,
)
from fhpa_api.models import LabelSelector
from tests.support.fakekube_selectors import label_selector_matches as server_selects


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "1"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "api"}, False),
        ({"matchExpressions": [{"key": "t", "operator": "In", "values": ["a", "b"]}]}, {"t": "b"}, True),
        ({"matchExpressions": [{"key": "t", "operator": "DoesNotExist"}]}, {"t": "b"}, False),
        ("app=web,tier in (a, b),!old", {"app": "web", "tier": "a"}, True),
        ("app=web,tier notin (a)", {"app": "web", "tier": "a"}, False),
        ("app!=web", {}, True),
        ("app", {"app": ""}, True),
    ],
)
def test_selectors(selector: Any, labels: dict[str, str], expected: bool) -> None:
    reqs = parse_selector(selector)
    assert reqs is not None
    assert selector_matches(reqs, labels) is expected


label_keys = st.sampled_from(["app", "tier", "team"])
label_values = st.sampled_from(["a", "b", "c"])
requirements = st.builds(
    lambda key, op, values: {"key": key, "operator": op, "values": values if op in ("In", "NotIn") else []},
    label_keys,
    st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
    st.lists(label_values, min_size=1, max_size=3, unique=True),
)
selectors = st.fixed_dictionaries(
    {"matchLabels": st.dictionaries(label_keys, label_values, max_size=2)},
    optional={"matchExpressions": st.lists(requirements, max_size=3)},
)


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics, written out directly."""
    if any(labels.get(k) != v for k, v in selector["matchLabels"].items()):
        return False
    for req in selector.get("matchExpressions", []):
        key, op, values = req["key"], req["operator"], req["values"]
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


@settings(max_examples=200)
@given(selector=selectors, labels=st.dictionaries(label_keys, label_values))
def test_selector_strings_select_what_the_label_selector_selects(
    selector: dict[str, Any], labels: dict[str, str]
) -> None:
    assert server_selects(selector_string(selector), labels) == selects(selector, labels)


@settings(max_examples=200)
@given(selector=selectors, labels=st.dictionaries(label_keys, label_values))
def test_every_form_of_a_selector_selects_alike(selector: dict[str, Any], labels: dict[str, str]) -> None:
    expected = selects(selector, labels)
    assert label_selector_matches(LabelSelector.model_validate(selector), labels) == expected
    reqs = parse_selector(selector)
    assert reqs is not None and selector_matches(reqs, labels) == expected
    from_string = parse_selector(selector_string(selector))
    assert from_string is not None and selector_matches(from_string, labels) == expected


def test_an_unknown_operator_selects_nothing() -> None:
    odd = {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["web"]}]}
    assert parse_selector(odd) is None
    assert not label_selector_matches(LabelSelector.model_validate(odd), {"app": "web"})
