"""`fhpa cluster join / list / unjoin` through the real CLI entry point, against FakeKube API servers over
HTTP (a member over TLS that serves RBAC, with a stand-in token controller; a management cluster for the
Secrets). The Secret join writes is then read by the controller's own registry and probed with the new
identity's token, and what join grants is compared with manifests/member file by file."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.kube.clients import Timeouts
from controller.kube.registry import MEMBER_LABEL, MemberRegistry
from fhpa.cli import main
from fhpa.member_access import MANIFEST_DIR
from tests.support.clusters import RBAC, SYSTEM, member, token_controller, write_kubeconfig
from tests.support.fakekube import FakeKube

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests" / "member"


@pytest.fixture
def member1() -> Iterator[FakeKube]:
    fake = member()
    with token_controller(fake):
        yield fake
    fake.stop()


@pytest.fixture
def management() -> Iterator[FakeKube]:
    fake = FakeKube(namespaces=("default", "kube-system", SYSTEM))
    fake.start()
    yield fake
    fake.stop()


class Cli:
    def __init__(self, tmp_path: Path, management: FakeKube) -> None:
        self.tmp_path = tmp_path
        self.mgmt_config = write_kubeconfig(management, tmp_path / "management.kubeconfig", token="mgmt")

    def run(self, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--management-kubeconfig", str(self.mgmt_config)])
        out, err = capsys.readouterr()
        return code, out, err

    def join(
        self, capsys: pytest.CaptureFixture[str], name: str, fake: FakeKube, *more: str
    ) -> tuple[int, str, str]:
        config = write_kubeconfig(fake, self.tmp_path / f"{name}.kubeconfig")
        return self.run(
            capsys, "cluster", "join", name, "--kubeconfig", str(config), "--token-timeout", "10", *more
        )


@pytest.fixture
def cli(tmp_path: Path, management: FakeKube) -> Cli:
    return Cli(tmp_path, management)


def docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def test_the_manifests_read_are_the_repositorys() -> None:
    assert MANIFEST_DIR == MANIFESTS


def test_join_creates_exactly_the_manifests_access_and_a_secret_the_registry_uses(
    cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli.join(
        capsys,
        "member1",
        member1,
        "--labels",
        "tier=gold,region=eu",
        "--region",
        "eu-west-1",
        "--zone",
        "eu-west-1a",
    )
    assert code == 0, err
    (role,) = docs("clusterrole.yaml")
    stored = member1.store.get(f"clusterroles.{RBAC}", None, role["metadata"]["name"])
    assert stored["rules"] == role["rules"]  # the file's rules, whatever they are today
    (binding,) = docs("clusterrolebinding.yaml")
    stored_binding = member1.store.get(f"clusterrolebindings.{RBAC}", None, binding["metadata"]["name"])
    assert (stored_binding["roleRef"], stored_binding["subjects"]) == (
        binding["roleRef"],
        binding["subjects"],
    )
    sa, token = docs("serviceaccount.yaml")
    assert member1.store.find("serviceaccounts", SYSTEM, sa["metadata"]["name"]) is not None
    assert member1.store.get("secrets", SYSTEM, token["metadata"]["name"])["type"] == token["type"]
    assert "member     ClusterRole federated-hpa-member: created" in out
    assert "member-sa-token" not in out + err  # the token is never printed

    secret = management.store.get("secrets", SYSTEM, "member1")
    assert secret["metadata"]["labels"] == {MEMBER_LABEL: "true", "tier": "gold", "region": "eu"}
    assert secret["metadata"]["annotations"]["autoscaling.karmada.io/zone"] == "eu-west-1a"
    kubeconfig = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
    assert kubeconfig["users"][0]["user"] == {"token": "member-sa-token"}  # the ServiceAccount's, not mine

    registry = MemberRegistry(SYSTEM, Timeouts(connect=1, read=3, probe=1))
    change = registry.sync_from_secrets([secret])
    assert change.added == ["member1"] and registry.problems() == {}
    assert registry.probe_all()["member1"].healthy is True
    identity = registry.identities()["member1"]
    assert (identity.labels, identity.region) == ({"tier": "gold", "region": "eu"}, "eu-west-1")
    registry.close()


def test_join_again_changes_nothing_and_a_new_label_updates_only_the_secret(
    cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.join(capsys, "member1", member1, "--labels", "tier=gold")[0] == 0
    before = management.store.get("secrets", SYSTEM, "member1")["metadata"]["resourceVersion"]
    writes = len(member1.requests_matching("POST", ".")) + len(member1.requests_matching("PUT", "."))
    code, out, _ = cli.join(capsys, "member1", member1, "--labels", "tier=gold")
    assert code == 0
    assert all(line.endswith("unchanged") for line in out.splitlines()), out
    assert management.store.get("secrets", SYSTEM, "member1")["metadata"]["resourceVersion"] == before
    assert len(member1.requests_matching("POST", ".")) + len(member1.requests_matching("PUT", ".")) == writes

    code, out, _ = cli.join(capsys, "member1", member1, "--labels", "tier=silver")
    assert "management Secret federated-hpa-system/member1: updated" in out
    assert management.store.get("secrets", SYSTEM, "member1")["metadata"]["labels"]["tier"] == "silver"


def test_elastic_pods_declares_the_bound_the_controller_reads(
    cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.join(capsys, "member1", member1, "--elastic-pods", "200")[0] == 0
    secret = management.store.get("secrets", SYSTEM, "member1")
    assert secret["metadata"]["annotations"]["autoscaling.karmada.io/elastic-pods"] == "200"
    registry = MemberRegistry(SYSTEM, Timeouts(connect=1, read=3, probe=1))
    registry.sync_from_secrets([secret])
    assert registry.identities()["member1"].elastic_pods == 200
    registry.close()
    writes = len(member1.requests)
    code, _, err = cli.join(capsys, "member1", member1, "--elastic-pods", "-1")
    assert code != 0 and "--elastic-pods" in err
    assert len(member1.requests) == writes  # refused before any request


def test_a_role_that_drifted_is_brought_back_to_the_manifest(
    cli: Cli, member1: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.join(capsys, "member1", member1)[0] == 0
    role = member1.store.get(f"clusterroles.{RBAC}", None, "federated-hpa-member")
    role["rules"] = role["rules"][:1]
    member1.store.update(f"clusterroles.{RBAC}", role)
    code, out, _ = cli.join(capsys, "member1", member1)
    assert code == 0 and "ClusterRole federated-hpa-member: updated" in out
    (wanted,) = docs("clusterrole.yaml")
    assert member1.store.get(f"clusterroles.{RBAC}", None, "federated-hpa-member")["rules"] == wanted["rules"]


def test_a_cluster_wide_join_says_what_it_granted_and_how_to_narrow_it(
    cli: Cli, member1: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli.join(capsys, "member1", member1)
    assert code == 0
    assert "kube-system included" in err and "--deny-namespaces" in err and "--namespaces A,B" in err


def test_namespaced_join_grants_roles_in_those_namespaces_only(
    cli: Cli, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = member(namespaces=("default", "kube-system", "shop", "team-b"))
    try:
        with token_controller(fake):
            code, _, err = cli.join(capsys, "member2", fake, "--namespaces", "shop,team-b")
        assert code == 0, err
        assert "kube-system included" not in err
        assert fake.store.find(f"roles.{RBAC}", "kube-system", "federated-hpa-member") is None
        template = next(d for d in docs("role-namespaced.yaml") if d["kind"] == "Role")
        for namespace in ("shop", "team-b"):
            role = fake.store.get(f"roles.{RBAC}", namespace, template["metadata"]["name"])
            assert role["rules"] == template["rules"]
            assert (
                fake.store.find(f"rolebindings.{RBAC}", namespace, template["metadata"]["name"]) is not None
            )
        assert fake.store.find(f"roles.{RBAC}", "team-a", template["metadata"]["name"]) is None
        cluster_roles = {r["metadata"]["name"] for r in fake.store.list_objects(f"clusterroles.{RBAC}")[0]}
        expected = {d["metadata"]["name"] for d in docs("role-namespaced.yaml") if d["kind"] == "ClusterRole"}
        assert cluster_roles == expected  # the probe and capacity roles, not the cluster-wide one
        secret = management.store.get("secrets", SYSTEM, "member2")
        assert secret["metadata"]["annotations"]["autoscaling.karmada.io/joined-namespaces"] == "shop,team-b"

        code, _, _ = cli.run(
            capsys, "cluster", "unjoin", "member2", "--kubeconfig", str(cli.tmp_path / "member2.kubeconfig")
        )
        assert code == 0
        assert fake.store.list_objects(f"roles.{RBAC}")[0] == []
        assert fake.store.list_objects(f"clusterroles.{RBAC}")[0] == []
    finally:
        fake.stop()


def test_dry_run_prints_the_objects_without_the_token_and_writes_nothing(
    cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli.join(capsys, "member1", member1, "--dry-run", "--labels", "tier=gold")
    assert code == 0
    printed = [d for d in yaml.safe_load_all(out) if d]
    kinds = [d["kind"] for d in printed]
    assert kinds == ["Namespace", "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding", "Secret"]
    kubeconfig = yaml.safe_load(printed[-1]["stringData"]["kubeconfig"])
    assert kubeconfig["users"][0]["user"]["token"].startswith("<the token of federated-hpa-system/")
    assert member1.requests == [] and management.store.find("secrets", SYSTEM, "member1") is None


def test_server_sets_the_url_the_controller_uses_and_a_plain_http_one_is_refused(
    cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli.join(capsys, "member1", member1, "--server", "https://member1.internal:6443")
    assert code == 0, err
    secret = management.store.get("secrets", SYSTEM, "member1")
    kubeconfig = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://member1.internal:6443"
    # a token over plain HTTP is what the controller refuses: join refuses to write it
    code, _, err = cli.join(capsys, "member1", member1, "--server", "http://member1.internal:8080")
    assert code == 2 and "would be refused by the controller" in err and "clear text" in err
    assert (
        yaml.safe_load(
            base64.b64decode(management.store.get("secrets", SYSTEM, "member1")["data"]["kubeconfig"])
        )["clusters"][0]["cluster"]["server"]
        == "https://member1.internal:6443"
    )


def test_list_shows_labels_health_versions_and_a_broken_secret(
    cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.join(capsys, "member1", member1, "--labels", "tier=gold")[0] == 0
    management.store.create(
        "secrets",
        {
            "metadata": {"name": "broken", "namespace": SYSTEM, "labels": {MEMBER_LABEL: "true"}},
            "stringData": {"kubeconfig": "users: [{name: u, user: {tokenFile: /var/run/token}}]"},
        },
    )
    code, out, _ = cli.run(capsys, "cluster", "list", "-o", "json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["member1"]["health"] == "Healthy"
    assert rows["member1"]["labels"] == {"tier": "gold"}
    assert rows["member1"]["kubernetesVersion"] == "v1.29.4-member"
    assert rows["member1"]["hpaAPIVersion"] == "autoscaling/v2"
    assert rows["member1"]["lastProbe"]
    assert rows["broken"]["health"] == "Unusable" and rows["broken"]["error"]

    member1.vanish()
    code, out, _ = cli.run(capsys, "cluster", "list")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "LABELS", "HEALTH", "KUBERNETES", "HPA", "API", "LAST", "PROBE"]
    assert lines[2].split()[:3] == ["member1", "tier=gold", "Unhealthy"]
    member1.reappear()


def test_unjoin_removes_both_sides_and_keeps_the_namespace(
    cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.join(capsys, "member1", member1)[0] == 0
    config = str(cli.tmp_path / "member1.kubeconfig")
    code, out, _ = cli.run(capsys, "cluster", "unjoin", "member1", "--kubeconfig", config)
    assert code == 0, out
    assert management.store.find("secrets", SYSTEM, "member1") is None
    assert member1.store.list_objects(f"clusterroles.{RBAC}")[0] == []
    assert member1.store.list_objects(f"clusterrolebindings.{RBAC}")[0] == []
    assert member1.store.list_objects("serviceaccounts", SYSTEM)[0] == []
    assert member1.store.list_objects("secrets", SYSTEM)[0] == []
    assert member1.store.find("namespaces", None, SYSTEM) is not None
    code, out, _ = cli.run(capsys, "cluster", "unjoin", "member1", "--kubeconfig", config)
    assert code == 0 and "not found" in out  # again: nothing left, no error


def test_join_refuses_to_take_over_a_secret_that_is_not_a_member_secret(
    cli: Cli, member1: FakeKube, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    management.store.create(
        "secrets", {"metadata": {"name": "webhook-certs", "namespace": SYSTEM}, "data": {}}
    )
    code, _, err = cli.join(capsys, "webhook-certs", member1)
    assert code == 2 and "is not a member Secret" in err
    assert management.store.get("secrets", SYSTEM, "webhook-certs")["data"] == {}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("Bad_Name",), "must be a DNS subdomain"),
        (("ok", "--labels", "tier"), "is not key=value"),
        (("ok", "--labels", f"{MEMBER_LABEL}=false"), "is set by join itself"),
        (("ok", "--namespaces", "Shop"), "is not a namespace name"),
        (("ok", "--member-manifests", "/nonexistent"), "pass --member-manifests with the repository's"),
    ],
)
def test_bad_arguments_are_refused_before_any_request(
    cli: Cli, member1: FakeKube, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    name, *more = argv
    code, _, err = cli.join(capsys, name, member1, *more)
    assert code == 2 and message in err
    assert member1.requests == []


def test_an_unreachable_management_cluster_is_one_line_and_exit_1(
    cli: Cli, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    management.vanish()
    code, _, err = cli.run(capsys, "cluster", "list")
    assert code == 1
    assert err.startswith("fhpa cluster list: ") and err.count("\n") == 1 and "Traceback" not in err
    management.reappear()


def test_unjoin_without_the_secret_removes_the_namespaces_given(
    cli: Cli, management: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = member(namespaces=("default", "kube-system", "shop"))
    try:
        with token_controller(fake):
            assert cli.join(capsys, "member3", fake, "--namespaces", "shop")[0] == 0
        management.store.delete("secrets", SYSTEM, "member3")  # someone removed it by hand
        config = str(cli.tmp_path / "member3.kubeconfig")
        code, out, _ = cli.run(
            capsys, "cluster", "unjoin", "member3", "--kubeconfig", config, "--namespaces", "shop"
        )
        assert code == 0 and "Role shop/federated-hpa-member: deleted" in out
        assert fake.store.list_objects(f"roles.{RBAC}")[0] == []
    finally:
        fake.stop()


def test_the_table_never_prints_member_text_raw() -> None:
    """N12: a member's version string and error text reached the terminal with their escape sequences."""
    from fhpa.commands.cluster import MemberRow, render_table

    hostile = MemberRow(
        name="east",
        labels={},
        health="Unhealthy",
        kubernetes_version="v1.30\x1b[2J\x1b]0;owned\x07",
        error="denied\r\x1b[1Afake: Healthy\n" + "x" * 5000,
    )
    text = render_table([hostile])
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    assert "v1.30\\x1b[2J" in text
    assert text.count("\n") == 2  # header, the row and its error: a newline in member text is shown escaped
    assert len(text) < 1000


