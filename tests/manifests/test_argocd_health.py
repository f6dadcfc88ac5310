"""The Argo CD health checks (manifests/argocd) run through a real Lua 5.1 interpreter (lupa's lua51, the
Lua version Argo CD's interpreter implements), the way Argo CD runs them: the object as the global
``obj``, the script's returned table read for ``status`` and ``message``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lupa.lua51 as lua51  # the `test` extra installs it: no skip, a missing interpreter fails
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ARGOCD = REPO / "manifests" / "argocd"
GROUP = "autoscaling.karmada.io"
SCRIPTS = {kind: ARGOCD / GROUP / kind / "health.lua" for kind in ("FederatedHPA", "CronFederatedHPA")}


def health(kind: str, obj: dict[str, Any]) -> tuple[str, str]:
    """(status, message) as Argo CD would show them for ``obj``."""
    lua = lua51.LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute(SCRIPTS[kind].read_text())
    assert result is not None, "a health script must return its table"
    assert result["status"] in ("Healthy", "Progressing", "Degraded", "Suspended")
    return str(result["status"]), str(result["message"])


def cond(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def fhpa(status: dict[str, Any] | None, generation: int = 2) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": "web", "namespace": "shop", "generation": generation},
        "spec": {"maxReplicas": 10},
    }
    if status is not None:
        obj["status"] = status
    return obj


def row(name: str, *conditions: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "minReplicas": 1, "maxReplicas": 5, "conditions": list(conditions)}


READY = cond("Ready", "True", "Assigned", "2 clusters hold member HPAs")
FLOOR = cond("FloorHeld", "True", "Held", "the reachable clusters can hold minReplicas 2")


def test_federatedhpa_without_status_or_behind_the_spec_is_progressing() -> None:
    assert health("FederatedHPA", fhpa(None))[0] == "Progressing"
    status, message = health("FederatedHPA", fhpa({"observedGeneration": 1, "conditions": [READY]}))
    assert (status, message) == ("Progressing", "Waiting for the controller to observe generation 2")
    assert health("FederatedHPA", fhpa({"observedGeneration": 2}))[0] == "Progressing"


def test_federatedhpa_ready_is_healthy_and_names_clusters_away() -> None:
    ok = {"observedGeneration": 2, "conditions": [READY, FLOOR], "clusters": [row("a"), row("b")]}
    assert health("FederatedHPA", fhpa(ok)) == ("Healthy", "2 clusters hold member HPAs")
    ok["clusters"] = [
        row("a", cond("Assigned", "False", "FailedOver"), cond("Healthy", "False", "Unhealthy")),
        row("b", cond("Assigned", "True", "Unhealthy"), cond("Healthy", "False", "Unhealthy")),
        row("c", cond("Assigned", "True", "Assigned"), cond("Healthy", "True", "Healthy")),
    ]
    assert health("FederatedHPA", fhpa(ok)) == (
        "Healthy",
        "2 clusters hold member HPAs (a failed over, b unhealthy)",
    )


def test_federatedhpa_that_cannot_observe_a_member_it_needs_is_progressing_with_the_reason() -> None:
    blind = cond("Ready", "Unknown", "MemberUnobserved", "cannot observe m2, which holds part of the bounds")
    status = {"observedGeneration": 2, "conditions": [blind, FLOOR]}
    assert health("FederatedHPA", fhpa(status)) == (
        "Progressing",
        "cannot observe m2, which holds part of the bounds",
    )


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        (
            [cond("Ready", "False", "NoCandidates", "no healthy cluster matches clusterAffinity"), FLOOR],
            "NoCandidates: no healthy cluster matches clusterAffinity",
        ),
        (
            [cond("Ready", "False", "NamespaceNotAllowed", "namespace shop is not allowed")],
            "NamespaceNotAllowed: namespace shop is not allowed",
        ),
        (
            [READY, cond("FloorHeld", "False", "CapacityBelowMinReplicas", "can hold 3 of minReplicas 5")],
            "CapacityBelowMinReplicas: can hold 3 of minReplicas 5",
        ),
    ],
)
def test_federatedhpa_degraded_from_its_conditions(conditions: list[dict[str, str]], expected: str) -> None:
    assert health("FederatedHPA", fhpa({"observedGeneration": 2, "conditions": conditions})) == (
        "Degraded",
        expected,
    )


def cron(
    status: dict[str, Any] | None, suspend: tuple[bool, ...] = (False,), generation: int = 1
) -> dict[str, Any]:
    rules = [{"name": f"r{i}", "schedule": "0 8 * * *", "suspend": s} for i, s in enumerate(suspend)]
    obj: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "CronFederatedHPA",
        "metadata": {"name": "nightly", "namespace": "shop", "generation": generation},
        "spec": {"rules": rules},
    }
    if status is not None:
        obj["status"] = status
    return obj


def execution(day: int, **more: Any) -> dict[str, Any]:
    stamp = f"2026-11-{day:02d}T08:00:00Z"
    return {"scheduleTime": stamp, "executionTime": stamp, **more}


def test_cron_newest_execution_decides_between_healthy_and_degraded() -> None:
    history: dict[str, Any] = {
        "ruleName": "r0",
        "nextExecutionTime": "2026-11-25T08:00:00Z",
        "successfulExecutions": [execution(23, appliedMinReplicas=5)],
        "failedExecutions": [execution(22, message="FederatedHPA web not found")],
    }
    status = {"observedGeneration": 1, "executionHistories": [history]}
    assert health("CronFederatedHPA", cron(status)) == ("Healthy", "Next execution at 2026-11-25T08:00:00Z")
    history["failedExecutions"].append(execution(24, message="FederatedHPA web not found"))
    assert health("CronFederatedHPA", cron(status)) == (
        "Degraded",
        "rule r0 failed at 2026-11-24T08:00:00Z: FederatedHPA web not found",
    )


def test_cron_progressing_suspended_and_refused() -> None:
    assert health("CronFederatedHPA", cron(None))[0] == "Progressing"
    behind = {"observedGeneration": 1, "executionHistories": []}
    assert health("CronFederatedHPA", cron(behind, generation=2))[0] == "Progressing"
    executing = {"observedGeneration": 1, "conditions": [cond("Executing", "True", "ScheduledFire", "{}")]}
    assert health("CronFederatedHPA", cron(executing)) == ("Progressing", "Applying a scheduled fire")
    assert health("CronFederatedHPA", cron({"observedGeneration": 1}, suspend=(True, True)))[0] == "Suspended"
    assert health("CronFederatedHPA", cron({"observedGeneration": 1}, suspend=(True, False))) == (
        "Healthy",
        "1 active rule(s)",
    )
    refused = {"conditions": [cond("Ready", "False", "NamespaceNotAllowed", "namespace shop is refused")]}
    assert health("CronFederatedHPA", cron(refused)) == (
        "Degraded",
        "NamespaceNotAllowed: namespace shop is refused",
    )


def test_the_argocd_cm_snippet_holds_the_scripts_unchanged() -> None:
    config = yaml.safe_load((ARGOCD / "argocd-cm.yaml").read_text())
    assert config["kind"] == "ConfigMap" and config["metadata"]["name"] == "argocd-cm"
    data = config["data"]
    assert set(data) == {f"resource.customizations.health.{GROUP}_{kind}" for kind in SCRIPTS} | {
        f"resource.customizations.actions.{GROUP}_FederatedHPA",
        f"resource.customizations.ignoreDifferences.{GROUP}_FederatedHPA",
    }
    for kind, path in SCRIPTS.items():
        assert data[f"resource.customizations.health.{GROUP}_{kind}"] == path.read_text()
    actions = yaml.safe_load(data[f"resource.customizations.actions.{GROUP}_FederatedHPA"])
    folder = ARGOCD / GROUP / "FederatedHPA" / "actions"
    assert actions["discovery.lua"] == (folder / "discovery.lua").read_text()
    assert {d["name"]: d["action.lua"] for d in actions["definitions"]} == {
        name: (folder / name / "action.lua").read_text() for name in ("pause", "resume")
    }
    ignored = yaml.safe_load(data[f"resource.customizations.ignoreDifferences.{GROUP}_FederatedHPA"])
    assert ignored == {"managedFieldsManagers": ["federated-hpa"]}
