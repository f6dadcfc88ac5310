"""The chart tests' `helm` fixture: the binaries scripts/helm-tools.sh extracts (make test runs it)."""

from __future__ import annotations

import os

import pytest

from tests.support.helm import HelmTools, tools


@pytest.fixture(scope="session")
def helm() -> HelmTools:
    found, reason = tools()
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"HELM TOOLS UNAVAILABLE: {reason} (required in CI)", pytrace=False)
        pytest.skip(f"HELM TOOLS UNAVAILABLE: {reason}")
    return found
