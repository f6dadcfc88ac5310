"""Fault injection and the request log of FakeKube: what a test makes go wrong, and what it can assert
was asked."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


@dataclass
class Fault:
    method: str  # regex on the HTTP method, e.g. "PUT" or "GET|PUT"
    path: str  # regex searched in the path (query excluded)
    action: str  # "status", "stall", "drop"
    status: int = 500
    times: int = 1  # how many matching requests it applies to; -1: forever
    seconds: float = 30.0  # how long a stall lasts
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        return bool(re.fullmatch(self.method, method) and re.search(self.path, path))


class Faults:
    """A programmable queue of faults; the first fault matching a request is used (and counted down)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self.vanished: str | None = None  # None, "drop" or "stall"

    def add(
        self,
        method: str = ".*",
        path: str = ".*",
        status: int | None = None,
        times: int = 1,
        stall: float | None = None,
        drop: bool = False,
    ) -> Fault:
        """Fail the next ``times`` requests matching ``method``/``path``: with ``status``, a ``stall`` of
        that many seconds (then the connection drops), or a dropped connection (``drop``)."""
        if sum(x is not None and x is not False for x in (status, stall, drop)) != 1:
            raise ValueError("give exactly one of status=, stall= or drop=True")
        if stall is not None:
            fault = Fault(method, path, "stall", times=times, seconds=stall)
        elif drop:
            fault = Fault(method, path, "drop", times=times)
        else:
            fault = Fault(method, path, "status", status=int(status or 500), times=times)
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
            self.vanished = None

    def take(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.times != 0 and fault.matches(method, path):
                    fault.hits += 1
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
            return None

    @property
    def pending(self) -> list[Fault]:
        with self._lock:
            return [f for f in self._faults if f.times != 0]


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str | None
    body: Any = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    client_cn: str | None = None  # the common name of a TLS client certificate, when one was presented
