"""The webhook logs JSON like the controller (its own modules and gunicorn's master and workers), and a
busy --bind port ends `fhpa webhook serve` with one line and exit 1, not gunicorn's retries or a
traceback (issue 15 item 5)."""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.webhook_serving import fhpa_command, run_webhook

pytestmark = pytest.mark.slow


def entries(text: str) -> list[dict[str, Any]]:
    """Every line of the log as a JSON object (json.loads raises on a line that is not one)."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_the_webhook_and_gunicorn_log_one_json_object_per_line(certs: Path, tmp_path: Path) -> None:
    with run_webhook(certs, tmp_path, workers=1) as server:
        assert server.request("POST", "/validate", b"\x00garbage")[0] == 400  # the app logs a warning
        deadline = time.monotonic() + 10
        while "HTTP 400" not in server.log() and time.monotonic() < deadline:
            time.sleep(0.1)
    logged = entries(server.log())
    booting = [e for e in logged if e["message"].startswith("Booting worker")]
    assert booting and booting[0]["logger"] == "gunicorn.error" and booting[0]["level"] == "info"
    refused = [e for e in logged if e["message"].startswith("HTTP 400 on /validate")]
    assert refused and refused[0]["logger"] == "webhook.app" and refused[0]["level"] == "warning"
    assert all({"time", "level", "logger", "message"} <= set(e) for e in logged)


def test_text_format_keeps_gunicorns_own_lines(certs: Path, tmp_path: Path) -> None:
    with run_webhook(certs, tmp_path, ["--log-format", "text"], workers=1) as server:
        pass
    assert "Booting worker" in server.log()
    assert not server.log().lstrip().startswith("{")


def test_the_gunicorn_logger_formats_json_again_after_a_reload(capsys: pytest.CaptureFixture[str]) -> None:
    from gunicorn.config import Config

    from webhook.logs import JsonGunicornLogger, gunicorn_logger_class

    assert gunicorn_logger_class("text") is not JsonGunicornLogger
    cfg = Config()
    cfg.set("errorlog", "-")
    logger = JsonGunicornLogger(cfg)
    logger.setup(cfg)  # what a HUP reload runs: handlers replaced, still JSON
    logger.error("Worker (pid:%s) was sent %s!", 42, "SIGKILL")
    line = capsys.readouterr().err.strip().splitlines()[-1]
    entry = json.loads(line)
    assert entry["message"] == "Worker (pid:42) was sent SIGKILL!" and entry["level"] == "error"
    assert len(logging.getLogger("gunicorn.error").handlers) == 1


def test_a_busy_port_is_one_line_and_exit_1(certs: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = fhpa_command(
            "webhook", "serve", "--cert-dir", str(certs), "--bind", f"127.0.0.1:{port}", check=False
        )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "Booting" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("fhpa webhook serve:")]
    assert errors == [f"fhpa webhook serve: cannot listen on --bind 127.0.0.1:{port}: Address already in use"]
