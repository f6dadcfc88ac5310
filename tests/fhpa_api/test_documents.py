"""Reading manifests: multi-document YAML, JSON, directories, stdin, and errors that name the line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from fhpa_api.documents import DocumentError, load_documents, parse_text


def test_multi_document_yaml_skips_empty_documents(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text("kind: A\n---\n---\nkind: B\n...\n")
    docs = load_documents(path)
    assert [d.doc["kind"] for d in docs] == ["A", "B"]
    source, doc = docs[1]  # a (source, doc) pair
    assert (source, doc) == (str(path), {"kind": "B"})


def test_json_file(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text('{"kind": "A", "spec": {"maxReplicas": 3}}')
    assert load_documents(path)[0].doc == {"kind": "A", "spec": {"maxReplicas": 3}}


def test_a_list_is_expanded() -> None:
    docs = parse_text("apiVersion: v1\nkind: List\nitems:\n- kind: A\n- kind: B\n", "x")
    assert [d.doc["kind"] for d in docs] == ["A", "B"]


def test_timestamps_stay_strings() -> None:
    doc = parse_text("t: 2026-11-21T08:00:00Z\nd: 2026-11-21\n", "x")[0].doc
    assert doc == {"t": "2026-11-21T08:00:00Z", "d": "2026-11-21"}


def test_directory_reads_top_level_manifests_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b.yml").write_text("kind: B\n")
    (tmp_path / "a.yaml").write_text("kind: A\n")
    (tmp_path / "c.json").write_text('{"kind": "C"}')
    (tmp_path / "notes.txt").write_text("kind: X\n")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "s.yaml").write_text("kind: S\n")
    assert [d.doc["kind"] for d in load_documents(tmp_path)] == ["A", "B", "C"]


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: A\n"))
    docs = load_documents("-")
    assert docs[0].source == "<stdin>"
    assert docs[0].doc == {"kind": "A"}


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: A\nspec:\n  maxReplicas: 3\n   minReplicas: 1\n")
    with pytest.raises(DocumentError) as info:
        load_documents(path)
    assert str(path) in str(info.value)
    assert "line 4" in str(info.value)


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "kind": "A",\n  "spec": }\n')
    with pytest.raises(DocumentError, match="line 3"):
        load_documents(path)


def test_missing_file_is_a_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="no such file"):
        load_documents(tmp_path / "nope.yaml")
