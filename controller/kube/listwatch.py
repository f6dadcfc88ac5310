"""Paginated list, then watch, of one resource, kept trimmed in a local store: the one informer loop.

It serves the member clusters (their caches) and the control plane (the manager's informers) alike; only
the transport (which cluster, which client) and the trim (what of each object the store keeps) differ.
The API's rules (kubernetes.io "API Concepts", efficient detection of changes; retrieving large results
sets in chunks):

- the list is read in pages (``limit``/``continue``); the last page's ``metadata.resourceVersion`` is the
  snapshot's version. A continue token that expired (410) restarts the list from its first page;
- each item is trimmed as it is read (``trim``), so a page's full objects are garbage at once and the
  store holds only what the caller asked to keep;
- the watch starts from exactly that version with ``allowWatchBookmarks=true``; every event (bookmarks
  included) advances the version; a watch the server ends (``timeoutSeconds``) is resumed from the last
  version without a relist;
- 410 Gone (as an HTTP status or as an ERROR event) means the version was compacted: list again and diff
  the new list against the store, so objects deleted meanwhile are reported as deleted;
- any other failure backs off exponentially with jitter and resumes from the last version (no relist);
  a watch that carried anything resets the backoff;
- a watch that ends early without a line waits ``min_watch_interval``: no hot loop against a proxy that
  ends streams at once;
- ``close()`` shuts the socket of an open watch down so a blocked read returns at once (a socket shutdown,
  not a close of the response: closing a buffered response takes the reader's lock and so waits for the
  read to return, up to the watch timeout on an idle watch);
- ``on_full`` sees each object whole, before the trim, for a consumer that needs what the store must not
  keep: the member registry builds a member's client from its Secret's kubeconfig, which the Secret
  store drops (objects a relist finds gone reach only ``handler``, as DELETED);
- a list refused with 401/403 sets ``denied`` (the caller may fall back to a narrower scope, or count
  what this resource would tell as unknown) and is retried only every ``denied_retry_seconds``, in case
  the member's RBAC is fixed later;
- ``last_contact`` (monotonic) is when the server last answered (a page, a watch opened, a line read)
  and ``streaming`` whether a watch is open now: the member registry counts a member whose watches are
  open and answering as healthy without a probe of its own;
- with a ``budget`` (a member's: controller.kube.member_budget) every kept object is counted against
  the member's caps, a list in progress included; a member over them makes the loop give its store
  up (``unusable`` says why, each object goes to the handler as DROPPED, ``synced`` clears) and list
  again only after ``denied_retry_seconds``; an answer cut at its whole-response deadline sets ``late``
  until a watch carries a line or ends in time again (a trickling member is unknown, not quiet).

The transport is a small protocol (``Transport``) so the loop is tested against a stub as well as over
HTTP; ``controller.kube.watch_transport.KubeTransport`` is the real one, on a ``KubeClient``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from controller.backoff import ExponentialBackoff
from controller.errors import GoneError, PortError
from controller.executor import public_text
from controller.kube.api_errors import STATUS_MESSAGE_LIMIT, AccessDeniedError
from controller.kube.member_budget import (
    BudgetExceededError,
    MemberBudget,
    ResponseDeadlineError,
    object_size,
)

log = logging.getLogger(__name__)

ObjectKey = tuple[str, str]
"""(namespace, name); namespace is "" for cluster-scoped objects."""

Trim = Callable[[Mapping[str, Any]], dict[str, Any]]

DEFAULT_PAGE_SIZE = 500


def list_gate(pages: int = 1) -> threading.BoundedSemaphore:
    """A gate for the list pages of one owner (a member's cache, or the control plane's informers): a
    page of 500 pods parses into tens of MiB before trimming, so an owner's resources take turns. It is
    never shared across members: the gate is held while the page is read, and a member that trickles
    its answer would hold every other member's lists behind it."""
    return threading.BoundedSemaphore(pages)


