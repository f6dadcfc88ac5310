"""The helm fixture keeps helm's cache inside the session's temp dir, so parallel workers and other
checkouts on the machine never write to one shared cache."""

from __future__ import annotations

import pytest

from tests.support.helm import HelmTools


def test_helm_caches_under_the_sessions_temp_dir(
    helm: HelmTools, tmp_path_factory: pytest.TempPathFactory
) -> None:
    result = helm.run("helm", "env")
    assert result.returncode == 0, result.stderr
    cache = next(line for line in result.stdout.splitlines() if line.startswith("HELM_CACHE_HOME="))
    assert cache == f'HELM_CACHE_HOME="{helm.cache_home}"'
    assert helm.cache_home.is_relative_to(tmp_path_factory.getbasetemp())
