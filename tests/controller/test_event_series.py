"""Events that recur are one Event with a count (issue 15 item 5): a cron rule firing every minute makes
one Event raised to count 1440 over a day, not 1,440 Events, through both adapters of the port (the
real one over FakeKube's HTTP API, and the simulator's)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import config as kube_config

from controller.cron_controller import CronController
from controller.event_series import series_key
from controller.kube.control_plane import KubeControlPlane, event_name
from controller.planning.cron import SCALE_SUCCEEDED
from fhpa_api.models import CronFederatedHPA, FederatedHPA
from simulator.clock import VirtualClock
from simulator.control_plane import SimulatedControlPlane
from tests.controller.kube.test_control_plane import fhpa_body
from tests.support.fakekube import FakeKube
from tests.support.fakekube_store import Resource

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def fire(minute: int) -> str:
    when = (T0 + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"rule every-minute (scheduled {when}): set minReplicas=3"


def test_a_series_is_the_message_without_its_timestamps() -> None:
    assert series_key("Normal", SCALE_SUCCEEDED, fire(0)) == series_key("Normal", SCALE_SUCCEEDED, fire(1))
    assert series_key("Normal", "X", "at 2026-06-01T09:03:00.5+02:00") == series_key(
        "Normal", "X", "at 2027-01-01 10:00"
    )
    differs = [
        series_key("Warning", SCALE_SUCCEEDED, fire(0)),  # another type
        series_key("Normal", "ScaleFailed", fire(0)),  # another reason
        series_key("Normal", SCALE_SUCCEEDED, fire(0).replace("=3", "=4")),  # another value
    ]
    assert series_key("Normal", SCALE_SUCCEEDED, fire(0)) not in differs


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    server = FakeKube()
    server.store.add_resource(
        Resource("autoscaling.karmada.io", "v1alpha1", "federatedhpas", "FederatedHPA", status=True)
    )
    server.start()
    yield server
    server.stop()


def test_the_kube_adapter_counts_a_day_of_fires_on_one_event(fake: FakeKube) -> None:
    now = [T0]
    cp = KubeControlPlane(
        kube_config.new_client_from_config_dict(fake.kubeconfig()),
        reporting_instance="test",
        now=lambda: now[0],
    )
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body())
    obj = cp.get_federated_hpa("default", "web")
    assert obj is not None
    for minute in range(1440):
        now[0] = T0 + timedelta(minutes=minute)
        cp.emit_event(obj, "Normal", SCALE_SUCCEEDED, fire(minute))
    events, _ = fake.store.list_objects("events", "default")
    assert len(events) == 1
    event = events[0]
    assert event["count"] == 1440
    assert event["message"] == fire(1439)  # the latest fire's
    assert event["firstTimestamp"] == "2026-06-01T00:00:00Z"
    assert event["lastTimestamp"] == "2026-06-01T23:59:00Z"
    assert event["metadata"]["name"] == event_name(obj, "Normal", SCALE_SUCCEEDED, fire(0))


def test_an_expired_event_starts_its_series_again(fake: FakeKube) -> None:
    cp = KubeControlPlane(
        kube_config.new_client_from_config_dict(fake.kubeconfig()), reporting_instance="test"
    )
    fake.store.create("federatedhpas.autoscaling.karmada.io", fhpa_body())
    obj = cp.get_federated_hpa("default", "web")
    assert obj is not None
    cp.emit_event(obj, "Normal", SCALE_SUCCEEDED, fire(0))
    cp.emit_event(obj, "Normal", SCALE_SUCCEEDED, fire(1))
    name = event_name(obj, "Normal", SCALE_SUCCEEDED, fire(0))
    fake.store.delete("events", "default", name)  # the API server's event TTL ran out
    cp.emit_event(obj, "Normal", SCALE_SUCCEEDED, fire(60))
    again = fake.store.get("events", "default", name)
    assert again["count"] == 1 and again["message"] == fire(60)


def test_the_simulator_holds_a_day_of_cron_fires_as_one_event() -> None:
    clock = VirtualClock(T0)
    plane = SimulatedControlPlane(clock, {})
    plane.create(
        FederatedHPA.model_validate(
            {
                "metadata": {"name": "web", "namespace": "shop"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 2,
                    "maxReplicas": 10,
                },
            }
        )
    )
    plane.create(
        CronFederatedHPA.model_validate(
            {
                "metadata": {"name": "peak", "namespace": "shop"},
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
    )
    cron = CronController(plane)
    for minute in range(1, 1441):
        clock.advance_to(minute * 60.0)
        cron.reconcile("shop", "peak", clock.now())
    fires = [e for e in plane.events if e.reason == SCALE_SUCCEEDED]
    assert len(fires) == 1440  # the trace keeps every fire
    stored = [e for e in plane.stored_events if e.reason == SCALE_SUCCEEDED]
    assert len(stored) == 1 and stored[0].count == 1440
    assert stored[0].last_at == T0 + timedelta(days=1)
    assert "scheduled 2026-06-02T00:00:00Z" in stored[0].message
