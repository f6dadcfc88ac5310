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
