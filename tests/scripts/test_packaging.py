"""pyproject.toml in the form current setuptools reads without deprecation banners on every install:
the license an SPDX expression (a table is deprecated), with the setuptools that reads one."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_license_is_an_spdx_string_and_the_build_needs_a_setuptools_that_reads_it() -> None:
    config = tomllib.loads(PYPROJECT.read_text())
    assert config["project"]["license"] == "Apache-2.0"
    (requirement,) = [r for r in config["build-system"]["requires"] if r.startswith("setuptools")]
    found = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", requirement)
    assert found is not None and int(found.group(1)) >= 77, requirement  # SPDX license strings from 77.0
    classifiers = config["project"].get("classifiers") or []
    assert not [
        c for c in classifiers if c.startswith("License ::")
    ]  # also deprecated beside an SPDX license
