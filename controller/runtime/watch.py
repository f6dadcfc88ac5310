"""List-then-watch of one resource, kept in a local store: the informer loop, written out.

Why by hand rather than ``kubernetes.watch.Watch``: that helper retries a 410 once from the same
(expired) resourceVersion and then raises, and it cannot tell us a relist is needed. Here the rules are
the API's own (kubernetes.io "API Concepts", efficient detection of changes):

- list, remember the list's ``metadata.resourceVersion``, then watch from exactly that version with
  ``allowWatchBookmarks=true``; every event (bookmarks included) advances the version;
- the server ends a watch after ``timeoutSeconds``: watch again from the last version, no relist;
- 410 Gone (as an HTTP status or as an ERROR event) means the version was compacted: list again and
  diff the new list against the store, so objects deleted meanwhile produce a DELETED event;
- any other failure backs off exponentially with jitter and resumes; a success resets the backoff;
- ``stop`` ends the loop between events, and ``close()`` unblocks a read in progress at once: it shuts
  the socket down rather than closing the response, because closing a buffered response takes the
  reader's lock and so waits for the read to return, up to the watch timeout (300 s) on an idle watch;
- a watch that ends early without any event waits ``min_watch_interval`` before the next one, so a
  proxy that ends streams at once cannot drive a hot loop.

The handler receives every change and must be quick (it enqueues a key); an exception in it is logged
and does not end the watch.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from controller.runtime.workqueue import ExponentialBackoff

log = logging.getLogger(__name__)

ObjectKey = tuple[str, str]
"""(namespace, name); namespace is "" for cluster-scoped objects."""

ListFunc = Callable[..., Any]
"""A kubernetes client list method with its positional arguments bound (functools.partial): it accepts
``watch``, ``resource_version``, ``allow_watch_bookmarks``, ``timeout_seconds``, ``label_selector``,
``_preload_content`` and ``_request_timeout``."""

DEFAULT_WATCH_TIMEOUT_SECONDS = 300
HTTP_GONE = 410


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED, MODIFIED or DELETED
    key: ObjectKey
    obj: dict[str, Any]


class GoneError(Exception):
    """The watch's resourceVersion is too old: list again."""


class WatchError(Exception):
    """The server ended a watch with an ERROR event other than 410."""


