"""The test tree mirrors the code, so the tests of a module are found from its path.

``pkg/a/b.py`` is tested in ``tests/pkg/a/test_b.py``, or in files ``test_b_*.py`` beside it when one
file would be too long; a package's own ``__init__.py`` with code in it is tested in
``tests/pkg/test_<pkg>.py``. The real-server tiers (markers ``realapi`` and ``kube``) live under
``tests/e2e/`` and nowhere else, so a quick run can leave them out by path as well as by marker.

A module may go without its own file only when it is listed below with the reason: package
``__init__``s that only re-export or describe, and modules with no behaviour of their own (types,
protocols, constants). ``WITHOUT_OWN_FILE`` lists modules whose tests still live in another module's
file; it may only shrink, and an entry fails once its file exists, so the list never goes stale.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGES = ("controller", "simulator", "fhpa", "fhpa_api", "fhpa_logs", "webhook", "certs")

EXEMPT = {
    "controller/__init__.py": "the package's description only",
    "controller/kube/__init__.py": "the package's description only",
    "controller/planning/__init__.py": "the package's description only",
    "controller/runtime/__init__.py": "the package's description only",
    "simulator/__init__.py": "the package's description only",
    "fhpa/__init__.py": "the package's description only",
    "fhpa/commands/__init__.py": "empty",
    "fhpa_api/__init__.py": "the API group's names, constants only",
    "webhook/__init__.py": "the package's description only",
    "certs/__init__.py": "the package's description only",
    "fhpa/__main__.py": "`python -m fhpa` calls fhpa.cli.main, tested in tests/fhpa/test_cli.py",
    "controller/errors.py": "exception types, no behaviour",
    "controller/ports.py": "protocols and the value types they exchange",
    "controller/result.py": "the Result value and the Reconciler protocol",
    "controller/planning/observation.py": "the planner's input types",
    "controller/planning/plan.py": "the planner's output types",
    "simulator/samples.py": "the types a step's measurements are recorded in",
}

# Tested today only through another module's test file (named here); give each its own file.
WITHOUT_OWN_FILE = {
    "controller/kube/member_trim.py": "tests/controller/kube/test_member_cache.py",
    "controller/kube/member_watches.py": "tests/controller/kube/test_member_cache.py",
    "controller/outcome.py": "tests/controller/test_executor.py",
    "controller/planning/fleet.py": "tests/controller/runtime/test_fleet_metrics.py",
    "fhpa/split_words.py": "tests/fhpa/test_explanation_truth.py",
    "controller/planning/pending.py": "tests/controller/planning/test_capacity_rules.py",
    "controller/planning/plan_events.py": "tests/controller/planning/test_planner.py",
    "controller/planning/policies/base.py": "tests/controller/planning/policies/",
    "controller/planning/policy.py": "tests/controller/planning/test_planner.py",
    "controller/planning/status_report.py": "tests/controller/planning/test_planner.py",
    "controller/runtime/metrics.py": "tests/controller/runtime/test_fleet_metrics.py",
    "simulator/control_plane.py": "tests/controller/test_event_series.py",
    "simulator/nodes.py": "tests/simulator/test_cluster_capacity.py",
    "certs/rotator.py": "tests/e2e/realapi/test_certs_rotator.py (the real-server tier only)",
    "fhpa/commands/webhook.py": "tests/webhook/test_logs.py",
    "fhpa_api/list_limits.py": "tests/webhook/test_cost.py",
    "fhpa_api/pause.py": "tests/controller/planning/test_pause.py",
    "fhpa/leftovers.py": "tests/fhpa/commands/test_cluster_unjoin.py",
    "fhpa/member_access.py": "tests/fhpa/commands/test_cluster.py",
    "fhpa/room_words.py": "tests/fhpa/test_explanation.py",
    "fhpa_api/field_checks.py": "tests/fhpa_api/test_validation.py",
}

TIER_MARK = re.compile(r"pytest\.mark\.(realapi|kube)\b")


def source_modules() -> list[str]:
    return sorted(
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def has_test_file(module: str) -> bool:
    path = Path(module)
    if path.name == "__init__.py":
        folder, stem = TESTS / path.parent, path.parent.name
    else:
        folder, stem = TESTS / path.parent, path.stem
    return (folder / f"test_{stem}.py").exists() or any(folder.glob(f"test_{stem}_*.py"))


def test_every_source_module_has_a_test_file_or_a_reason() -> None:
    missing = [
        module
        for module in source_modules()
        if module not in EXEMPT and module not in WITHOUT_OWN_FILE and not has_test_file(module)
    ]
    assert not missing, "modules without a test file (tests/<pkg>/test_<module>.py): " + ", ".join(missing)


@pytest.mark.parametrize("listed", sorted({**EXEMPT, **WITHOUT_OWN_FILE}))
def test_each_listed_module_exists_and_still_needs_its_entry(listed: str) -> None:
    assert (ROOT / listed).exists(), f"{listed} is gone: drop its entry"
    if listed in WITHOUT_OWN_FILE:
        assert not has_test_file(listed), f"{listed} has its own test file now: drop its entry"


def test_the_real_server_tiers_live_under_e2e() -> None:
    outside = [
        path.relative_to(ROOT).as_posix()
        for path in TESTS.rglob("test_*.py")
        if TESTS / "e2e" not in path.parents and TIER_MARK.search(path.read_text())
    ]
    assert not outside, f"realapi/kube tests outside tests/e2e/: {outside}"


def test_every_test_folder_is_a_package() -> None:
    """Test files in different folders share names (test_member.py); as packages they import apart."""
    folders = {path.parent for path in TESTS.rglob("test_*.py")}
    missing = sorted(f.relative_to(ROOT).as_posix() for f in folders if not (f / "__init__.py").exists())
    assert not missing, f"test folders without __init__.py: {missing}"
