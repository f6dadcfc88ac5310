"""Label and field selectors as FakeKube applies them to lists and watches."""

from __future__ import annotations

import re
from typing import Any

from tests.support.fakekube_errors import ApiError

Obj = dict[str, Any]

_TERM_COMMA = re.compile(r",(?![^(]*\))")
_SET_RE = re.compile(r"^\s*(!?)([\w./-]+)\s*(?:(in|notin)\s*\(([^)]*)\)|(==|=|!=)\s*([\w./-]*))?\s*$")


def _split_selector(text: str) -> list[str]:
    """Split on commas that are not inside parentheses (a comma before the next ")" is inside a set)."""
    parts = _TERM_COMMA.split(text)
    if not parts[-1].strip():
        parts.pop()
    return parts


def label_selector_matches(selector: str | None, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector syntax: ``a=b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``."""
    if not selector:
        return True
    for term in _split_selector(selector):
        m = _SET_RE.match(term)
        if not m:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")
        neg, key, setop, values, op, value = m.groups()
        if setop:
            allowed = {v.strip() for v in values.split(",") if v.strip()}
            inside = key in labels and labels[key] in allowed
            if (setop == "in") != inside:
                return False
        elif op:
            equal = labels.get(key) == value
            if op == "!=" and equal:
                return False
            if op != "!=" and (key not in labels or not equal):
                return False
        elif bool(neg) == (key in labels):
            return False
    return True


def dotted(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def field_selector_matches(selector: str | None, obj: Obj) -> bool:
    """``metadata.name=x``, ``spec.nodeName=n``, ``status.phase!=Failed``, comma-separated (AND)."""
    if not selector:
        return True
    for term in selector.split(","):
        m = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise ApiError(400, "BadRequest", f"invalid field selector: {term!r}")
        path, op, value = m.groups()
        actual = dotted(obj, path)
        actual = "" if actual is None else str(actual)
        if (actual == value) == (op == "!="):
            return False
    return True
