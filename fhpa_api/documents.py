"""Reading Kubernetes manifests from files, directories or stdin: YAML (multi-document) or JSON.

Shared by the commands that take manifests (`fhpa validate`, `fhpa assign`, `fhpa cron next`), so
they all accept the same inputs and report unreadable input the same way, naming the line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

import yaml

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


class DocumentError(ValueError):
    """The input cannot be read or parsed; the message names the source and, for syntax errors, the line."""


class Document(NamedTuple):
    source: str
    doc: Any


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings, as the API server's JSON does."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(path: str | Path) -> list[Document]:
    """Every document in a file, in the top-level manifest files of a directory, or on stdin ("-").

    Empty documents are skipped; a ``kind: List`` is expanded into its items. A directory is not
    searched recursively, so sub-directories (scenarios, kustomize overlays) are left alone.
    """
    text_path = str(path)
    if text_path == STDIN:
        return parse_text(sys.stdin.read(), "<stdin>")
    file_path = Path(path)
    if file_path.is_dir():
        files = sorted(p for p in file_path.iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
        return [doc for f in files for doc in _load_file(f)]
    return _load_file(file_path)


def _load_file(path: Path) -> list[Document]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DocumentError(f"{path}: no such file or directory") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError(f"{path}: cannot read: {exc}") from exc
    return parse_text(text, str(path), as_json=path.suffix == ".json")


def parse_text(text: str, source: str, as_json: bool = False) -> list[Document]:
    """Parse manifest text; JSON files go through the JSON parser for exact error positions."""
    if as_json:
        try:
            docs = [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise DocumentError(
                f"{source}: line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
            ) from exc
    else:
        docs = _parse_yaml(text, source)
    return [Document(source, doc) for doc in _expand(docs)]


def _parse_yaml(text: str, source: str) -> list[Any]:
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise DocumentError(f"{source}: {where}invalid YAML: {problem}") from exc
    except yaml.YAMLError as exc:
        raise DocumentError(f"{source}: invalid YAML: {exc}") from exc


def _expand(docs: list[Any]) -> list[Any]:
    out: list[Any] = []
    for doc in docs:
        if doc is None:
            continue
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out.extend(item for item in doc["items"] if item is not None)
        else:
            out.append(doc)
    return out
