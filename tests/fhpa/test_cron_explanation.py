"""`fhpa explain --kind cronfhpa`: each rule's next fire and last results, and whether the target exists."""

from __future__ import annotations

from datetime import UTC, datetime

from fhpa.cron_explanation import TARGET_MISSING, explain_cron
from fhpa_api.models import CronFederatedHPA
from tests.support.fakekube_store import Resource

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CRONS = Resource("autoscaling.karmada.io", "v1alpha1", "cronfederatedhpas", "CronFederatedHPA", status=True)
BODY = {
    "apiVersion": "autoscaling.karmada.io/v1alpha1",
    "kind": "CronFederatedHPA",
    "metadata": {"name": "nightly", "namespace": "shop"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "rules": [
            {"name": "up", "schedule": "0 8 * * *", "targetReplicas": 10, "timeZone": "Europe/Paris"},
            {"name": "down", "schedule": "0 20 * * *", "targetReplicas": 2, "suspend": True},
        ],
    },
    "status": {
        "executionHistories": [
            {
                "ruleName": "up",
                "nextExecutionTime": "2026-01-02T07:00:00Z",
                "successfulExecutions": [
                    {
                        "scheduleTime": "2026-01-01T07:00:00Z",
                        "executionTime": "2026-01-01T07:00:01Z",
                        "appliedReplicas": 10,
                    }
                ],
                "failedExecutions": [
                    {
                        "scheduleTime": "2025-12-31T07:00:00Z",
                        "executionTime": "2025-12-31T07:00:01Z",
                        "message": "the scale target does not exist",
                    }
                ],
            }
        ]
    },
}


def test_each_rule_says_its_next_fire_and_last_results() -> None:
    lines = explain_cron(CronFederatedHPA.model_validate(BODY), TARGET_MISSING, NOW)
    assert lines == [
        "CronFederatedHPA shop/nightly",
        "target: Deployment shop/web: not found",
        "  every fire fails until the target exists",
        "rule up: 0 8 * * * (Europe/Paris), sets replicas 10",
        "  next fire: 2026-01-02T07:00:00Z (in 68400s)",
        "  last success: 2026-01-01T07:00:01Z, applied replicas 10",
        "  last failure: 2025-12-31T07:00:01Z: the scale target does not exist",
        "rule down: 0 20 * * *, sets replicas 2",
        "  suspended: it does not fire",
        "  no execution recorded yet",
    ]
