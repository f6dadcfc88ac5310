"""The design's worked examples under ``examples/assign/``: inputs `fhpa assign` accepts, results it prints.

Each file is an `fhpa assign` input whose header comment gives the result docs/design.md §3 decides,
one line per cluster: ``name min..max rN`` for a cluster with an HPA, ``name: no HPA ...`` for one
without, ``unassigned: a, b`` for clusters that are no candidates. The header is the specification, so
it is read here rather than repeated.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fhpa.cli import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples" / "assign").glob("*.yaml"))
DESIGN = ROOT / "docs" / "design.md"

WITH_HPA = re.compile(r"^#   (\S+) (\d+)\.\.(\d+) r(\d+)\b")
WITHOUT_HPA = re.compile(r"^#   (\S+): no HPA\b")
NOT_CANDIDATES = re.compile(r"^#   unassigned: (.+)$")


def decided(path: Path) -> tuple[dict[str, tuple[int, int, int]], list[str]]:
    """The header's result: (min, max, replicas) per cluster with an HPA, and the clusters without."""
    bounds: dict[str, tuple[int, int, int]] = {}
    without: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if m := WITH_HPA.match(line):
            bounds[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
        elif m := NOT_CANDIDATES.match(line):
            without += [name.strip() for name in m.group(1).split(",")]
        elif m := WITHOUT_HPA.match(line):
            without.append(m.group(1))
    return bounds, sorted(without)


def printed(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, tuple[int, int, int]], list[str]]:
    code = main(["assign", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    bounds = {c["name"]: (c["minReplicas"], c["maxReplicas"], c["replicas"]) for c in result["clusters"]}
    return bounds, sorted(result["unassigned"])


def test_every_example_is_in_the_design_and_every_cited_file_exists() -> None:
    text = DESIGN.read_text(encoding="utf-8")
    cited = set(re.findall(r"`([\w-]+\.yaml)`", text))
    assert EXAMPLES, "examples/assign/ is empty"
    assert cited == {path.name for path in EXAMPLES}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_header_names_every_cluster_the_command_reports(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected_bounds, expected_without = decided(path)
    got_bounds, got_without = printed(path, capsys)
    assert expected_bounds, f"{path.name}: no result in its header"
    assert sorted({*expected_bounds, *expected_without}) == sorted({*got_bounds, *got_without})


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_fhpa_assign_prints_the_decided_result(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert printed(path, capsys) == decided(path)
