"""Fixtures shared by the webhook tests that serve over TLS."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webhook.serving import generate_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and serving certificate for loopback, made once per test module by `fhpa certs generate`."""
    out = tmp_path_factory.mktemp("certs")
    generate_certs(out)
    return out
