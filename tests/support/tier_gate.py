"""The gate of a real-server tier (realapi, kube): without its build the tier's tests skip, naming the fix,
and under CI=true they fail, so CI can never pass with a tier silently switched off. The end of the run
repeats the skip in red, since a quiet 's' among hundreds of dots reads as a full run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

_B = TypeVar("_B")


@dataclass(frozen=True)
class TierGate:
    """What one tier says when its build is missing: ``tag`` marks its skips so the summary can count them."""

    name: str  # "realapi": the tier's name in the messages
    tag: str  # "REALAPI TIER UNAVAILABLE"
    runs_against: str  # "the real API server": what the skipped tests did not run against
    build_script: str
    make_target: str
    build_note: str = ""  # appended to the reason, e.g. how long a cold build takes

    def binaries_or_skip(self, availability: tuple[_B | None, str]) -> _B:
        """The binaries of ``availability`` (``(binaries, "")`` or ``(None, reason)``); else skip or fail."""
        binaries, reason = availability
        if binaries is not None:
            return binaries
        message = f"{self.tag}: {reason}{f' ({self.build_note})' if self.build_note else ''}."
        if os.environ.get("CI") == "true":
            required = f" CI=true: the {self.name} tier is required in CI, so this is a failure."
            pytest.fail(message + required, pytrace=False)
        pytest.skip(message)

    def summarize(self, terminalreporter: Any) -> None:
        """For ``pytest_terminal_summary``: a red section when any of the tier's tests skipped."""
        skipped = [
            report
            for report in terminalreporter.stats.get("skipped", [])
            if self.tag in str(getattr(report, "longrepr", ""))
        ]
        if not skipped:
            return
        reason = str(skipped[0].longrepr[-1]) if isinstance(skipped[0].longrepr, tuple) else ""
        terminalreporter.section(f"{self.name} tier SKIPPED", sep="!", red=True, bold=True)
        terminalreporter.line(f"{len(skipped)} test(s) did not run against {self.runs_against}.", red=True)
        if reason:
            terminalreporter.line(reason, red=True)
        terminalreporter.line(
            f"Run `bash {self.build_script}` (or `make {self.make_target}`) and re-run the tests.", red=True
        )
