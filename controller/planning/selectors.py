"""Label selectors: the one reading of metav1.LabelSelector semantics the controller uses.

A selector comes in three forms: the API model (a ClusterAffinity's labelSelector), a LabelSelector
object as a workload's ``spec.selector`` holds it, and the query string an API server takes (or a Scale's
``status.selector``). Each form is read here, into the same requirements with the same matching rule, so
the affinity the planner applies, the pods the member cache counts and the query the member adapter sends
can never disagree about what a selector selects. An operator that is not known selects nothing: a
malformed selector narrows a selection instead of widening it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fhpa_api.models import LabelSelector

Requirement = tuple[str, str, frozenset[str]]  # (key, operator, values): In, NotIn, Exists, DoesNotExist

OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def requirement_matches(value: str | None, operator: str, values: Iterable[str]) -> bool:
    """Whether one requirement holds of a value (None: the label or field is absent)."""
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    return False


def selector_matches(reqs: Iterable[Requirement], labels: Mapping[str, str]) -> bool:
    """Whether every requirement holds of ``labels``."""
    return all(requirement_matches(labels.get(key), op, values) for key, op, values in reqs)


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """The API model's selector: matchLabels and every matchExpression must hold; None selects all."""
    if selector is None:
        return True
    for key, value in (selector.match_labels or {}).items():
        if labels.get(key) != value:
            return False
    return all(
        requirement_matches(labels.get(req.key), req.operator, req.values or [])
        for req in selector.match_expressions or []
    )


def _split_terms(text: str) -> list[str]:
    terms, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur.strip())
    return terms


def parse_selector(selector: Any) -> list[Requirement] | None:
    """A LabelSelector (dict) or selector string as requirements; None when it selects nothing
    (a None selector, or an operator we do not know: never guess a match)."""
    if selector is None:
        return None
    reqs: list[Requirement] = []
    if isinstance(selector, Mapping):
        for k, v in (selector.get("matchLabels") or {}).items():
            reqs.append((str(k), "In", frozenset({str(v)})))
        for expr in selector.get("matchExpressions") or ():
            op = expr.get("operator")
            if op not in OPERATORS:
                return None
            reqs.append((str(expr.get("key")), op, frozenset(str(v) for v in expr.get("values") or ())))
        return reqs
    if not isinstance(selector, str):
        return None
    for term in _split_terms(selector):
        words = term.split()
        if len(words) >= 3 and words[1] in ("in", "notin"):
            values = " ".join(words[2:]).strip()
            if not (values.startswith("(") and values.endswith(")")):
                return None
            vals = frozenset(v.strip() for v in values[1:-1].split(",") if v.strip())
            reqs.append((words[0], "In" if words[1] == "in" else "NotIn", vals))
        elif "!=" in term:
            key, _, value = term.partition("!=")
            reqs.append((key.strip(), "NotIn", frozenset({value.strip()})))
        elif "=" in term:
            key, _, value = term.partition("==") if "==" in term else term.partition("=")
            reqs.append((key.strip(), "In", frozenset({value.strip()})))
        elif term.startswith("!"):
            reqs.append((term[1:].strip(), "DoesNotExist", frozenset()))
        elif term:
            reqs.append((term, "Exists", frozenset()))
    return reqs


def selector_string(selector: Any) -> str:
    """A LabelSelector (dict) or selector string as the labelSelector query string."""
    if isinstance(selector, str):
        return selector
    if not isinstance(selector, Mapping):
        return ""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), ",".join(expr.get("values") or [])
        if op in ("In", "NotIn"):
            terms.append(f"{key} {op.lower()} ({values})")
        elif op == "Exists":
            terms.append(str(key))
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)
