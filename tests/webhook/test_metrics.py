"""The webhook's metrics: requests counted by outcome, latency observed, the certificate's expiry, and a
scrape that sums the gunicorn workers when they write to a shared directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from webhook.metrics import MULTIPROC_ENV, WebhookMetrics


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_requests_are_counted_by_outcome_and_timed_by_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    metrics = WebhookMetrics()
    metrics.observe("/validate", "FederatedHPA", "CREATE", "denied", 0.002)
    metrics.observe("/validate", "FederatedHPA", "CREATE", "denied", 0.003)
    metrics.set_certificate_expiry(1_900_000_000.0)
    got = samples(metrics.exposition())
    labels = (("kind", "FederatedHPA"), ("operation", "CREATE"), ("outcome", "denied"), ("path", "/validate"))
    assert got[("fhpa_webhook_requests_total", labels)] == 2
    assert got[("fhpa_webhook_request_duration_seconds_count", (("path", "/validate"),))] == 2
    assert got[("fhpa_webhook_certificate_expiry_timestamp_seconds", ())] == 1_900_000_000.0


def test_two_apps_keep_their_own_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    first, second = WebhookMetrics(), WebhookMetrics()
    first.observe("/mutate", "FederatedHPA", "UPDATE", "patched", 0.001)
    assert "fhpa_webhook_requests_total{" not in second.exposition().decode()


def test_a_multiprocess_scrape_reads_the_shared_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))
    (tmp_path / "unrelated.txt").write_text("")
    text = WebhookMetrics().exposition().decode()
    assert "fhpa_webhook_requests_total{" not in text  # nothing written there yet: an empty sum, no error
