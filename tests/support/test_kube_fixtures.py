"""The kube tier's gate: without a build its tests skip with the fix in the reason, and under CI=true
they fail, so CI can never pass with real members silently switched off."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import kube_fixtures
from tests.support.builds import kube_availability


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FHPA_KUBE_DIR", str(tmp_path))
    (tmp_path / "status").write_text("failed: make failed after 12 s\n")
    return tmp_path


def test_a_missing_build_names_the_last_status_and_the_fix(empty_cache: Path) -> None:
    binaries, reason = kube_availability()
    assert binaries is None
    assert "kube-apiserver not found" in reason
    assert "failed: make failed after 12 s" in reason
    assert "make kube" in reason


def test_the_tier_skips_without_ci(empty_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="KUBE TIER UNAVAILABLE"):
        kube_fixtures._binaries_or_skip()


def test_the_tier_fails_under_ci(empty_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required in CI"):
        kube_fixtures._binaries_or_skip()


def test_binaries_without_a_build_stamp_do_not_count(empty_cache: Path) -> None:
    (empty_cache / "bin").mkdir()
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        path = empty_cache / "bin" / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    binaries, reason = kube_availability()
    assert binaries is None and "build.stamp missing" in reason
