"""Waiting on a condition in tests: poll it rather than sleep a guessed time, so a test takes as long as
the thing it waits for and a slow machine only makes it slower, not red."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    check: Callable[[], Any], timeout: float = 20.0, what: str = "condition", interval: float = 0.1
) -> Any:
    """Poll ``check`` until it returns something truthy and return that; fail naming ``what`` and the last
    value otherwise. The timeout is a bound on a hang, not a performance figure: keep it generous."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {str(last)[:300]})")