class _SecretsOnly:
    def __init__(self, secret: dict[str, Any]) -> None:
        self.secret = secret

    def find(self, path: str) -> dict[str, Any]:
        return self.secret


@pytest.mark.parametrize(
    ("kind", "owner"),
    [
        ("kubernetes.io/service-account-token", "cluster-admin-robot"),  # another ServiceAccount's token
        ("Opaque", "federated-hpa-member"),  # not a token Secret at all
    ],
)
def test_join_refuses_a_token_secret_that_is_not_its_service_accounts(kind: str, owner: str) -> None:
    """N11: join took the token of whatever Secret had the expected name."""
    import base64

    from fhpa.commands.cluster import wait_for_token
    from fhpa.member_access import JoinError

    secret = {
        "type": kind,
        "metadata": {"annotations": {"kubernetes.io/service-account.name": owner}},
        "data": {"token": base64.b64encode(b"someone-elses-token").decode()},
    }
    where = ("federated-hpa-system", "federated-hpa-member-token")
    with pytest.raises(JoinError, match="is not a token of ServiceAccount federated-hpa-member"):
        wait_for_token(_SecretsOnly(secret), where, 1.0, "federated-hpa-member")  # type: ignore[arg-type]
    secret.update(type="kubernetes.io/service-account-token")
    secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] = "federated-hpa-member"
    assert (
        wait_for_token(_SecretsOnly(secret), where, 1.0, "federated-hpa-member")[0] == "someone-elses-token"
    )


def test_join_trusts_the_member_served_ca_only_over_a_verified_connection() -> None:
    """N10: with insecure-skip-tls-verify, join pinned whatever CA the member (or a man in the middle)
    served, in a Secret that looked verified."""
    from fhpa.commands.cluster import member_ca
    from fhpa.member_access import JoinError

    with pytest.raises(JoinError, match="skips TLS verification"):
        member_ca(None, b"served-ca", verified=False)
    assert member_ca(None, b"served-ca", verified=True) == b"served-ca"
    assert member_ca(b"operator-ca", b"served-ca", verified=False) == b"operator-ca"
    with pytest.raises(JoinError, match="no CA for the member"):
        member_ca(None, None, verified=True)
