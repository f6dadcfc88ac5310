"""`fhpa simulate --out` to a place it cannot write: one line and exit 2 before the run starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from fhpa.cli import main


def test_an_unwritable_out_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "results"  # below a regular file: no directory can be made there
    assert main(["simulate", "--out", str(out), "--no-png"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # not even "simulating ...": nothing ran
    assert captured.err.startswith(f"fhpa simulate: cannot write --out {out}: ")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
