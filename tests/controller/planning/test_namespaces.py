"""The namespace guard's pure decision (security review M5): allow and deny globs, deny wins."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.planning.namespaces import (
    REASON_NAMESPACE_NOT_ALLOWED,
    NamespacePolicy,
    glob_match,
    is_refused,
    parse_patterns,
    refused_conditions,
    without_refusal,
)
from fhpa_api.models import Condition

T0 = datetime(2026, 6, 1, tzinfo=UTC)
T1 = datetime(2026, 6, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("kube-*", "kube-system", True),
        ("kube-*", "kube-", True),
        ("kube-*", "kube", False),
        ("kube-*", "my-kube-system", False),
        ("*", "", True),
        ("*", "anything", True),
        ("team-?", "team-a", True),
        ("team-?", "team-ab", False),
        ("*-prod", "payments-prod", True),
        ("*-prod", "payments-prod-2", False),
        ("a*b*c", "aXXbYYc", True),
        ("a*b*c", "aXXbYY", False),
        ("web", "web", True),
        ("web", "web2", False),
        ("**", "x", True),
        ("", "", True),
        ("", "x", False),
    ],
)
def test_glob_match(pattern: str, text: str, expected: bool) -> None:
    assert glob_match(pattern, text) is expected


@given(st.text("ab*?", max_size=8), st.text("ab", max_size=10))
def test_glob_match_agrees_with_fnmatch(pattern: str, text: str) -> None:
    import fnmatch

    assert glob_match(pattern, text) is fnmatch.fnmatchcase(text, pattern)


def test_defaults_allow_every_namespace_but_kube_star() -> None:
    policy = NamespacePolicy()
    assert policy.refusal("default") is None
    assert policy.refusal("payments") is None
    for ns in ("kube-system", "kube-public", "kube-node-lease"):
        message = policy.refusal(ns)
        assert message is not None and "--deny-namespaces pattern 'kube-*'" in message


def test_an_allow_list_refuses_everything_else() -> None:
    policy = NamespacePolicy.from_flags("team-*, web", "kube-*")
    assert policy.refusal("team-a") is None
    assert policy.refusal("web") is None
    message = policy.refusal("payments")
    assert message is not None
    assert "namespace payments matches no --allow-namespaces pattern (team-*, web)" in message
    assert "nothing is read or written in member clusters" in message


def test_deny_wins_over_allow() -> None:
    policy = NamespacePolicy.from_flags("*", "kube-*,team-secret")
    assert policy.refusal("team-secret") is not None
    assert policy.refusal("kube-system") is not None
    assert policy.refusal("team-open") is None
    both = NamespacePolicy.from_flags("kube-system", "kube-*")
    message = both.refusal("kube-system")
    assert message is not None and "--deny-namespaces" in message


def test_an_empty_deny_list_denies_nothing() -> None:
    assert NamespacePolicy.from_flags("*", "").refusal("kube-system") is None


def test_parse_patterns() -> None:
    assert parse_patterns(" a , b-*,,a ", "--x") == ("a", "b-*")
    assert parse_patterns("", "--x") == ()


@pytest.mark.parametrize("bad", ["Kube-*", "a/b", "team_a", "ns[0-9]", "x" * 64])
def test_bad_patterns_are_refused_naming_the_flag(bad: str) -> None:
    with pytest.raises(ValueError, match="--deny-namespaces"):
        NamespacePolicy.from_flags("*", bad)


def test_an_empty_allow_list_is_refused_rather_than_denying_everything() -> None:
    with pytest.raises(ValueError, match="--allow-namespaces: empty"):
        NamespacePolicy.from_flags(" , ", "kube-*")


def test_refused_conditions_replace_ready_and_keep_the_time_while_unchanged() -> None:
    ready = Condition(type="Ready", status="True", reason="Assigned", message="2", last_transition_time=T0)
    other = Condition(type="ScalingActive", status="True", reason="x", message="y", last_transition_time=T0)
    first = refused_conditions([ready, other], "no", T1)
    assert [c.type for c in first] == ["ScalingActive", "Ready", "Stalled"]  # Stalled for kstatus
    refused = first[1]
    assert (refused.status, refused.reason, refused.message) == ("False", REASON_NAMESPACE_NOT_ALLOWED, "no")
    assert refused.last_transition_time == T1
    assert refused_conditions(first, "no", datetime(2027, 1, 1, tzinfo=UTC))[1].last_transition_time == T1
    assert is_refused(first, "no")
    assert not is_refused(first, "another message")
    assert not is_refused([ready, other], "no")


def test_without_refusal_drops_only_the_guards_condition() -> None:
    other = Condition(
        type="Ready", status="False", reason="NoCandidates", message="", last_transition_time=T0
    )
    assert without_refusal(refused_conditions(None, "no", T0)) is None
    assert without_refusal([other]) == [other]
    assert without_refusal(None) is None
