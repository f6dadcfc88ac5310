"""`fhpa controller run`: bad flags give exit code 2 and a message naming the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from fhpa.cli import main

pytestmark = pytest.mark.usefixtures("keep_root_logger")  # the command configures the root logger


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        code = main(["controller", "run", *args])
    except SystemExit as exc:  # argparse refusals
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def test_an_unknown_time_zone_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("{}")
    code, err = run(
        capsys, "--kubeconfig", str(kubeconfig), "--default-time-zone", "Mars/Olympus", "--log-format", "text"
    )
    assert code == 2 and "--default-time-zone" in err


def test_a_missing_kubeconfig_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = run(capsys, "--kubeconfig", str(tmp_path / "absent"), "--log-format", "text")
    assert code == 2 and "no such file" in err


def test_without_a_kubeconfig_outside_a_pod_it_says_what_to_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "--log-format", "text")
    assert code == 2 and "--kubeconfig" in err


def test_inconsistent_lease_timings_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        '{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"http://127.0.0.1:1"}}],'
        '"users":[{"name":"u","user":{}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],'
        '"current-context":"x"}'
    )
    code, err = run(
        capsys, "--kubeconfig", str(kubeconfig), "--lease-duration", "5", "--renew-deadline", "10"
    )
    assert code == 2 and "renew deadline" in err


def test_negative_periods_are_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "--failover-grace", "-1")
    assert code == 2 and "must be >= 0" in err


def test_the_built_probes_report_an_unreachable_control_plane_as_not_ready(tmp_path: Path) -> None:
    """The wiring: /readyz asks whether the API answered (here it never can), /healthz only liveness."""
    import argparse

    from fhpa.commands.controller import build, register
    from tests.controller.runtime.test_health import get

    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        '{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"http://127.0.0.1:1"}}],'
        '"users":[{"name":"u","user":{}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],'
        '"current-context":"x"}'
    )
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(
        ["controller", "run", "--kubeconfig", str(kubeconfig), "--metrics-bind", "127.0.0.1:0"]
    )
    _, health = build(args)
    port = health.start()
    try:
        code, body = get(port, "/readyz")
        assert code == 503 and "[-]control-plane-api waiting: control-plane API not reached yet" in body
        assert get(port, "/healthz")[0] == 200
    finally:
        health.stop()


def _kubeconfig(tmp_path: Path) -> Path:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(
        '{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"http://127.0.0.1:1"}}],'
        '"users":[{"name":"u","user":{}}],"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],'
        '"current-context":"x"}'
    )
    return kubeconfig


@pytest.mark.parametrize("shards", ["0", "65", "two"])
def test_a_shard_count_out_of_range_is_refused_by_the_parser(
    capsys: pytest.CaptureFixture[str], shards: str
) -> None:
    code, err = run(capsys, "--shards", shards)
    assert code == 2 and "--shards" in err


def test_shards_without_leader_election_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = run(capsys, "--kubeconfig", str(_kubeconfig(tmp_path)), "--shards", "3", "--no-leader-elect")
    assert code == 2 and "--shards needs leader election" in err


def test_the_built_manager_campaigns_for_the_shard_leases(tmp_path: Path) -> None:
    """The wiring: --shards 4 gives a sharded elector over <lease-name>-shard-0..3; the default keeps
    today's single Lease under --lease-name."""
    import argparse

    from controller.runtime.leader import LeaderElector
    from controller.runtime.shard_elector import ShardedElector
    from fhpa.commands.controller import build, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    common = ["controller", "run", "--kubeconfig", str(_kubeconfig(tmp_path)), "--lease-name", "x"]
    sharded, _ = build(parser.parse_args([*common, "--shards", "4"]))
    assert isinstance(sharded.elector, ShardedElector)
    assert [e.config.name for e in sharded.elector._electors] == [
        "x-shard-0",
        "x-shard-1",
        "x-shard-2",
        "x-shard-3",
    ]
    single, _ = build(parser.parse_args(common))
    assert isinstance(single.elector, LeaderElector) and single.elector.config.name == "x"
    assert single.config.shards == 1


def test_a_busy_metrics_port_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = run(
            capsys, "--kubeconfig", str(_kubeconfig(tmp_path)), "--metrics-bind", f"127.0.0.1:{port}"
        )
    assert code == 1 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("fhpa controller run:")]
    assert lines == [
        f"fhpa controller run: cannot listen on --metrics-bind 127.0.0.1:{port}: Address already in use"
    ]


def test_node_provision_seconds_reaches_the_planner(tmp_path: Path) -> None:
    import argparse

    from fhpa.commands.controller import build, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    base = ["controller", "run", "--kubeconfig", str(_kubeconfig(tmp_path)), "--metrics-bind", "127.0.0.1:0"]
    for extra, expected in (([], None), (["--node-provision-seconds", "240"], 240.0)):
        manager, _ = build(parser.parse_args(base + extra))
        assert manager.config.planner.node_provision_seconds == expected


def test_a_standby_is_warm_unless_told_otherwise(tmp_path: Path) -> None:
    import argparse

    from fhpa.commands.controller import build, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    base = ["controller", "run", "--kubeconfig", str(_kubeconfig(tmp_path)), "--metrics-bind", "127.0.0.1:0"]
    for extra, expected in (([], True), (["--no-warm-standby"], False)):
        manager, _ = build(parser.parse_args(base + extra))
        assert manager.config.warm_standby is expected


def test_the_member_budget_flags_reach_every_member_cache(tmp_path: Path) -> None:
    """--member-* become the Caps each member's cache is built with (the defaults: Caps())."""
    import argparse

    from controller.kube.clients import CredentialPolicy
    from controller.kube.member_budget import MIB, Caps
    from controller.ports import ClusterIdentity
    from fhpa.commands.controller import _registry, member_caps, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    base = ["controller", "run", "--kubeconfig", str(_kubeconfig(tmp_path))]
    assert member_caps(parser.parse_args(base)) == Caps()
    flags = ["--member-page-mib", "8", "--member-line-mib", "1", "--member-response-timeout", "20"]
    flags += ["--member-max-objects", "5000", "--member-max-cache-mib", "64"]
    caps = member_caps(parser.parse_args(base + flags))
    assert caps == Caps(
        page_bytes=8 * MIB, line_bytes=MIB, response_seconds=20, objects=5000, store_bytes=64 * MIB
    )
    config = {
        "apiVersion": "v1",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    member = _registry("ns", caps=caps)._factory(ClusterIdentity(name="m1"), config, None, CredentialPolicy())
    try:
        assert member.cache.budget.caps == caps
    finally:
        member.close()
