"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), as FakeKube applies them."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.fakekube_errors import ApiError

Obj = dict[str, Any]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve_parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, list):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            raise ApiError(422, "Invalid", f"path /{'/'.join(parts)} does not exist")
    return cur, parts[-1]


def _json_get(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for part in parts:
        try:
            cur = cur[int(part)] if isinstance(cur, list) else cur[part]
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, "Invalid", f"path /{'/'.join(parts)} does not exist") from exc
    return cur


def _json_remove(doc: Any, parts: list[str]) -> Any:
    parent, last = _resolve_parent(doc, parts)
    try:
        return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)
    except (KeyError, IndexError, ValueError) as exc:
        raise ApiError(422, "Invalid", f"path /{'/'.join(parts)} does not exist") from exc


def _json_add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return copy.deepcopy(value)
    parent, last = _resolve_parent(doc, parts)
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if index > len(parent):
            raise ApiError(422, "Invalid", f"index {index} out of range")
        parent.insert(index, copy.deepcopy(value))
    elif isinstance(parent, dict):
        parent[last] = copy.deepcopy(value)
    else:
        raise ApiError(422, "Invalid", f"cannot add at /{'/'.join(parts)}")
    return doc


def json_patch(doc: Any, ops: list[Obj]) -> Any:
    """RFC 6902 JSON patch: add, remove, replace, move, copy, test."""
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        if kind == "add":
            doc = _json_add(doc, parts, op.get("value"))
        elif kind == "remove":
            _json_remove(doc, parts)
        elif kind == "replace":
            _json_get(doc, parts)
            if not parts:
                doc = copy.deepcopy(op.get("value"))
            else:
                parent, last = _resolve_parent(doc, parts)
                parent[int(last) if isinstance(parent, list) else last] = copy.deepcopy(op.get("value"))
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = _json_remove(doc, src) if kind == "move" else copy.deepcopy(_json_get(doc, src))
            doc = _json_add(doc, parts, value)
        elif kind == "test":
            if _json_get(doc, parts) != op.get("value"):
                raise ApiError(422, "Invalid", f"test failed at {op.get('path')}")
        else:
            raise ApiError(422, "Invalid", f"unknown JSON patch op {kind!r}")
    return doc
