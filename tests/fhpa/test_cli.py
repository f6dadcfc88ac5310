"""The `fhpa` entry point: every subcommand registers, and the simulator is the default job."""

from __future__ import annotations

import pytest

from fhpa import cli


def test_every_subcommand_is_registered() -> None:
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    assert set(subparsers.choices) == set(cli.COMMANDS)  # type: ignore[arg-type]


def test_a_bare_scenario_path_runs_the_simulator(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    code = cli.main([str(missing)])
    assert code == 2  # the simulator's "invalid scenario" exit, not argparse's usage error
    assert "nope.yaml" in capsys.readouterr().err


def test_help_lists_the_main_job(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "simulate" in capsys.readouterr().out


def test_a_closed_pipe_ends_quietly_without_a_traceback() -> None:
    import subprocess
    import sys
    from pathlib import Path

    fhpa = Path(sys.executable).with_name("fhpa")
    examples = Path(__file__).resolve().parents[2] / "examples"
    reader = subprocess.Popen([fhpa, "validate", str(examples), "--output", "json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, bufsize=0)  # fmt: skip
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # the reader is gone before the first write, as after `| head -c 0`
    stderr = reader.stderr.read().decode()
    assert reader.wait(timeout=60) in (0, cli.SIGPIPE_EXIT)
    assert "Traceback" not in stderr, stderr


def test_the_kubectl_plugin_runs_the_same_commands_and_never_the_simulator_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.kubectl_main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: kubectl fhpa") and "explain" in out
    with pytest.raises(SystemExit):
        cli.kubectl_main(["explain", "--help"])
    assert capsys.readouterr().out.startswith("usage: kubectl fhpa explain")
