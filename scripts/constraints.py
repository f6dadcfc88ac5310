#!/usr/bin/env python3
"""Print constraints.txt: the exact versions of the runtime dependencies (no extras) installed here.

The image installs with ``pip install -c constraints.txt .`` so that a rebuild gets the versions the
tests ran with (gunicorn's connection handling in webhook/server.py relies on version 27, for one).
Run it from the project's venv after changing pyproject.toml's dependencies:

    .venv/bin/python scripts/constraints.py > constraints.txt

tests/scripts/test_constraints.py fails when a runtime dependency is missing from the file.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

HEADER = """\
# Exact versions of the runtime dependencies (no extras) that the image installs: `pip install -c
# constraints.txt .` in the Dockerfile. Regenerate after changing pyproject.toml's dependencies:
#   .venv/bin/python scripts/constraints.py > constraints.txt
"""


def runtime_requirements(name: str) -> list[Requirement]:
    """A distribution's requirements that apply without extras."""
    found = []
    for text in distribution(name).requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            found.append(req)
    return found


def closure(root: str) -> dict[str, str]:
    """Every installed distribution ``root`` needs at run time, with its version."""
    versions: dict[str, str] = {}
    todo = [r.name for r in runtime_requirements(root)]
    while todo:
        name = todo.pop()
        key = canonicalize_name(name)
        if key in versions:
            continue
        try:
            versions[key] = distribution(name).version
        except PackageNotFoundError:
            continue  # a requirement for another platform
        todo += [r.name for r in runtime_requirements(name)]
    return versions


def main() -> None:
    pins = closure("federated-hpa")
    print(HEADER + "".join(f"{name}=={version}\n" for name, version in sorted(pins.items())), end="")


if __name__ == "__main__":
    main()
