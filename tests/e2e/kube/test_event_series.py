"""Recurring Events as a series on a real Kubernetes API server (v1.20.2, the kube tier): the core/v1
Event the control-plane adapter creates is then merge-patched with count, lastTimestamp and the latest
message, which the real server accepts and keeps; an Event deleted meanwhile (the event TTL) starts
the series again (issue 15 item 5; the FakeKube-level tests are tests/controller/test_event_series.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controller.kube.clients import build_api_client
from controller.kube.control_plane import KubeControlPlane, event_name
from controller.planning.cron import SCALE_SUCCEEDED
from fhpa_api.models import CronFederatedHPA
from tests.support.kubemember import KubeMember

pytestmark = pytest.mark.kube

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def fire(minute: int) -> str:
    when = (T0 + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"rule every-minute (scheduled {when}): set minReplicas=3"


def test_a_recurring_event_is_one_event_with_a_count(
    kube_members: dict[str, KubeMember], kube_namespace: str
) -> None:
    member = kube_members["m1"]
    now = [T0]
    plane = KubeControlPlane(
        build_api_client(member.kubeconfig()), reporting_instance="test", now=lambda: now[0]
    )
    cron = CronFederatedHPA.model_validate(
        {
            "metadata": {"name": "peak", "namespace": kube_namespace, "uid": "uid-cron-1"},
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "autoscaling.karmada.io/v1alpha1",
                    "kind": "FederatedHPA",
                    "name": "web",
                },
                "rules": [{"name": "every-minute", "schedule": "* * * * *", "targetMinReplicas": 3}],
            },
        }
    )
    for minute in range(60):
        now[0] = T0 + timedelta(minutes=minute)
        plane.emit_event(cron, "Normal", SCALE_SUCCEEDED, fire(minute))
    events = member.get(f"/api/v1/namespaces/{kube_namespace}/events")["items"]
    ours = [e for e in events if e["involvedObject"].get("uid") == "uid-cron-1"]
    assert len(ours) == 1
    event = ours[0]
    assert event["count"] == 60 and event["message"] == fire(59)
    assert event["firstTimestamp"] == "2026-06-01T00:00:00Z"
    assert event["lastTimestamp"] == "2026-06-01T00:59:00Z"

    name = event_name(cron, "Normal", SCALE_SUCCEEDED, fire(0))
    assert event["metadata"]["name"] == name
    member.check("DELETE", f"/api/v1/namespaces/{kube_namespace}/events/{name}")  # as the TTL would
    plane.emit_event(cron, "Normal", SCALE_SUCCEEDED, fire(60))
    again = member.get(f"/api/v1/namespaces/{kube_namespace}/events/{name}")
    assert again["count"] == 1 and again["message"] == fire(60)
