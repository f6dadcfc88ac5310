"""Reading a member's answer within its budget: a size cap and a deadline for the whole response.

A per-read timeout does not bound an answer: a server that sends one byte every few seconds resets it
forever. So each response read here has a deadline kept by one process-wide ``Reaper`` thread, which
shuts the response's socket down when the deadline passes; the blocked read then fails at once and is
reported as a ``ResponseDeadlineError``. The reaper only ever shuts sockets down, so no member can
hold it.

Bodies are read in small pieces with ``read1`` (what has arrived, never waiting for a full buffer), and
the reading stops as soon as the cap is passed: a page or a watch line over its cap costs at most the
cap and one piece in memory, never the whole of what the member sends.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from controller.kube.member_budget import MemberBudget, ResponseDeadlineError

PIECE = 64 * 1024
COMPACT_AT = 4096


class Deadline:
    """One armed deadline: ``fired`` once its action ran; ``cancel()`` before that keeps it from running."""

    def __init__(self, at: float, action: Callable[[], None]) -> None:
        self.at = at
        self.action: Callable[[], None] | None = action
        self.fired = False

    def cancel(self) -> None:
        self.action = None


class Reaper:
    """One daemon thread that runs each armed deadline's action when it passes (shutting a socket down:
    quick, and never blocked by the member it cuts off)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, action: Callable[[], None]) -> Deadline:
        deadline = Deadline(time.monotonic() + seconds, action)
        with self._cond:
            if len(self._heap) >= COMPACT_AT:  # cancelled deadlines far off wait for their time: drop them
                self._heap = [e for e in self._heap if e[2].action is not None]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="response-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()
        return deadline

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._heap[0][2].action is None:
                    heapq.heappop(self._heap)  # cancelled: forget it
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                deadline = heapq.heappop(self._heap)[2]
                action, deadline.action = deadline.action, None
            if action is not None:
                deadline.fired = True
                with contextlib.suppress(Exception):
                    action()


REAPER = Reaper()


def socket_of(resp: Any) -> socket.socket | None:
    """The socket under a streaming urllib3 response, if it still has one."""
    sock = getattr(getattr(resp, "_connection", None), "sock", None)
    if sock is None:  # the connection may already be detached: reach the socket through the reader
        raw = getattr(getattr(getattr(resp, "_fp", None), "fp", None), "raw", None)
        sock = getattr(raw, "_sock", None)
    return sock


def shutdown_socket(resp: Any) -> None:
    """Shut down the socket under a streaming urllib3 response, so a read blocked on it returns."""
    sock = socket_of(resp)
    if sock is None:
        with contextlib.suppress(Exception):
            resp.close()
        return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def pieces(resp: Any) -> Iterator[bytes]:
    """What has arrived of the body, piece by piece, until its end."""
    while True:
        piece = resp.read1(PIECE)
        if not piece:
            return
        yield piece


def read_page(resp: Any, budget: MemberBudget, what: str) -> bytes:
    """The whole body of a list answer, within the page cap and the response deadline."""
    cap = budget.caps.page_bytes
    declared = resp.headers.get("Content-Length") if resp.headers is not None else None
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise budget.page_too_large(int(declared))
    deadline = REAPER.arm(budget.caps.response_seconds, lambda: shutdown_socket(resp))
    body = bytearray()
    try:
        for piece in pieces(resp):
            body += piece
            if len(body) > cap:
                raise budget.page_too_large(len(body))
    except ResponseDeadlineError:
        raise
    except Exception:
        if deadline.fired:
            raise _late(budget, what) from None
        raise
    finally:
        deadline.cancel()
    if deadline.fired:
        raise _late(budget, what)
    return bytes(body)


def _late(budget: MemberBudget, what: str) -> ResponseDeadlineError:
    return ResponseDeadlineError(
        budget.cluster, f"{what}: not answered in full within {budget.caps.response_seconds:g} s"
    )


def capped_lines(resp: Any, budget: MemberBudget) -> Iterator[str]:
    """A watch body's lines, each within the line cap; the last line need not end with a newline."""
    cap = budget.caps.line_bytes
    pending = bytearray()
    for piece in pieces(resp):
        scan = len(pending)  # what came before holds no newline: look in the new piece only
        pending += piece
        start = 0
        while True:
            end = pending.find(b"\n", scan)
            if end < 0:
                break
            yield pending[start:end].decode(errors="replace")
            start = scan = end + 1
        del pending[:start]
        if len(pending) > cap:
            raise budget.line_too_long()
    if pending:
        yield pending.decode(errors="replace")
