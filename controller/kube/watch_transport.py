"""The HTTP side of the list/watch loop (``controller.kube.listwatch``): list pages and watch streams
over a ``KubeClient``'s API client, within the member's budget.

Each list page is read in full within the page cap and a whole-response deadline; each watch is a
stream of lines within the line cap, cut off at its own deadline (the ``timeoutSeconds`` it asked for
plus slack), so a member that trickles its answer cannot keep a loop, or memory, past those
(``controller.kube.bounded_read``). TCP keepalive is on for watch sockets, so a member that vanishes
without closing the connection is noticed in about ``KEEPALIVE_IDLE + KEEPALIVE_INTERVAL *
KEEPALIVE_COUNT`` seconds, not at the deadline.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from kubernetes.client.exceptions import ApiException

from controller.kube.api_errors import map_error
from controller.kube.bounded_read import REAPER, capped_lines, read_page, shutdown_socket, socket_of
from controller.kube.clients import KubeClient
from controller.kube.listwatch import WatchError, WatchStream
from controller.kube.member_budget import UNCAPPED, MemberBudget, ResponseDeadlineError

T = TypeVar("T")

KEEPALIVE_IDLE = 10
KEEPALIVE_INTERVAL = 5
KEEPALIVE_COUNT = 3


class _HTTPWatchStream:
    """A watch's body as capped lines, cut off at the watch's whole-response deadline."""

    def __init__(self, resp: Any, budget: MemberBudget, seconds: float, what: str) -> None:
        self._resp = resp  # a streaming urllib3 response
        self._budget = budget
        self._what = what
        self._closed = False
        self._deadline = REAPER.arm(seconds, lambda: shutdown_socket(resp))

    def lines(self) -> Iterator[str]:
        try:
            for line in capped_lines(self._resp, self._budget):
                if self._deadline.fired:
                    break
                yield line
        except Exception:
            if not self._deadline.fired:
                raise
        if self._deadline.fired and not self._closed:
            raise ResponseDeadlineError(self._budget.cluster, f"{self._what}: still open past its deadline")

    def close(self) -> None:
        self._closed = True
        shutdown_socket(self._resp)

    def release(self) -> None:
        self._deadline.cancel()
        with contextlib.suppress(Exception):
            if self._closed or self._deadline.fired:
                self._resp.close()  # a shut-down socket must not go back to the pool
            else:
                self._resp.release_conn()


class KubeTransport:
    """Lists and watches through a ``KubeClient``'s API client, within the member's ``budget`` (page
    and line caps, whole-response deadlines; none of the caps without one: the control plane's own
    objects); errors mapped to controller.errors."""

    def __init__(self, client: KubeClient, budget: MemberBudget | None = None) -> None:
        self.client = client
        self.budget = budget or MemberBudget(client.cluster, UNCAPPED)

    def list_page(self, path: str, query: Mapping[str, Any]) -> Mapping[str, Any]:
        what = f"GET {path}"

        def fetch() -> bytes:
            raw = self._open(path, query, self.client.timeouts.read)
            try:
                data = read_page(raw, self.budget, what)
            except BaseException:
                shutdown_socket(raw)
                with contextlib.suppress(Exception):
                    raw.close()
                raise
            with contextlib.suppress(Exception):
                raw.release_conn()
            return data

        data = self._observed("GET", what, fetch)
        try:
            body = json.loads(data)
        except ValueError:
            body = None
        if not isinstance(body, Mapping):
            raise WatchError(f"list of {path} answered something other than a JSON object")
        return body

    def open_watch(self, path: str, query: Mapping[str, Any], read_timeout: float) -> WatchStream:
        what = f"WATCH {path}"

        def start() -> WatchStream:
            raw = self._open(path, query, read_timeout)
            _keepalive(raw)
            return _HTTPWatchStream(raw, self.budget, read_timeout, what)

        return self._observed("WATCH", what, start)

    def _open(self, path: str, query: Mapping[str, Any], read_timeout: float) -> Any:
        """The request sent and its status read; the body is left to stream. A refusal's body is read
        within the page cap for its Status message."""
        client = self.client
        params = [(k, "true" if v is True else "false" if v is False else str(v)) for k, v in query.items()]
        serialized = client.api.param_serialize(
            "GET",
            path,
            query_params=params,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        resp = client.api.call_api(*serialized, _request_timeout=(client.timeouts.connect, read_timeout))
        raw: Any = getattr(resp, "response", resp)
        if not 200 <= resp.status <= 299:
            try:
                data = read_page(raw, self.budget, f"GET {path}")
            finally:
                with contextlib.suppress(Exception):
                    raw.release_conn()
            raise ApiException(status=resp.status, reason=resp.reason, body=data.decode(errors="replace"))
        return raw

    def _observed(self, method: str, what: str, fn: Callable[[], T]) -> T:
        """``fn`` timed for the request observer, its failures as controller.errors types."""
        client = self.client
        started = time.monotonic()
        outcome = "ok"
        try:
            return fn()
        except Exception as exc:
            outcome = type(exc).__name__
            raise map_error(client.cluster, exc, what) from None
        finally:
            if client.observer is not None:
                client.observer(client.cluster, method, time.monotonic() - started, outcome)


def _keepalive(resp: Any) -> None:
    """TCP keepalive on a watch's socket: a peer gone without a FIN or RST is noticed in seconds."""
    sock = socket_of(resp)
    if sock is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_COUNT)
