"""The layers' import contract, read from the source: what each package may import.

``controller/planning`` is pure: it may import only the standard library's pure modules, pydantic,
``fhpa_api`` and itself, and it reads no clock. The controller's core (the package root) and its
``kube`` adapters never import ``runtime``; the core imports no client library either. ``fhpa_api``
(the API, shared by the webhook, the controller and the simulator) imports none of those three; nor
does the webhook import the controller, and ``fhpa_logs`` (every process's log format) imports none of
the product's packages. The walk is over the modules' own ``import`` statements, so a forbidden import
fails here even if nothing calls it yet.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PURE_STDLIB = frozenset(
    {
        "__future__",
        "collections",
        "copy",
        "dataclasses",
        "datetime",
        "decimal",
        "enum",
        "functools",
        "hashlib",
        "itertools",
        "json",
        "math",
        "typing",
        "zoneinfo",
    }
)
CLOCK_CALLS = frozenset({"now", "utcnow", "today", "time", "monotonic", "perf_counter"})


@dataclass(frozen=True)
class Contract:
    """What the modules under ``package`` may import: the ``allowed`` prefixes, never a ``forbidden`` one."""

    package: str
    allowed: frozenset[str] | None = None
    forbidden: frozenset[str] = frozenset()
    reads_no_clock: bool = False
    top_level_only: bool = False


CONTRACTS = (
    Contract(
        "controller.planning",
        allowed=PURE_STDLIB | {"pydantic", "fhpa_api", "controller.planning"},
        forbidden=frozenset({"controller.runtime", "controller.kube", "kubernetes", "flask", "webhook"}),
        reads_no_clock=True,
    ),
    Contract(
        "controller",
        forbidden=frozenset({"controller.runtime", "controller.kube", "kubernetes", "flask", "webhook"}),
        top_level_only=True,
    ),
    Contract("controller.kube", forbidden=frozenset({"controller.runtime", "flask", "webhook"})),
    Contract("fhpa_api", forbidden=frozenset({"controller", "webhook", "simulator"})),
    Contract("fhpa_logs", forbidden=frozenset({"controller", "webhook", "simulator", "fhpa", "fhpa_api"})),
    Contract("webhook", forbidden=frozenset({"controller", "simulator"})),
)


def _within(name: str, prefixes: frozenset[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _imported(node: ast.AST, module: str) -> Iterator[str]:
    """Module names one import statement brings in, relative imports resolved against ``module``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parent = module.split(".")[: -node.level]
            base = ".".join([*parent, base] if base else parent)
        # `from controller.planning import zero` imports the submodule controller.planning.zero
        yield from (f"{base}.{alias.name}" for alias in node.names) if base else ()
        yield base


def _clock_reads(tree: ast.AST) -> Iterator[int]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in CLOCK_CALLS
        ):
            yield node.lineno


def violations(contract: Contract, root: Path = ROOT) -> list[str]:
    """Every import (and, where asked, clock read) in ``contract.package`` that the contract refuses."""
    found: list[str] = []
    folder = root / contract.package.replace(".", "/")
    for path in sorted(folder.glob("*.py") if contract.top_level_only else folder.rglob("*.py")):
        rel = path.relative_to(root)
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
        for node in ast.walk(tree):
            for name in _imported(node, module + (".__init__" if path.name == "__init__.py" else "")):
                refused = _within(name, contract.forbidden) or (
                    contract.allowed is not None and not _within(name, contract.allowed)
                )
                if refused:
                    found.append(f"{rel}:{node.lineno} imports {name}")
        if contract.reads_no_clock:
            found.extend(f"{rel}:{line} reads the clock" for line in _clock_reads(tree))
    return sorted(set(found))


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.package)
def test_the_layers_keep_their_import_contract(contract: Contract) -> None:
    assert violations(contract) == []


@pytest.mark.parametrize(
    ("package", "line", "expected"),
    [
        ("controller/planning", "import kubernetes", "imports kubernetes"),
        ("controller/planning", "from controller.runtime import metrics", "imports controller.runtime"),
        ("controller/planning", "from ..kube import member", "imports controller.kube"),
        ("controller/planning", "from flask import Flask", "imports flask"),
        ("controller/planning", "import webhook.app", "imports webhook.app"),
        ("controller/planning", "import socket", "imports socket"),
        ("controller/planning", "from controller import executor", "imports controller.executor"),
        ("controller/planning", "from datetime import datetime\nT = datetime.now()", "reads the clock"),
        ("controller", "from controller.runtime.metrics import Metrics", "imports controller.runtime"),
        ("controller", "from controller.kube import member", "imports controller.kube"),
        ("controller/kube", "from controller.runtime import watch", "imports controller.runtime"),
        ("fhpa_api", "from controller.planning import planner", "imports controller.planning"),
        ("fhpa_api", "import simulator.engine", "imports simulator.engine"),
        ("fhpa_api", "from webhook import app", "imports webhook"),
    ],
)
def test_a_forbidden_import_is_caught(tmp_path: Path, package: str, line: str, expected: str) -> None:
    """The checker itself can fail: one planted line in a copy of the package is reported."""
    folder = tmp_path / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text('"""A package."""\n')
    (folder / "ok.py").write_text("from __future__ import annotations\nimport dataclasses\n")
    (folder / "planted.py").write_text(line + "\n")
    contract = next(c for c in CONTRACTS if c.package == package.replace("/", "."))
    found = violations(contract, tmp_path)
    assert found and all("planted.py" in v for v in found)
    assert any(expected in v for v in found), found


def test_importing_the_planning_package_loads_no_client_library() -> None:
    """Beyond the source walk: what actually gets loaded when every planning module is imported.

    (The standard library's socket and subprocess do get loaded, by pydantic's plugin lookup and by
    croniter's dependencies; they are not checked here.)
    """
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "controller" / "planning").glob("*.py")
        if p.name != "__init__.py"
    )
    code = (
        f"import sys, importlib; [importlib.import_module(m) for m in {modules!r}];"
        "bad = [m for m in ('kubernetes', 'flask', 'requests', 'urllib3', 'http.client',"
        " 'controller.runtime', 'controller.kube', 'controller.ports') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_what_measures_a_run_does_not_import_the_run_loop() -> None:
    """The promises and the samples are plain records and measures: they never import the engine (no
    import cycle between what runs and what measures)."""
    for module in ("simulator/promises.py", "simulator/samples.py"):
        tree = ast.parse((ROOT / module).read_text())
        imported = {
            node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
        } | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert "simulator.engine" not in imported, module
