"""`fhpa certs rotate` refuses a renewal window that would renew on every pass, before touching any API."""

from __future__ import annotations

import pytest

from fhpa.cli import main


@pytest.mark.parametrize(
    "window", [["--days", "30", "--renew-before-days", "30"], ["--renew-before-days", "-1"]]
)
def test_a_window_not_inside_the_validity_is_refused(
    window: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["certs", "rotate", "--namespace", "ops", "--kubeconfig", "/nonexistent", *window])
    assert code == 2
    assert "--renew-before-days must be at least 0 and below --days" in capsys.readouterr().err


def test_a_bad_ip_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certs", "rotate", "--namespace", "ops", "--in-cluster", "--ip", "nope"]) == 2
    assert "'nope' is not an IPv4 or IPv6 address" in capsys.readouterr().err
