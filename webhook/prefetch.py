"""A gthread worker that reads each request whole on its poller before a pool thread serves it.

gunicorn's threaded worker hands a connection to a pool thread as soon as it has a byte to read; the
thread then reads the headers and the body with blocking calls. A client that sends a byte now and then
holds that thread for as long as the socket deadlines allow, and 32 such clients hold every thread of
a default worker: reviews from the API server queue behind them. Here the worker's main loop does the
TLS handshake and buffers the request line, the headers and the body (by Content-Length, or chunk by
chunk) with non-blocking reads, and submits the connection to the pool only once the request is
complete: a thread then parses it from memory and never waits on the client. A request that is not
complete within ``request_deadline`` seconds of its first byte is dropped; that is what the API server
waits at most (the webhook configurations' ``timeoutSeconds``), so nobody is left waiting for an answer.
A connection with no byte of a request yet is idle and closed after gunicorn's ``keepalive``.

A body over the limit is refused from the loop as well (HTTP 400, then the connection is closed once
the client stops sending, or after ``DRAIN_FACTOR`` times the limit), so that neither a large body nor
a slow one takes a thread. The app keeps its own checks for everything that reaches it.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import ssl
import time
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import Any

from gunicorn import sock as gsock
from gunicorn.http import get_parser
from gunicorn.workers.gthread import TConn, ThreadWorker

MAX_HEAD_BYTES = 16 * 1024
"""Request line and headers buffered at most (the API server's are well under 2 KiB)."""
READ_SIZE = 64 * 1024
DRAIN_FACTOR = 4


@dataclass
class Limits:
    """What the worker enforces; set in the master before the workers fork (see ``configure``)."""

    body_bytes: int = 3 * 1024 * 1024
    request_deadline: float = 5.0
    budget_bytes: int = 4 * 1024 * 1024


LIMITS = Limits()


def configure(body_bytes: int, request_deadline: float, budget_bytes: int) -> None:
    """Set the limits every worker forked after this call applies."""
    if min(body_bytes, request_deadline, budget_bytes) <= 0:
        raise ValueError("limits must be positive")
    LIMITS.body_bytes, LIMITS.request_deadline, LIMITS.budget_bytes = (
        body_bytes,
        request_deadline,
        budget_bytes,
    )


class Progress(Enum):
    MORE = "more"  # keep reading
    COMPLETE = "complete"  # a whole request is buffered (or one so malformed the parser refuses it)
    TOO_LARGE = "too_large"  # the head or the body is over its limit


class RequestScan:
    """How far a buffer holding the start of one HTTP/1.1 request has come, looked at again as it
    grows: what is known (the head's end, the framing, the chunks walked) is kept, so each look costs
    only the new bytes, not the whole buffer again."""

    def __init__(self, body_limit: int) -> None:
        self.body_limit = body_limit
        self.body_start: int | None = None
        self.length: int | None = None
        self.chunked = False
        self.at = 0  # the next chunk-size line, for a chunked body
        self.body = 0  # chunked body bytes announced so far

    def progress(self, buffer: bytes | bytearray) -> Progress:
        if self.body_start is None:
            head_end = buffer.find(b"\r\n\r\n", max(0, self.at - 3))
            if head_end < 0:
                self.at = len(buffer)
                return Progress.TOO_LARGE if len(buffer) > MAX_HEAD_BYTES else Progress.MORE
            self.body_start = self.at = head_end + 4
            self.length, self.chunked = _framing(bytes(buffer[:head_end]))
        if self.chunked:
            return self._chunks(buffer)
        if self.length is None:
            return Progress.COMPLETE
        if self.length > self.body_limit:
            return Progress.TOO_LARGE
        return Progress.COMPLETE if len(buffer) - self.body_start >= self.length else Progress.MORE

    def body_size(self) -> int | None:
        """What the body may hold, once the head is read: its Content-Length, the limit when it is
        chunked (its size is not known before it ends), 0 when it has neither."""
        if self.body_start is None:
            return None
        if self.chunked:
            return self.body_limit
        return self.length or 0

    def complete_at(self) -> int | None:
        """The buffer size that completes a request with a Content-Length, once the head is read."""
        if self.body_start is None or self.chunked or self.length is None:
            return None
        return self.body_start + self.length

    def _chunks(self, buffer: bytes | bytearray) -> Progress:
        """Walk the chunks buffered since the last look: complete after the last one and its trailers."""
        while True:
            line_end = buffer.find(b"\r\n", self.at)
            if line_end < 0:
                return Progress.MORE
            try:
                size = int(bytes(buffer[self.at : line_end]).split(b";", 1)[0].strip(), 16)
            except ValueError:
                return Progress.COMPLETE  # malformed: gunicorn's parser answers 400
            if self.body + size > self.body_limit:
                return Progress.TOO_LARGE
            if size == 0:  # the last chunk; trailers (if any) end with an empty line
                return Progress.COMPLETE if buffer.find(b"\r\n\r\n", line_end) >= 0 else Progress.MORE
            if line_end + 2 + size + 2 > len(buffer):
                return Progress.MORE
            self.body += size
            self.at = line_end + 2 + size + 2


def _framing(head: bytes) -> tuple[int | None, bool]:
    """The declared Content-Length (None if absent or unreadable) and whether the body is chunked."""
    length: int | None = None
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length" and value.strip().isdigit():
            length = int(value.strip())
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    return length, chunked


def refusal(status: str, message: str) -> bytes:
    """An HTTP answer from the poller (the connection is closed after it)."""
    payload = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


@dataclass(eq=False)
class Reading:
    """One connection being read on the poller."""

    conn: TConn
    deadline: float
    buffer: bytearray = field(default_factory=bytearray)
    handshaken: bool = False
    scan: RequestScan = field(default_factory=lambda: RequestScan(LIMITS.body_bytes))
    drained: int = -1  # bytes dropped after a refusal; -1 while the request is being read
    reserved: int = 0  # bytes of the worker's budget this request holds


class PrefetchWorker(ThreadWorker):
    """gthread, with every request read on the poller before it takes a thread (see module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reading: set[Reading] = set()
        self.budget_free = LIMITS.budget_bytes
        self.reserved: dict[TConn, int] = {}  # requests handed to a thread, and what they hold

    def accept(self, listener: Any) -> None:
        try:
            client, address = listener.accept()
        except OSError:  # another worker took it, or the client gave up already
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client, address, listener.getsockname())
        if self.cfg.is_ssl:
            conn.sock = gsock.ssl_wrap_socket(client, self.cfg)
        self._start(Reading(conn, time.monotonic() + self.cfg.keepalive, handshaken=not self.cfg.is_ssl))

    def on_client_socket_readable(self, conn: TConn, client: Any) -> None:
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self._start(Reading(conn, time.monotonic() + LIMITS.request_deadline, handshaken=True))

    def _start(self, reading: Reading) -> None:
        reading.conn.sock.setblocking(False)
        self.reading.add(reading)
        self.poller.register(reading.conn.sock, selectors.EVENT_READ, partial(self._readable, reading))

    def _readable(self, reading: Reading, _sock: Any) -> None:
        try:
            self._advance(reading)
        except (OSError, ValueError):
            self._drop(reading)

    def _advance(self, reading: Reading) -> None:
        sock = reading.conn.sock
        if not reading.handshaken:
            reading.deadline = min(reading.deadline, time.monotonic() + LIMITS.request_deadline)
            try:
                sock.do_handshake()
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return
            reading.handshaken = True
        while True:
            try:
                data = sock.recv(READ_SIZE)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                return
            if not data:
                self._drop(reading)
                return
            if reading.drained >= 0:
                reading.drained += len(data)
                if reading.drained >= DRAIN_FACTOR * LIMITS.body_bytes:
                    self._drop(reading)
                    return
                continue
            if not reading.buffer:
                reading.deadline = min(reading.deadline, time.monotonic() + LIMITS.request_deadline)
            reading.buffer += data
            complete_at = reading.scan.complete_at()
            if complete_at is not None and len(reading.buffer) < complete_at:
                continue
            state = reading.scan.progress(reading.buffer)
            if state is Progress.TOO_LARGE:
                self._refuse(
                    reading,
                    "400 Bad Request",
                    f"the request is over the limit of "
                    f"{MAX_HEAD_BYTES} bytes of headers and {LIMITS.body_bytes} of body",
                )
            elif not self._reserve(reading):
                self._refuse(reading, "503 Service Unavailable", "the webhook is busy with large reviews")
            elif state is Progress.COMPLETE:
                self._hand_over(reading)
                return

    def _reserve(self, reading: Reading) -> bool:
        """Hold the body's share of the worker's budget from the moment its size is known until it is
        answered; False when it does not fit. Bodies are buffered here and parsed by the threads, so
        the budget bounds both: a second worst-case body is refused at once instead of holding a
        thread while it waits, and small reviews always find room beside one worst-case body."""
        size = reading.scan.body_size()
        if reading.reserved or size is None:
            return True
        if size > self.budget_free:
            return False
        self.budget_free -= size
        reading.reserved = size
        return True

    def _release(self, reserved: int) -> None:
        self.budget_free += reserved

    def _refuse(self, reading: Reading, status: str, message: str) -> None:
        """Answer at once, then drop what the client still sends until it stops or the cap."""
        self._release(reading.reserved)
        reading.reserved = 0
        try:
            reading.conn.sock.send(refusal(status, message))
        except (OSError, ssl.SSLWantWriteError):
            self._drop(reading)
            return
        reading.buffer = bytearray()
        reading.drained = 0

    def _hand_over(self, reading: Reading) -> None:
        self._stop_reading(reading)
        conn = reading.conn
        if conn.parser is None:
            conn.parser = get_parser(self.cfg, conn.sock, conn.client)
        conn.parser.unreader.unread(bytes(reading.buffer))
        conn.data_ready = True
        self.reserved[conn] = reading.reserved
        self.enqueue_req(conn)

    def finish_request(self, conn: TConn, fs: Any) -> None:
        self._release(self.reserved.pop(conn, 0))
        super().finish_request(conn, fs)

    def _stop_reading(self, reading: Reading) -> None:
        self.reading.discard(reading)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(reading.conn.sock)

    def _drop(self, reading: Reading) -> None:
        self._stop_reading(reading)
        self._release(reading.reserved)
        reading.reserved = 0
        self.nr_conns -= 1
        reading.conn.close()

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        for reading in [r for r in self.reading if r.deadline <= now]:
            self._drop(reading)
