"""`fhpa controller run --allow-namespaces/--deny-namespaces`: parsed, checked, and handed to the manager."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from controller.planning.namespaces import NamespacePolicy
from tests.fhpa.commands.test_controller import run

pytestmark = pytest.mark.usefixtures("keep_root_logger")

KUBECONFIG = (
    '{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"http://127.0.0.1:1"}}],'
    '"users":[{"name":"u","user":{}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],'
    '"current-context":"x"}'
)


def built_policy(tmp_path: Path, *flags: str) -> NamespacePolicy:
    from fhpa.commands.controller import build, register

    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(KUBECONFIG)
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(
        ["controller", "run", "--kubeconfig", str(kubeconfig), "--metrics-bind", "127.0.0.1:0", *flags]
    )
    manager, _ = build(args)
    assert manager.cron.namespaces is manager.config.namespaces  # the cron controller is guarded too
    policy: NamespacePolicy = manager.config.namespaces
    return policy


def test_by_default_every_namespace_but_kube_star(tmp_path: Path) -> None:
    policy = built_policy(tmp_path)
    assert policy == NamespacePolicy(allow=("*",), deny=("kube-*",))
    assert policy.refusal("kube-system") is not None and policy.refusal("shop") is None


def test_the_flags_reach_the_manager(tmp_path: Path) -> None:
    policy = built_policy(tmp_path, "--allow-namespaces", "team-*,web", "--deny-namespaces", "team-secret")
    assert policy == NamespacePolicy(allow=("team-*", "web"), deny=("team-secret",))
    assert policy.refusal("kube-system") is not None  # matches no allow pattern
    assert built_policy(tmp_path, "--deny-namespaces", "").refusal("kube-system") is None


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--allow-namespaces", "Team-A", "--allow-namespaces: 'Team-A' is not a namespace name or glob"),
        ("--allow-namespaces", "", "--allow-namespaces: empty"),
        ("--deny-namespaces", "kube/*", "--deny-namespaces: 'kube/*' is not a namespace name or glob"),
    ],
)
def test_bad_patterns_exit_2_naming_the_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str, message: str
) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(KUBECONFIG)
    code, err = run(capsys, "--kubeconfig", str(kubeconfig), "--log-format", "text", flag, value)
    assert code == 2 and message in err


def test_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from fhpa.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["controller", "run", "--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert "--allow-namespaces" in out and "--deny-namespaces" in out and "kube-*" in out
