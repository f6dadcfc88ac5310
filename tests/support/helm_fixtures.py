"""The `helm` fixture of the chart tests (tests/charts, tests/e2e): the binaries scripts/helm-tools.sh
extracts (make test runs it); loaded for the whole suite by ``tests/conftest.py``."""

from __future__ import annotations

import os

import pytest

from tests.support.helm import HelmTools, tools


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> HelmTools:
    found, reason = tools(tmp_path_factory.mktemp("helm-cache"))
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"HELM TOOLS UNAVAILABLE: {reason} (required in CI)", pytrace=False)
        pytest.skip(f"HELM TOOLS UNAVAILABLE: {reason}")
    return found