DEFAULT_WATCH_TIMEOUT_SECONDS = 300
DEFAULT_DENIED_RETRY_SECONDS = 300.0
HTTP_GONE = 410
SYNC = "SYNC"
"""The handler's event type for an object of the first list (an ADDED that reports no change)."""
DROPPED = "DROPPED"
"""The handler's event type for an object let go because the store was given up (its member went over
its budget): the handler unindexes it, and it is not news (the member is unknown now, not emptied)."""
OWN = "OWN"
"""The handler's event type for our own write put into the store (``apply_local``), or for a watch event
``is_own`` says is its echo: the handler indexes it, and it is not news (the pass that wrote it planned
from it already)."""


class WatchError(PortError):
    """The server ended a watch with an ERROR event other than 410, or sent an unreadable line."""


class WatchStream(Protocol):
    def lines(self) -> Iterable[str]: ...

    def close(self) -> None:
        """Unblock a read in progress (may be called from another thread); idempotent."""

    def release(self) -> None:
        """The stream was read to its end (or abandoned): give the connection back or drop it."""


class Transport(Protocol):
    def list_page(self, path: str, query: Mapping[str, Any]) -> Mapping[str, Any]:
        """One list request; raises controller.errors types (GoneError for 410)."""

    def open_watch(self, path: str, query: Mapping[str, Any], read_timeout: float) -> WatchStream:
        """Start a watch request; raises controller.errors types when the server refuses it."""


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def watch_backoff() -> ExponentialBackoff:
    """The loop's default retry schedule: 0.5 s doubling to 30 s, spread by +/- 20% so that the watches
    of many clusters broken together (a network blip) do not retry together."""
    return ExponentialBackoff(base=0.5, maximum=30.0, jitter=0.2)


Handler = Callable[[str, ObjectKey, dict[str, Any] | None, dict[str, Any] | None], None]
IsOwn = Callable[[ObjectKey, dict[str, Any] | None], bool]
"""Whether a change of the object at ``key`` from ``old``, as the watch stream delivered it, is the echo
of our own write."""


@dataclass(frozen=True)
class Pacing:
    """How often and how much the loop asks: list page size, watch timeout and read slack, the backoff
    after a failure, the least time between watches, the wait before a refused (401/403) list again."""

    page_size: int
    timeout_seconds: int
    read_slack_seconds: float
    backoff: ExponentialBackoff
    min_watch_interval: float
    denied_retry_seconds: float


@dataclass(frozen=True)
class Hooks:
    """Who hears from the loop: ``handler`` each change of a trimmed object, ``on_synced`` the first
    complete list, ``on_relist`` each later one, ``on_full`` each object whole, before its trim,
    ``on_given_up`` the store given up over its member's budget, ``is_own`` which watch events echo our
    writes (the handler gets them as ``OWN``)."""

    handler: Handler | None
    on_synced: Callable[[], None] | None
    on_relist: Callable[[], None] | None
    on_full: Callable[[str, Mapping[str, Any]], None] | None
    on_given_up: Callable[[], None] | None = None
    is_own: IsOwn | None = None


