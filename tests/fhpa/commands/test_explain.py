"""`fhpa explain` as a command: it reads the FederatedHPA (or the CronFederatedHPA) and its Events over
HTTP from a FakeKube and prints the explanation (what it says is tested in tests/fhpa/test_explanation.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from fhpa.cli import main
from fhpa.cron_explanation import TARGET_EXISTS
from tests.fhpa.test_cron_explanation import BODY as CRON
from tests.fhpa.test_cron_explanation import CRONS
from tests.fhpa.test_explanation import as_events
from tests.support.clusters import write_kubeconfig
from tests.support.fakekube import FakeKube
from tests.support.fakekube_store import Resource
from tests.support.planning_builders import T0, fhpa, obs, run

S = timedelta(seconds=1)


FHPAS = Resource("autoscaling.karmada.io", "v1alpha1", "federatedhpas", "FederatedHPA", status=True)


@pytest.fixture
def management() -> Iterator[FakeKube]:
    fake = FakeKube(namespaces=("default", "shop"))
    fake.store.add_resource(FHPAS)
    fake.store.add_resource(CRONS)
    fake.start()
    yield fake
    fake.stop()


def test_the_command_reads_the_object_and_its_events(
    management: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = fhpa("StaticWeighted", 2, 10, weights={"member1": 1, "member2": 2, "member3": 3})
    p = run(f, [obs("member1", 1), obs("member2", 4), obs("member3", 0)])
    body = f.model_copy(update={"status": p.status}).model_dump(mode="json", by_alias=True, exclude_none=True)
    stored = management.store.create(FHPAS.key, body)
    for i, event in enumerate(as_events(p, f, T0)):
        event["involvedObject"]["uid"] = stored["metadata"]["uid"]
        event["involvedObject"]["namespace"] = "shop"
        event["metadata"] = {"name": f"web.{i}", "namespace": "shop"}
        management.store.create("events", event)
    management.store.create(
        "events",
        {
            "metadata": {"name": "other.1", "namespace": "shop"},
            "involvedObject": {"kind": "FederatedHPA", "name": "other", "uid": "x"},
            "reason": "Assigned",
            "message": "member1: not for web",
        },
    )
    config = write_kubeconfig(management, tmp_path / "mgmt.kubeconfig")
    assert main(["explain", "shop/web", "--kubeconfig", str(config), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["namespace"], data["name"], data["policy"]) == ("shop", "web", "StaticWeighted")
    member2 = next(c for c in data["clusters"] if c["name"] == "member2")
    assert any("keep what runs" in w for w in member2["why"])
    assert all("not for web" not in ev["message"] for c in data["clusters"] for ev in c["events"])

    assert main(["explain", "web", "-n", "shop", "--kubeconfig", str(config)]) == 0
    assert "member3: min 2 max 5" in capsys.readouterr().out
    assert main(["explain", "shop/nope", "--kubeconfig", str(config)]) == 1
    assert "not found" in capsys.readouterr().err


def test_the_command_reads_the_cron_and_checks_its_target(
    management: FakeKube, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    management.store.create(CRONS.key, CRON)
    config = write_kubeconfig(management, tmp_path / "mgmt.kubeconfig")
    assert main(["explain", "shop/nightly", "--kind", "cronfhpa", "--kubeconfig", str(config)]) == 0
    assert "target: Deployment shop/web: not found" in capsys.readouterr().out
    management.store.create(
        "deployments",
        {"metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 3}},
    )
    assert main(["explain", "shop/nightly", "--kind", "cronfhpa", "--kubeconfig", str(config)]) == 0
    assert f"target: Deployment shop/web: {TARGET_EXISTS}" in capsys.readouterr().out
    assert main(["explain", "shop/nope", "--kind", "cronfhpa", "--kubeconfig", str(config)]) == 1
    assert "CronFederatedHPA shop/nope not found" in capsys.readouterr().err