def object_key(obj: dict[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _resource_version(obj: dict[str, Any]) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv is not None else None


class Watcher:
    """Keeps ``store`` equal to the server's view of one resource and reports each change."""

    def __init__(
        self,
        list_func: ListFunc,
        handler: Callable[[WatchEvent], None],
        *,
        name: str,
        label_selector: str | None = None,
        timeout_seconds: int = DEFAULT_WATCH_TIMEOUT_SECONDS,
        connect_timeout_seconds: float = 10.0,
        backoff: ExponentialBackoff | None = None,
        on_relist: Callable[[], None] | None = None,
        min_watch_interval: float = 1.0,
    ) -> None:
        self.name = name
        self._on_relist = on_relist
        self._list_func = list_func
        self._handler = handler
        self._label_selector = label_selector
        self._timeout_seconds = timeout_seconds
        self._connect_timeout = connect_timeout_seconds
        self._backoff = backoff or ExponentialBackoff(base=0.5, maximum=30.0, jitter=0.2)
        self._lock = threading.Lock()
        self._store: dict[ObjectKey, dict[str, Any]] = {}
        self._resource_version: str | None = None
        self._response: Any = None
        self._min_watch_interval = min_watch_interval
        self._closing = threading.Event()
        self.synced = threading.Event()  # set after the first successful list
        self.relists = 0  # lists after the first (410 Gone); for tests and debugging

    # -- public -------------------------------------------------------------------------------------

    def snapshot(self) -> dict[ObjectKey, dict[str, Any]]:
        with self._lock:
            return dict(self._store)

    @property
    def resource_version(self) -> str | None:
        return self._resource_version

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set."""
        need_list = True
        failures = 0
        while not stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                started = time.monotonic()
                events = self._watch_once(stop)
                failures = 0
                short = self._min_watch_interval - (time.monotonic() - started)
                if not events and short > 0:
                    stop.wait(short)  # an empty stream that ended at once: no hot loop
            except GoneError:
                log.info("watch expired; listing again", extra={"watch": self.name})
                need_list = True
            except Exception as exc:
                if stop.is_set():
                    break
                if isinstance(exc, ApiException) and exc.status == HTTP_GONE:
                    need_list = True
                    continue
                failures += 1
                delay = self._backoff.delay(failures)
                log.warning(
                    "watch failed; retrying",
                    extra={"watch": self.name, "error": _describe(exc), "retry_in_seconds": round(delay, 3)},
                )
                stop.wait(delay)
        self.close()

    def close(self) -> None:
        """Unblock a read in progress at once (used on shutdown); never waits for the reading thread.

        ``resp.close()`` from here would block: the response's buffered reader holds its lock for the
        whole blocking read, so close waits until the server sends something or ends the watch. A
        socket shutdown makes that read return at once; the reading thread then closes the response.
        """
        self._closing.set()
        resp = self._response
        if resp is not None:
            _shutdown_socket(resp)

    # -- list ---------------------------------------------------------------------------------------

    def _list(self) -> None:
        kwargs: dict[str, Any] = {
            "_preload_content": False,
            "_request_timeout": (self._connect_timeout, max(30.0, float(self._timeout_seconds))),
        }
        if self._label_selector:
            kwargs["label_selector"] = self._label_selector
        resp = self._list_func(**kwargs)
        body = json.loads(resp.data)
        items = body.get("items") or []
        fresh = {object_key(item): item for item in items}
        with self._lock:
            old = self._store
            self._store = fresh
            self._resource_version = str((body.get("metadata") or {}).get("resourceVersion") or "") or None
        if self.synced.is_set():
            self.relists += 1
            if self._on_relist is not None:
                self._on_relist()
        for key, item in fresh.items():
            before = old.get(key)
            if before is None:
                self._emit(WatchEvent("ADDED", key, item))
            elif _resource_version(before) != _resource_version(item):
                self._emit(WatchEvent("MODIFIED", key, item))
        for key, item in old.items():
            if key not in fresh:
                self._emit(WatchEvent("DELETED", key, item))
        self.synced.set()

    # -- watch --------------------------------------------------------------------------------------

    def _watch_once(self, stop: threading.Event) -> int:
        """One watch request, read to its end; returns how many lines (events, bookmarks) it carried."""
        kwargs: dict[str, Any] = {
            "watch": True,
            "allow_watch_bookmarks": True,
            "timeout_seconds": self._timeout_seconds,
            "_preload_content": False,
            # a read that stalls well past the server's own timeout means a dead connection
            "_request_timeout": (self._connect_timeout, self._timeout_seconds + 30.0),
        }
        if self._resource_version:
            kwargs["resource_version"] = self._resource_version
        if self._label_selector:
            kwargs["label_selector"] = self._label_selector
        resp = self._list_func(**kwargs)
        self._response = resp
        if self._closing.is_set() or stop.is_set():
            _shutdown_socket(resp)  # close() ran while the request was being opened
        lines = 0
        try:
            for line in iter_resp_lines(resp):
                if stop.is_set():
                    return lines
                if line:
                    lines += 1
                    self._handle_line(line)
        finally:
            self._response = None
            with contextlib.suppress(Exception):
                if self._closing.is_set() or stop.is_set():
                    resp.close()  # a shut-down socket must not go back to the pool
                else:
                    resp.release_conn()
        return lines

    def _handle_line(self, line: str) -> None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise WatchError(f"unreadable watch event: {exc}") from exc
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            if code == HTTP_GONE:
                raise GoneError(obj.get("message", "resourceVersion too old"))
            raise WatchError(f"{code} {obj.get('reason')}: {obj.get('message')}")
        rv = _resource_version(obj)
        if kind == "BOOKMARK":
            if rv:
                self._resource_version = rv
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("unknown watch event type skipped", extra={"watch": self.name, "event_type": kind})
            return
        key = object_key(obj)
        with self._lock:
            if kind == "DELETED":
                self._store.pop(key, None)
            else:
                self._store[key] = obj
            if rv:
                self._resource_version = rv
        self._emit(WatchEvent(kind, key, obj))

    def _emit(self, event: WatchEvent) -> None:
        try:
            self._handler(event)
        except Exception:
            log.exception("watch handler failed", extra={"watch": self.name, "object": "/".join(event.key)})


def _shutdown_socket(resp: Any) -> None:
    """Shut down the socket under a streaming urllib3 response, so a read blocked on it returns."""
    sock = getattr(getattr(resp, "_connection", None), "sock", None)
    if sock is None:  # the connection may already be detached: reach the socket through the reader
        raw = getattr(getattr(getattr(resp, "_fp", None), "fp", None), "raw", None)
        sock = getattr(raw, "_sock", None)
    if sock is None:
        with contextlib.suppress(Exception):
            resp.close()  # not a socket-backed response (tests): closing does not block
        return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _describe(exc: BaseException) -> str:
    """A short, log-safe description: status and reason, never a response body (it may echo a secret)."""
    if isinstance(exc, ApiException):
        return f"HTTP {exc.status} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"[:300]
