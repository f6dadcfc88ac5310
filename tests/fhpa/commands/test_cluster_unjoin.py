"""`fhpa cluster unjoin` with FederatedHPAs still planning with the cluster: it lists them and refuses
without --force, --dry-run changes nothing, --delete-member-hpas removes only the HPAs carrying our owner
labels. Through the real CLI entry point, against FakeKube API servers over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.planning.member_hpa import (
    FIELD_MANAGER,
    LABEL_MANAGED_BY,
    LABEL_OWNER_NAME,
    LABEL_OWNER_NAMESPACE,
)
from fhpa.cli import main
from tests.fhpa.commands.test_cluster import Cli
from tests.support.clusters import RBAC, SYSTEM, member, token_controller
from tests.support.fakekube import FakeKube
from tests.support.fakekube_store import Resource

FHPAS = Resource("autoscaling.karmada.io", "v1alpha1", "federatedhpas", "FederatedHPA", status=True)
FHPA_STORE = "federatedhpas.autoscaling.karmada.io"
HPA_STORE = "horizontalpodautoscalers.autoscaling"


@pytest.fixture
def member1() -> Iterator[FakeKube]:
    fake = member(namespaces=("default", "kube-system", "shop"))
    with token_controller(fake):
        yield fake
    fake.stop()


@pytest.fixture
def management() -> Iterator[FakeKube]:
    fake = FakeKube(namespaces=("default", "kube-system", "shop", SYSTEM))
    fake.store.add_resource(FHPAS)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def joined(cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]) -> str:
    """member1 joined; FederatedHPA shop/web plans with it (and m2), shop/api only with m2; in member1
    our HPA for shop/web and someone else's HPA beside it. Returns the member's kubeconfig path."""
    assert cli.join(capsys, "member1", member1)[0] == 0
    for name, rows in (("web", ["member1", "m2"]), ("api", ["m2"])):
        management.store.create(FHPA_STORE, fhpa(name, rows))
    member1.store.create(HPA_STORE, hpa("web", {LABEL_MANAGED_BY: FIELD_MANAGER, **owner("web")}))
    member1.store.create(HPA_STORE, hpa("theirs", {"team": "shop"}))
    member1.requests.clear()
    management.requests.clear()
    return str(cli.tmp_path / "member1.kubeconfig")


@pytest.fixture
def cli(tmp_path: Any, management: FakeKube) -> Cli:
    return Cli(tmp_path, management)


def owner(name: str) -> dict[str, str]:
    return {LABEL_OWNER_NAMESPACE: "shop", LABEL_OWNER_NAME: name}


def fhpa(name: str, clusters: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "maxReplicas": 10,
        },
        "status": {
            "clusters": [
                {"name": c, "minReplicas": 1, "maxReplicas": 4, "currentReplicas": 2} for c in clusters
            ]
        },
    }


def hpa(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "shop", "labels": labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": 4,
        },
    }


def unchanged(member1: FakeKube, management: FakeKube) -> bool:
    writes = [r for fake in (member1, management) for r in fake.requests if r.method != "GET"]
    return writes == [] and management.store.find("secrets", SYSTEM, "member1") is not None


def test_unjoin_refuses_without_force_and_lists_what_would_be_orphaned(
    cli: Cli, member1: FakeKube, management: FakeKube, joined: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli.run(capsys, "cluster", "unjoin", "member1", "--kubeconfig", joined)
    assert code == 2 and out == ""
    assert "1 FederatedHPA still plan with member1; nothing was changed" in err
    assert "FederatedHPA shop/web (min 1, max 4, 2 running)" in err
    assert "shop/api" not in err  # no row for member1
    assert "HorizontalPodAutoscaler shop/web (for FederatedHPA shop/web)" in err
    assert "theirs" not in err
    assert "--force" in err
    assert unchanged(member1, management)
    assert member1.store.find(HPA_STORE, "shop", "web") is not None


def test_dry_run_prints_what_would_be_done_and_changes_nothing(
    cli: Cli, member1: FakeKube, management: FakeKube, joined: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("cluster", "unjoin", "member1", "--kubeconfig", joined, "--force", "--delete-member-hpas")
    code, out, _ = cli.run(capsys, *argv, "--dry-run")
    assert code == 0
    assert "management Secret federated-hpa-system/member1: would be deleted" in out
    assert "member     ClusterRole federated-hpa-member: would be deleted" in out
    assert "HorizontalPodAutoscaler shop/web (for FederatedHPA shop/web): would be deleted" in out
    assert "FederatedHPA shop/web (min 1, max 4, 2 running): plans with this cluster" in out
    assert unchanged(member1, management)

    code, _, err = cli.run(capsys, "cluster", "unjoin", "member1", "--kubeconfig", joined, "--dry-run")
    assert code == 2 and "nothing was changed" in err  # without --force the dry run says it would refuse
    assert unchanged(member1, management)


def test_force_with_delete_member_hpas_removes_ours_and_leaves_theirs(
    cli: Cli, member1: FakeKube, management: FakeKube, joined: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("cluster", "unjoin", "member1", "--kubeconfig", joined, "--force", "--delete-member-hpas")
    code, out, _ = cli.run(capsys, *argv)
    assert code == 0, out
    assert "HorizontalPodAutoscaler shop/web (for FederatedHPA shop/web): deleted" in out
    assert member1.store.find(HPA_STORE, "shop", "web") is None
    assert member1.store.find(HPA_STORE, "shop", "theirs") is not None
    assert management.store.find("secrets", SYSTEM, "member1") is None
    assert member1.store.list_objects(f"clusterroles.{RBAC}")[0] == []
    assert management.store.find(FHPA_STORE, "shop", "web") is not None  # FederatedHPAs are not touched


def test_force_alone_leaves_the_member_hpas_and_says_so(
    cli: Cli, member1: FakeKube, management: FakeKube, joined: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli.run(capsys, "cluster", "unjoin", "member1", "--kubeconfig", joined, "--force")
    assert code == 0
    assert "HorizontalPodAutoscaler shop/web (for FederatedHPA shop/web): left in place" in out
    assert member1.store.find(HPA_STORE, "shop", "web") is not None
    assert management.store.find("secrets", SYSTEM, "member1") is None


def test_delete_member_hpas_needs_the_member_kubeconfig(
    cli: Cli, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli.run(capsys, "cluster", "unjoin", "member1", "--force", "--delete-member-hpas")
    assert code == 2 and "--delete-member-hpas needs --kubeconfig" in err
    assert management.requests == []


def test_a_bad_flag_prints_the_unjoin_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["cluster", "unjoin", "member1", "--no-such-flag"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: fhpa cluster unjoin ")
    assert "fhpa cluster unjoin: error: unrecognized arguments: --no-such-flag" in err
