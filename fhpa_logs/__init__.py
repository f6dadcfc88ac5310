"""Structured logs: one JSON object per line, so a log pipeline can filter by object, cluster or action.

The one log format of every process of the product (the controller, the webhook and its gunicorn), in a
package of its own so that none of them imports another to log.

The convention every module follows: the message is a short fixed sentence ("member action failed"),
the variable parts go in ``extra={...}`` with these keys where they apply: ``object``
("namespace/name"), ``kind``, ``cluster``, ``action``, ``error``, ``watch``, ``lease``. Fixed messages
keep log queries stable; the extras carry the detail.

Secrets never reach a log: keys that name credentials are dropped here as a last line of defence,
whatever a caller passes in ``extra``.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime", "taskName"}
_SECRET_WORDS = (
    "kubeconfig",
    "token",
    "password",
    "secret_data",
    "client_key",
    "authorization",
    "certificate",
)
REDACTED = "[redacted]"


def _is_secret(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): (REDACTED if _is_secret(str(k)) else _jsonable(v)) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    return str(value)


class JsonFormatter(logging.Formatter):
    """time, level, logger, message, the record's extras, and the exception text when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key in _STANDARD or key.startswith("_"):
                continue
            entry[key] = REDACTED if _is_secret(key) else _jsonable(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, separators=(",", ":"))


def configure(level: str = "info", fmt: str = "json", stream: TextIO | None = None) -> None:
    """Install one handler on the root logger (replacing earlier ones): ``json`` or ``text``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    elif fmt == "text":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        raise ValueError(f"log format must be json or text, got {fmt!r}")
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # the client's urllib3 debug logs would print request headers (bearer tokens): keep them quiet
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
