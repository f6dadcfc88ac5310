"""Fixtures shared by the tests that serve the webhook over TLS (its own tests and the realapi tier's);
loaded for the whole suite by ``tests/conftest.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.webhook_serving import RunningWebhook, generate_certs, run_webhook


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and serving certificate for loopback, made once per test module by `fhpa certs generate`."""
    out = tmp_path_factory.mktemp("certs")
    generate_certs(out)
    return out


@pytest.fixture(scope="module")
def webhook_process(certs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningWebhook]:
    """`fhpa webhook serve`, running but not registered: each test registers it when it is ready to."""
    with run_webhook(certs, tmp_path_factory.mktemp("logs")) as server:
        yield server
