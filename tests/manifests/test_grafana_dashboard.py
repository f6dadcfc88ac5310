"""The Grafana dashboard (manifests/grafana) queries only series the controller and the webhook export,
with label names those metrics carry: a renamed metric or label fails here, not on an empty panel."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.runtime.metrics import Metrics
from webhook.metrics import WebhookMetrics

DASHBOARD = Path(__file__).resolve().parents[2] / "manifests" / "grafana" / "federated-hpa.json"
# labels Prometheus adds to every series it scrapes (kubernetes_sd relabelling), not the code
TARGET_LABELS = {"pod", "instance", "job", "namespace"}
SERIES = re.compile(r"\bfhpa_[a-z0-9_]+\b")
LABELS_IN_MATCHERS = re.compile(r"[{,]\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
LABELS_IN_BY = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
LABEL_VALUES = re.compile(r"label_values\(\s*([a-z0-9_]+)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)")
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count")}


def exported() -> dict[str, set[str]]:
    """Every series name the code exports, with its label names (``le`` for histogram buckets)."""
    series: dict[str, set[str]] = {}
    registries: list[CollectorRegistry] = [Metrics().registry, WebhookMetrics().registry]
    for registry in registries:
        for collector in list(registry._collector_to_names):  # the metric objects, samples or not
            name, kind = collector._name, collector._type  # type: ignore[attr-defined]
            labels = set(collector._labelnames)  # type: ignore[attr-defined]
            for suffix in SUFFIXES[kind]:
                series[name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return series


def queries(node: Any) -> Iterator[str]:
    """Every PromQL expression in the dashboard: panel targets and templating queries."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "definition") and isinstance(value, str):
                yield value
            else:
                yield from queries(value)
    elif isinstance(node, list):
        for item in node:
            yield from queries(item)


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def test_the_exported_names_are_read_from_the_code() -> None:
    names = exported()
    # a guard on the reader itself: these exist, with these labels
    assert names["fhpa_reconcile_duration_seconds_bucket"] == {"kind", "le"}
    assert names["fhpa_member_actions_total"] == {"action", "result"}
    assert names["fhpa_webhook_certificate_expiry_timestamp_seconds"] == set()
    assert "fhpa_member_actions" not in names  # a counter is scraped as _total


@pytest.mark.parametrize("expr", sorted(set(queries(dashboard()))))
def test_every_query_uses_exported_series_and_their_labels(expr: str) -> None:
    names = exported()
    used = SERIES.findall(expr)
    assert used, f"no fhpa_ metric in {expr!r}"
    unknown = [n for n in used if n not in names]
    assert not unknown, f"{expr!r} queries {unknown}, which the code does not export"
    allowed = set().union(*(names[n] for n in used)) | TARGET_LABELS
    labels = set(LABELS_IN_MATCHERS.findall(expr))
    for group in LABELS_IN_BY.findall(expr):
        labels |= {label.strip() for label in group.split(",") if label.strip()}
    for _metric, label in LABEL_VALUES.findall(expr):
        labels.add(label)
    assert labels <= allowed, f"{expr!r} uses labels {sorted(labels - allowed)} that {used} do not carry"


def test_panels_use_the_datasource_variable_and_unique_ids() -> None:
    data = dashboard()
    panels = [p for p in data["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in data["panels"]}) == len(data["panels"])
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
    assert data["templating"]["list"][0]["name"] == "datasource"
