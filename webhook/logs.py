"""The webhook's logs in the controller's format: one JSON object per line (fhpa_logs).

Two sources write to the log: the webhook's own modules (through the root logger, set up by
``fhpa_logs.configure``) and gunicorn, whose master and workers log through their own
``gunicorn.error`` and ``gunicorn.access`` loggers with handlers gunicorn installs itself and does not
propagate. ``JsonGunicornLogger`` gives those handlers the controller's JSON formatter, so a log
pipeline reads one format from every pod of the product.
"""

from __future__ import annotations

from typing import Any

from gunicorn import glogging

import fhpa_logs as logs

__all__ = ["JsonGunicornLogger", "configure", "gunicorn_logger_class"]


def configure(level: str, fmt: str) -> None:
    """The root logger, as the controller sets it (``json`` or ``text``)."""
    logs.configure(level, fmt)


class JsonGunicornLogger(glogging.Logger):
    """gunicorn's logger with its handlers formatting JSON (setup runs again on a reload: so does this)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        formatter = logs.JsonFormatter()
        for logger in (self.error_log, self.access_log):
            for handler in logger.handlers:
                handler.setFormatter(formatter)


def gunicorn_logger_class(fmt: str) -> type[glogging.Logger]:
    """The ``logger_class`` setting for a log format: JSON, or gunicorn's own lines for ``text``."""
    return JsonGunicornLogger if fmt == "json" else glogging.Logger