class ListWatch:
    """Keeps a trimmed copy of one resource equal to the server's view and reports each change.

    ``handler(type, key, old, new)`` is called for every change of the TRIMMED object (ADDED, MODIFIED,
    DELETED; an update that changes nothing kept is not reported); it must be quick, and an exception in
    it is logged and does not end the loop. Reads (``get``, ``items``) may come from any thread.
    """

    def __init__(
        self,
        transport: Transport,
        path: str,
        trim: Trim,
        *,
        name: str,
        handler: Handler | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        timeout_seconds: int = DEFAULT_WATCH_TIMEOUT_SECONDS,
        read_slack_seconds: float = 30.0,
        backoff: ExponentialBackoff | None = None,
        min_watch_interval: float = 1.0,
        denied_retry_seconds: float = DEFAULT_DENIED_RETRY_SECONDS,
        on_synced: Callable[[], None] | None = None,
        on_relist: Callable[[], None] | None = None,
        on_full: Callable[[str, Mapping[str, Any]], None] | None = None,
        label_selector: str | None = None,
        gate: threading.BoundedSemaphore | None = None,
        budget: MemberBudget | None = None,
        on_given_up: Callable[[], None] | None = None,
        is_own: IsOwn | None = None,
    ) -> None:
        self.name = name
        self._gate = gate or list_gate()
        self._budget = budget  # None: nothing counted (the control plane's own objects)
        self._sizes: dict[ObjectKey, int] = {}  # what each kept object counts against the budget
        self._bytes = 0
        self.unusable: str | None = None  # why the store was given up (over budget), until a list fits
        self.late: str | None = None  # an answer cut at its deadline, until one comes whole again
        # after a 410, until the new list completes: the store holds what was, deletions may be missing
        self.relisting = False
        self.path = path
        self._transport = transport
        self._trim = trim
        self._selector = label_selector
        self.pacing = Pacing(
            page_size=page_size,
            timeout_seconds=timeout_seconds,
            read_slack_seconds=read_slack_seconds,
            backoff=backoff or watch_backoff(),
            min_watch_interval=min_watch_interval,
            denied_retry_seconds=denied_retry_seconds,
        )
        self._hooks = Hooks(handler, on_synced, on_relist, on_full, on_given_up, is_own)
        self._lock = threading.Lock()
        self._store: dict[ObjectKey, dict[str, Any]] = {}
        self._resource_version: str | None = None
        self._stream: WatchStream | None = None
        self._closing = threading.Event()
        self._wake = threading.Event()  # retry_now(): end a backoff wait early
        self.synced = threading.Event()  # set after the first complete list
        self.denied = threading.Event()  # the last list was refused (401/403)
        self.last_contact = float("-inf")  # monotonic time the server last answered
        self.failing = False  # the last list or watch request failed (not 410): backing off now
        # counters, for tests and metrics
        self.lists = 0  # complete lists (the first included)
        self.relists = 0  # complete lists after the first (410 Gone)
        self.pages = 0  # list requests that answered
        self.watches = 0  # watch requests that opened
        self.failures = 0  # failed requests (any cause but 410)
        self.last_error: str | None = None

    # -- reads --------------------------------------------------------------------------------------

    @property
    def resource_version(self) -> str | None:
        return self._resource_version

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        with self._lock:
            return self._store.get(key)

    def keys(self) -> list[ObjectKey]:
        with self._lock:
            return list(self._store)

    def items(self) -> list[dict[str, Any]]:
        """The trimmed objects (shared, not copied: callers must not change them)."""
        with self._lock:
            return list(self._store.values())

    def __len__(self) -> int:
        return len(self._store)

    @property
    def streaming(self) -> bool:
        """A watch request is open now (its socket alive as far as TCP keepalive knows)."""
        return self._stream is not None

    def _contact(self) -> None:
        self.last_contact = time.monotonic()
        self.failing = False

    # -- loop ---------------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set."""
        need_list = True
        failures = 0
        while not stop.is_set() and not self._closing.is_set():
            try:
                if need_list:
                    self._list(stop)
                    need_list = False
                    failures = 0
                started = time.monotonic()
                lines = self._watch_once(stop)
                if lines:
                    failures = 0
                short = self.pacing.min_watch_interval - (time.monotonic() - started)
                if not lines and short > 0:
                    stop.wait(short)
            except BudgetExceededError as exc:
                if stop.is_set() or self._closing.is_set():
                    break
                need_list = True
                self._give_up(exc.detail)
                self._pause(stop, self.pacing.denied_retry_seconds)  # it would send as much again at once
            except GoneError:
                log.info("watch expired; listing again", extra={"watch": self.name})
                need_list = True
                self.relisting = self.synced.is_set()  # the store is the past until the list completes
            except AccessDeniedError as exc:
                if stop.is_set() or self._closing.is_set():
                    break
                self.failures += 1
                self.last_error = _describe(exc)
                need_list = True
                if not self.denied.is_set():
                    log.warning(
                        "list/watch refused (RBAC); retrying rarely",
                        extra={"watch": self.name, "error": self.last_error},
                    )
                self.denied.set()
                self._pause(stop, self.pacing.denied_retry_seconds)
            except Exception as exc:
                if stop.is_set() or self._closing.is_set():
                    break
                failures += 1
                self.failures += 1
                self.failing = True
                self.last_error = _describe(exc)
                if isinstance(exc, ResponseDeadlineError):  # unknown until an answer comes whole again
                    self.late = self.last_error
                delay = self.pacing.backoff.delay(failures)
                log.warning(
                    "list/watch failed; retrying",
                    extra={"watch": self.name, "error": self.last_error, "retry_in_seconds": round(delay, 3)},
                )
                self._pause(stop, delay)
        self.close()

    def _give_up(self, reason: str) -> None:
        """Over the member's budget: keep nothing (each object goes to the handler as DROPPED) and be
        unknown, saying why, until a later list fits. The reason is set once all is let go."""
        self.failures += 1
        self.failing = False  # not a failure a probe's success should end early: it would send as much
        log.warning("member over its budget: cache given up", extra={"watch": self.name, "error": reason})
        with self._lock:
            old, self._store = self._store, {}
            self._sizes, self._bytes = {}, 0
            self._resource_version = None
        self.synced.clear()
        self.relisting = False
        if self._budget is not None:
            self._budget.release(self.name)
        for key, item in old.items():
            self._emit(DROPPED, key, item, None)
        del old
        self.unusable = self.last_error = reason
        if self._hooks.on_given_up is not None:
            try:
                self._hooks.on_given_up()
            except Exception:
                log.exception("list/watch on_given_up failed", extra={"watch": self.name})

    def _fits(self, objects: int, size: int, pages: int = 0) -> None:
        """Raise BudgetExceededError when holding ``objects`` of ``size`` bytes (or listing for
        ``pages`` pages) breaks the member's budget."""
        budget = self._budget
        if budget is None:
            return
        if pages > budget.caps.max_pages(self.pacing.page_size):
            raise BudgetExceededError(budget.cluster, f"{self.name}: a list continuing past {pages} pages")
        budget.check(self.name, objects, size)

    def _resize(self, key: ObjectKey, size: int | None) -> None:
        """Under ``_lock``: ``key`` now counts ``size`` bytes (None: gone)."""
        if self._budget is None:
            return
        self._bytes -= self._sizes.pop(key, 0)
        if size is not None:
            self._sizes[key] = size
            self._bytes += size

    def _pause(self, stop: threading.Event, seconds: float) -> None:
        """Back off ``seconds``, or less when ``retry_now()`` or ``close()`` is called meanwhile."""
        if not stop.is_set():
            self._wake.wait(seconds)
            self._wake.clear()

    def retry_now(self) -> None:
        """End a backoff wait at once (the member answered a probe again: no reason to wait longer)."""
        self._wake.set()

    def close(self) -> None:
        """Unblock a watch read in progress at once; never waits for the reading thread."""
        self._closing.set()
        self._wake.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    # -- list ---------------------------------------------------------------------------------------

    def _list(self, stop: threading.Event) -> None:
        fresh: dict[ObjectKey, dict[str, Any]] = {}
        sizes: dict[ObjectKey, int] = {}
        size = pages = 0
        token: str | None = None
        version: str | None = None
        while True:
            query: dict[str, Any] = {"limit": self.pacing.page_size}
            if self._selector:
                query["labelSelector"] = self._selector
            if token:
                query["continue"] = token
            with self._gate:
                try:
                    body = self._transport.list_page(self.path, query)
                except GoneError:
                    if token is None:
                        raise
                    # the continue token expired mid-list: start the list again from its first page
                    log.info(
                        "list continue token expired; listing from the start", extra={"watch": self.name}
                    )
                    fresh, sizes, token, size, pages = {}, {}, None, 0, 0
                    continue
                self.pages += 1
                pages += 1
                self._contact()
                items = body.get("items") or ()
                for item in items:
                    self._full("ADDED", item)
                    trimmed = self._trim(item)
                    key = object_key(trimmed)
                    fresh[key] = trimmed
                    if self._budget is not None:
                        kept = object_size(trimmed)
                        size += kept - sizes.get(key, 0)
                        sizes[key] = kept
                meta = body.get("metadata") or {}
                del body, items  # the page's full objects go now, inside the gate
                self._fits(len(fresh), size, pages)
            version = str(meta.get("resourceVersion") or "") or None
            token = meta.get("continue") or None
            if not token:
                break
            if stop.is_set():
                return
        with self._lock:
            old = self._store
            self._store = fresh
            self._sizes, self._bytes = sizes, size
            self._resource_version = version
        if self._budget is not None:
            self._budget.hold(self.name, len(fresh), size)
        self.relisting = False
        self.unusable = self.late = None
        self.lists += 1
        self.denied.clear()
        first = not self.synced.is_set()
        if not first:
            self.relists += 1
            if self._hooks.on_relist is not None:
                self._hooks.on_relist()
        for key, item in fresh.items():
            before = old.get(key)
            if before is None:
                # the first list's objects are not news: the type says so, handlers may stay quiet
                self._emit(SYNC if first else "ADDED", key, None, item)
            elif before != item:
                self._emit("MODIFIED", key, before, item)
        for key, item in old.items():
            if key not in fresh:
                self._emit("DELETED", key, item, None)
        self.synced.set()
        if first and self._hooks.on_synced is not None:
            try:
                self._hooks.on_synced()
            except Exception:
                log.exception("list/watch on_synced failed", extra={"watch": self.name})

    # -- watch --------------------------------------------------------------------------------------

    def _watch_once(self, stop: threading.Event) -> int:
        """One watch request, read to its end; returns how many lines (events, bookmarks) it carried."""
        query: dict[str, Any] = {
            "watch": True,
            "allowWatchBookmarks": True,
            "timeoutSeconds": self.pacing.timeout_seconds,
        }
        if self._resource_version:
            query["resourceVersion"] = self._resource_version
        if self._selector:
            query["labelSelector"] = self._selector
        read_timeout = self.pacing.timeout_seconds + self.pacing.read_slack_seconds
        stream = self._transport.open_watch(self.path, query, read_timeout)
        self.watches += 1
        self._contact()
        self._stream = stream
        if self._closing.is_set() or stop.is_set():
            stream.close()  # close() ran while the request was being opened
        lines = 0
        try:
            for line in stream.lines():
                if stop.is_set() or self._closing.is_set():
                    return lines
                if line:
                    lines += 1
                    self._contact()
                    self.late = None
                    self._handle_line(line)
        finally:
            self._stream = None
            stream.release()
        self.late = None  # ended in time
        return lines

    def _handle_line(self, line: str) -> None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise WatchError(f"unreadable watch event: {exc}") from exc
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":  # the member's text, scrubbed as on the HTTP path (it reaches logs and Events)
            code = obj.get("code")
            message = public_text(str(obj.get("message") or ""), STATUS_MESSAGE_LIMIT)
            if code == HTTP_GONE:
                raise GoneError(message or "resourceVersion too old")
            reason = public_text(str(obj.get("reason")), 64)
            raise WatchError(f"{public_text(str(code), 16)} {reason}: {message}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            if rv:
                self._resource_version = str(rv)
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("unknown watch event type skipped", extra={"watch": self.name, "event_type": kind})
            return
        self._full(kind, obj)
        trimmed = self._trim(obj)
        key = object_key(trimmed)
        size = object_size(trimmed) if self._budget is not None and kind != "DELETED" else None
        if size is not None:
            grows = key not in self._sizes
            self._fits(len(self._sizes) + grows, self._bytes - self._sizes.get(key, 0) + size)
        with self._lock:
            before = self._store.get(key)
            if kind == "DELETED":
                self._store.pop(key, None)
            else:
                self._store[key] = trimmed
            self._resize(key, size)
            if rv:
                self._resource_version = str(rv)
        if self._budget is not None:
            self._budget.hold(self.name, len(self._sizes), self._bytes)
        if kind == "DELETED":
            if before is not None:
                self._emit(self._streamed("DELETED", key, before), key, before, None)
        elif before is None:
            self._emit(self._streamed("ADDED", key, None), key, None, trimmed)
        elif before != trimmed:
            self._emit(self._streamed("MODIFIED", key, before), key, before, trimmed)

    def _streamed(self, kind: str, key: ObjectKey, before: dict[str, Any] | None) -> str:
        """The handler's type for a change the watch stream delivered: ``OWN`` when it echoes our write.
        Only here: a watch event is one write, while a relist's difference may fold our write together
        with later ones by others, which must not pass for our echo."""
        is_own = self._hooks.is_own
        return OWN if is_own is not None and is_own(key, before) else kind

    def apply_local(
        self, obj: Mapping[str, Any] | None, key: ObjectKey | None = None, *, since: str | None
    ) -> None:
        """Our own write, as the server answered it (``obj``; None with ``key``: deleted), put into the
        store at once rather than when its watch event arrives: a reconcile right after the write reads
        what was written, not the version before it. The watch's resourceVersion is not moved (the
        event still comes, and then changes nothing). The handler gets it as ``OWN``: a write's echo must
        not plan its object again, or every write would cost a second pass. Only once the first list is
        in, and only while the store still holds the object at ``since``, the version the write was
        conditional on (None: a create, the object absent): otherwise the watch (or a relist) has
        delivered the write already, and perhaps later changes too, which the answer must not undo
        (the watch will not send them again)."""
        if not self.synced.is_set():
            return
        trimmed = self._trim(obj) if obj is not None else None
        key = object_key(trimmed) if trimmed is not None else key
        if key is None:
            return
        with self._lock:
            before = self._store.get(key)
            if _version(before) != since:
                return
            if trimmed is None:
                self._store.pop(key, None)
            else:
                self._store[key] = trimmed
            self._resize(key, object_size(trimmed) if trimmed is not None and self._budget else None)
        if self._budget is not None:  # our own write: counted, never refused
            self._budget.hold(self.name, len(self._sizes), self._bytes)
        if before != trimmed:
            self._emit(OWN, key, before, trimmed)

    def _full(self, kind: str, obj: Mapping[str, Any]) -> None:
        if self._hooks.on_full is None:
            return
        try:
            self._hooks.on_full(kind, obj)
        except Exception:
            log.exception(
                "list/watch on_full failed", extra={"watch": self.name, "object": "/".join(object_key(obj))}
            )

    def _emit(
        self, kind: str, key: ObjectKey, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        if self._hooks.handler is None:
            return
        try:
            self._hooks.handler(kind, key, old, new)
        except Exception:
            log.exception("list/watch handler failed", extra={"watch": self.name, "object": "/".join(key)})


def _version(obj: Mapping[str, Any] | None) -> str | None:
    """The object's resourceVersion; None for no object."""
    return None if obj is None else (obj.get("metadata") or {}).get("resourceVersion")


def _describe(exc: BaseException) -> str:
    """A short, log-safe description (controller.errors messages are already scrubbed)."""
    return f"{type(exc).__name__}: {exc}"[:300]
