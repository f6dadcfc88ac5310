"""constraints.txt pins the image's runtime dependencies; the plotting stack stays out of the image."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            found[canonicalize_name(name)] = version
    return found


def test_every_runtime_dependency_is_pinned_within_pyproject_s_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = pins()
    for text in project["dependencies"]:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pinned, f"{req.name} is not in constraints.txt (run scripts/constraints.py)"
        assert req.specifier.contains(pinned[name]), f"{req.name}=={pinned[name]} is outside {req.specifier}"


def test_the_image_gets_no_plotting_stack_and_the_gunicorn_the_webhook_was_tested_with() -> None:
    pinned = pins()
    assert not {"matplotlib", "numpy", "pillow", "kiwisolver", "contourpy", "fonttools"} & pinned.keys()
    assert pinned["gunicorn"].startswith("27.")  # webhook/server.py tunes a gunicorn 27 constant


def test_the_dockerfile_installs_with_the_constraints_and_leaves_no_pip() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "-c constraints.txt" in dockerfile
    assert "pip uninstall" in dockerfile
