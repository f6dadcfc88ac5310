"""Prometheus metrics of the webhook: requests by path, kind, operation and outcome, and latency.

Under gunicorn each worker is its own process, so a scrape that reached one worker would see only that
worker's counts. When PROMETHEUS_MULTIPROC_DIR is set (the launcher sets it before any worker starts),
every worker writes its values to files there and /metrics sums them, whichever worker answers.

The certificate expiry gauge (review L3) is set by each worker when it loads a certificate; across workers
the most recently set value is reported ("livemostrecent": a dead worker's value is dropped), which is
the certificate the newest reload found. Alert on it: docs/certificates.md has a PrometheusRule.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.exposition import CONTENT_TYPE_LATEST

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Admission must answer within the configuration's 5 s timeout; most answers take a millisecond or two.
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class WebhookMetrics:
    """The webhook's metrics on one registry (a fresh one per app in tests, so apps do not collide)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.requests = Counter(
            "fhpa_webhook_requests",
            "Admission requests by path, kind, operation and outcome "
            "(patched, allowed, denied, skipped, bad_request, error).",
            ["path", "kind", "operation", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "fhpa_webhook_request_duration_seconds",
            "Time from receiving an admission request to having its answer, by path.",
            ["path"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            "fhpa_webhook_certificate_expiry_timestamp_seconds",
            "notAfter of the TLS serving certificate in use, as a Unix time.",
            registry=self.registry,
            multiprocess_mode="livemostrecent",
        )

    def set_certificate_expiry(self, not_after: float) -> None:
        """The certificate-in-use listener (`CertificateReloader.on_certificate`)."""
        self.certificate_expiry.set(not_after)

    def observe(self, path: str, kind: str, operation: str, outcome: str, seconds: float) -> None:
        self.requests.labels(path, kind, operation, outcome).inc()
        self.latency.labels(path).observe(seconds)

    def exposition(self) -> bytes:
        """The text format for a scrape: the sum over all workers when running multi-process."""
        if os.environ.get(MULTIPROC_ENV):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self.registry)


def worker_exited(pid: int) -> None:
    """Drop a dead worker's live gauges (gunicorn's child_exit hook); its counters stay summed."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(pid)
