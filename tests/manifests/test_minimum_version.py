"""The management cluster's minimum Kubernetes version, as README.md and docs/install.md state it, is the
newest version any API feature the shipped CRDs and webhook configurations use needs: not lower (the
install would fail half way, as the FederatedHPA CRD did on 1.20), not needlessly higher."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = [
    *sorted((REPO / "manifests" / "crds").glob("*.yaml")),
    REPO / "manifests" / "webhook" / "base" / "webhookconfigurations.yaml",
]
STATED = re.compile(r"[Kk]ubernetes 1\.(\d+) or newer")

# the first minor version whose API server accepts the field on a default install
FEATURES = {
    "x-kubernetes-validations": 25,  # CRD validation rules, beta and on by default
    "fieldPath": 28,  # a validation rule naming the field it reports
    "messageExpression": 27,
    "matchConditions": 28,  # admission webhook match conditions, beta and on by default
}


def keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from keys(value)


def used_features() -> dict[str, int]:
    found = {
        key
        for path in MANIFESTS
        for doc in yaml.safe_load_all(path.read_text())
        if doc
        for key in keys(doc)
        if key in FEATURES
    }
    return {name: FEATURES[name] for name in found}


def stated(path: Path) -> set[int]:
    return {int(minor) for minor in STATED.findall(path.read_text())}


def test_the_stated_minimum_is_what_the_manifests_need() -> None:
    used = used_features()
    assert {"x-kubernetes-validations", "matchConditions"} <= set(used)
    needed = max(used.values())
    assert stated(REPO / "docs" / "install.md") == {needed}
    assert stated(REPO / "README.md") == {needed}
