"""A tiny stand-in for the Kubernetes "core" API, stdlib only.

The standalone apiextensions-apiserver reads a few core resources through ``--kubeconfig``: it
runs client-go informers (list + watch) on namespaces, services and the admission webhook
configurations. This module serves exactly those, with real list/watch semantics:

* ``GET <collection>`` lists, with ``metadata.resourceVersion`` set to the current version;
* ``GET <collection>?watch=true`` streams JSON watch events (``Content-Type: application/json``,
  chunked). ``resourceVersion=N`` replays the changes after N; ``sendInitialEvents=true`` (client-go
  WatchList) first sends an ADDED event per object and then a BOOKMARK annotated
  ``k8s.io/initial-events-end: "true"``; ``timeoutSeconds`` ends the stream;
* ``GET/POST/PUT/DELETE`` on single objects, so tests may also create namespaces or services with
  an ordinary client.

Control endpoints (used by ``tests/support/realapi.py``), all JSON:

* ``PUT /_stub/collections/<name>`` with ``{"items": [...]}`` replaces a collection's objects. The
  differences are streamed to every watcher as ADDED / MODIFIED / DELETED. With ``?wait=SECONDS``
  the call returns once the collection has at least one watch and every open watch of it has been
  sent the change (or the time is up); the answer says how many watchers are up to date / behind.
* ``GET /_stub/healthz`` answers ``ok``.

Collections: ``namespaces``, ``services``, ``secrets``, ``mutatingwebhookconfigurations``,
``validatingwebhookconfigurations``. Namespace ``default`` exists from the start.

Usage: ``python core_stub.py --port PORT [--host 127.0.0.1]`` (port 0 picks a free one; the
chosen port is printed as ``listening on http://HOST:PORT``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

JSON = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    name: str  # plural, as in the URL
    group_version: str  # "v1" or "admissionregistration.k8s.io/v1"
    kind: str
    namespaced: bool

    @property
    def prefix(self) -> str:
        return "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("namespaces", "v1", "Namespace", False),
        Kind("services", "v1", "Service", True),
        Kind("secrets", "v1", "Secret", True),
        Kind(
            "mutatingwebhookconfigurations",
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            False,
        ),
        Kind(
            "validatingwebhookconfigurations",
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            False,
        ),
    )
}

HISTORY_LIMIT = 10_000  # watch events kept per collection for resourceVersion replays


class Gone(Exception):
    """A watch asked for a resourceVersion older than the kept history."""


class Store:
    """Objects of every collection, one global resourceVersion counter, and an event log."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.rv = 0
        self.objects: dict[str, dict[tuple[str, str], JSON]] = {name: {} for name in KINDS}
        self.events: dict[str, list[tuple[int, str, JSON]]] = {name: [] for name in KINDS}
        self.first_kept: dict[str, int] = dict.fromkeys(KINDS, 0)
        # watcher id -> (collection, highest rv written to it)
        self.watchers: dict[int, tuple[str, int]] = {}
        self._next_watcher = 0
        self.put("namespaces", {"metadata": {"name": "default"}})

    # -- mutation (the Condition wraps an RLock, so methods may call each other)

    @staticmethod
    def _normalize(kind: Kind, obj: JSON, old: JSON | None) -> JSON:
        """The object as it would be stored, without a resourceVersion."""
        obj = copy.deepcopy(obj)
        obj["apiVersion"] = kind.group_version
        obj["kind"] = kind.kind
        meta = obj.setdefault("metadata", {})
        meta.pop("resourceVersion", None)
        if kind.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        if old is not None:
            meta["uid"] = old["metadata"]["uid"]
            meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
        else:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        if kind.name == "namespaces":
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        return obj

    def _stamp(self, kind: Kind, obj: JSON, old: JSON | None) -> JSON:
        stored = self._normalize(kind, obj, old)
        self.rv += 1
        stored["metadata"]["resourceVersion"] = str(self.rv)
        return stored

    def _record(self, name: str, etype: str, obj: JSON) -> None:
        log = self.events[name]
        log.append((self.rv, etype, obj))
        if len(log) > HISTORY_LIMIT:
            dropped = log.pop(0)
            self.first_kept[name] = dropped[0]
        self.cond.notify_all()

    @staticmethod
    def _key(kind: Kind, obj: JSON) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise ValueError("metadata.name is required")
        return (meta.get("namespace", "default") if kind.namespaced else "", str(name))

    def put(self, name: str, obj: JSON, *, create_only: bool = False) -> tuple[JSON, bool]:
        """Create or replace an object; returns (stored object, created?)."""
        kind = KINDS[name]
        with self.cond:
            probe = copy.deepcopy(obj)
            if kind.namespaced:
                probe.setdefault("metadata", {}).setdefault("namespace", "default")
            key = self._key(kind, probe)
            old = self.objects[name].get(key)
            if old is not None and create_only:
                raise FileExistsError(key[1])
            stored = self._stamp(kind, obj, old)
            self.objects[name][key] = stored
            self._record(name, "ADDED" if old is None else "MODIFIED", stored)
            return copy.deepcopy(stored), old is None

    def delete(self, name: str, namespace: str, obj_name: str) -> JSON | None:
        kind = KINDS[name]
        with self.cond:
            old = self.objects[name].pop((namespace if kind.namespaced else "", obj_name), None)
            if old is None:
                return None
            self.rv += 1
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self._record(name, "DELETED", gone)
            return gone

    def replace_all(self, name: str, items: list[JSON]) -> int:
        """Make the collection hold exactly ``items``; unchanged objects keep their version."""
        kind = KINDS[name]
        with self.cond:
            wanted: dict[tuple[str, str], JSON] = {}
            for item in items:
                probe = copy.deepcopy(item)
                if kind.namespaced:
                    probe.setdefault("metadata", {}).setdefault("namespace", "default")
                wanted[self._key(kind, probe)] = item
            for key in list(self.objects[name]):
                if key not in wanted:
                    self.delete(name, key[0], key[1])
            for key, item in wanted.items():
                old = self.objects[name].get(key)
                if old is not None and _without_rv(old) == self._normalize(kind, item, old):
                    continue
                self.put(name, item)
            return self.rv

    # -- reads

    def list_objects(self, name: str, namespace: str | None) -> tuple[list[JSON], int]:
        with self.cond:
            items = [
                copy.deepcopy(o)
                for (ns, _), o in sorted(self.objects[name].items())
                if namespace is None or ns == namespace
            ]
            return items, self.rv

    def get(self, name: str, namespace: str, obj_name: str) -> JSON | None:
        kind = KINDS[name]
        with self.cond:
            obj = self.objects[name].get((namespace if kind.namespaced else "", obj_name))
            return copy.deepcopy(obj) if obj is not None else None

    # -- watch bookkeeping

    def register_watcher(self, name: str, rv: int) -> int:
        with self.cond:
            self._next_watcher += 1
            self.watchers[self._next_watcher] = (name, rv)
            return self._next_watcher

    def advance_watcher(self, wid: int, rv: int) -> None:
        """Record what a watch has sent; wake waiters only when that moved.

        The watches wait on the same Condition: waking them when nothing moved makes each woken
        watch advance and wake the others again, a loop that keeps a core busy while idle."""
        with self.cond:
            name, old = self.watchers[wid]
            self.watchers[wid] = (name, rv)
            if rv != old:
                self.cond.notify_all()

    def drop_watcher(self, wid: int) -> None:
        with self.cond:
            self.watchers.pop(wid, None)
            self.cond.notify_all()

    def events_after(self, name: str, rv: int, namespace: str | None) -> list[tuple[int, str, JSON]]:
        """Events of a collection with version > rv (lock must be held)."""
        if rv < self.first_kept[name]:
            raise Gone(f"too old resource version: {rv} ({self.first_kept[name]})")
        kind = KINDS[name]
        return [
            (erv, etype, obj)
            for erv, etype, obj in self.events[name]
            if erv > rv
            and (namespace is None or not kind.namespaced or obj["metadata"].get("namespace") == namespace)
        ]

    def wait_delivered(self, name: str, rv: int, timeout: float) -> tuple[int, int]:
        """Wait until ``name`` has a watcher and every watcher was sent everything up to ``rv``.

        Returns (watchers updated, watchers still behind)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                relevant = [w_rv for (n, w_rv) in self.watchers.values() if n == name]
                behind = sum(1 for w_rv in relevant if w_rv < rv)
                left = deadline - time.monotonic()
                if (relevant and behind == 0) or left <= 0:
                    return len(relevant) - behind, behind
                self.cond.wait(left)


def _without_rv(obj: JSON) -> JSON:
    obj = copy.deepcopy(obj)
    obj.get("metadata", {}).pop("resourceVersion", None)
    return obj


def status_body(code: int, reason: str, message: str) -> JSON:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class Route:
    """A parsed API path: collection, optional namespace and object name."""

    def __init__(self, kind: Kind, namespace: str | None, name: str | None) -> None:
        self.kind = kind
        self.namespace = namespace
        self.name = name


def parse_path(path: str) -> Route | None:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        rest, gv = parts[2:], "v1"
    elif len(parts) >= 3 and parts[0] == "apis":
        rest, gv = parts[3:], f"{parts[1]}/{parts[2]}"
    else:
        return None
    namespace: str | None = None
    # /api/v1/namespaces/{ns}/services[/{name}] (but /api/v1/namespaces[/{name}] is the collection)
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 2:
        return None
    kind = KINDS.get(rest[0])
    if kind is None or kind.group_version != gv:
        return None
    if namespace is not None and not kind.namespaced:
        return None
    return Route(kind, namespace, rest[1] if len(rest) == 2 else None)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StubServer

    # -- plumbing

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            sys.stderr.write("core-stub: " + (format % args) + "\n")

    def _send_json(self, code: int, body: JSON) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _read_json(self) -> JSON:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        body = json.loads(raw or b"{}")
        if not isinstance(body, dict):
            raise ValueError("body must be a JSON object")
        return body

    def _split(self) -> tuple[str, dict[str, str]]:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        return parts.path, query

    # -- verbs

    def do_GET(self) -> None:
        path, query = self._split()
        if path == "/_stub/healthz":
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        route = parse_path(path)
        if route is None:
            self._send_json(404, status_body(404, "NotFound", f"the server could not find {path}"))
            return
        store = self.server.store
        if route.name is not None:
            obj = store.get(route.kind.name, route.namespace or "default", route.name)
            if obj is None:
                self._send_json(
                    404, status_body(404, "NotFound", f'{route.kind.name} "{route.name}" not found')
                )
            else:
                self._send_json(200, obj)
            return
        if query.get("watch") in ("true", "1"):
            self._watch(route, query)
            return
        items, rv = store.list_objects(route.kind.name, route.namespace)
        self._send_json(
            200,
            {
                "apiVersion": route.kind.group_version,
                "kind": route.kind.kind + "List",
                "metadata": {"resourceVersion": str(rv)},
                "items": items,
            },
        )

    def do_POST(self) -> None:
        path, _ = self._split()
        route = parse_path(path)
        if route is None or route.name is not None:
            self._send_json(405, status_body(405, "MethodNotAllowed", f"POST {path} is not supported"))
            return
        try:
            body = self._read_json()
            if route.namespace is not None:
                body.setdefault("metadata", {})["namespace"] = route.namespace
            stored, _ = self.server.store.put(route.kind.name, body, create_only=True)
        except FileExistsError as exc:
            message = f'{route.kind.name} "{exc}" already exists'
            self._send_json(409, status_body(409, "AlreadyExists", message))
            return
        except ValueError as exc:
            self._send_json(422, status_body(422, "Invalid", str(exc)))
            return
        self._send_json(201, stored)

    def do_PUT(self) -> None:
        path, query = self._split()
        if path.startswith("/_stub/collections/"):
            self._control_replace(path.rsplit("/", 1)[-1], query)
            return
        route = parse_path(path)
        if route is None or route.name is None:
            self._send_json(404, status_body(404, "NotFound", f"PUT {path} is not supported"))
            return
        try:
            body = self._read_json()
            meta = body.setdefault("metadata", {})
            meta["name"] = route.name
            if route.namespace is not None:
                meta["namespace"] = route.namespace
            stored, created = self.server.store.put(route.kind.name, body)
        except ValueError as exc:
            self._send_json(422, status_body(422, "Invalid", str(exc)))
            return
        self._send_json(201 if created else 200, stored)

    def do_DELETE(self) -> None:
        path, _ = self._split()
        route = parse_path(path)
        if route is None or route.name is None:
            self._send_json(404, status_body(404, "NotFound", f"DELETE {path} is not supported"))
            return
        gone = self.server.store.delete(route.kind.name, route.namespace or "default", route.name)
        if gone is None:
            self._send_json(404, status_body(404, "NotFound", f'{route.kind.name} "{route.name}" not found'))
        else:
            self._send_json(200, gone)

    # -- control

    def _control_replace(self, name: str, query: dict[str, str]) -> None:
        if name not in KINDS:
            self._send_json(404, {"error": f"unknown collection {name!r}", "known": sorted(KINDS)})
            return
        try:
            body = self._read_json()
            items = body.get("items")
            if not isinstance(items, list):
                raise ValueError("'items' must be a list")
            rv = self.server.store.replace_all(name, items)
        except (ValueError, json.JSONDecodeError) as exc:
            self._send_json(400, {"error": str(exc)})
            return
        wait = float(query.get("wait", "0") or 0)
        delivered, behind = self.server.store.wait_delivered(name, rv, wait) if wait > 0 else (0, 0)
        self._send_json(
            200, {"resourceVersion": str(rv), "watchersUpdated": delivered, "watchersBehind": behind}
        )

    # -- watch

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, route: Route, query: dict[str, str]) -> None:
        store = self.server.store
        name = route.kind.name
        timeout = float(query.get("timeoutSeconds") or self.server.max_watch_seconds)
        timeout = min(timeout, self.server.max_watch_seconds)
        deadline = time.monotonic() + timeout
        initial = query.get("sendInitialEvents") == "true"
        with store.cond:
            try:
                if initial:
                    items, current = store.list_objects(name, route.namespace)
                    start_rv = current
                else:
                    items = []
                    asked = query.get("resourceVersion") or ""
                    start_rv = int(asked) if asked not in ("", "0") else store.rv
                    store.events_after(name, start_rv, route.namespace)  # raises Gone if too old
            except Gone as exc:
                self._send_json(410, status_body(410, "Expired", str(exc)))
                return
            except ValueError:
                self._send_json(400, status_body(400, "BadRequest", "invalid resourceVersion"))
                return
            wid = store.register_watcher(name, start_rv)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            sent = start_rv
            if initial:
                for obj in items:
                    self._write_chunk(json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n")
                bookmark = {
                    "type": "BOOKMARK",
                    "object": {
                        "apiVersion": route.kind.group_version,
                        "kind": route.kind.kind,
                        "metadata": {
                            "resourceVersion": str(start_rv),
                            "annotations": {"k8s.io/initial-events-end": "true"},
                        },
                    },
                }
                self._write_chunk(json.dumps(bookmark).encode() + b"\n")
            store.advance_watcher(wid, start_rv)
            while not self.server.stopping.is_set():
                with store.cond:
                    if store.rv == sent:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        store.cond.wait(min(left, 1.0))
                        if store.rv == sent:
                            continue  # woken without a write: nothing to look at
                    # Read under the lock: ``pending`` is everything of this watch up to ``top``.
                    pending = store.events_after(name, sent, route.namespace)
                    top = store.rv
                for _, etype, obj in pending:
                    self._write_chunk(json.dumps({"type": etype, "object": obj}).encode() + b"\n")
                sent = top
                store.advance_watcher(wid, sent)
            self._write_chunk(b"")
        except Gone:
            pass  # history rolled over while watching; the client re-lists
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            store.drop_watcher(wid)
            self.close_connection = True


class StubServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], *, verbose: bool = False, max_watch_seconds: float = 600.0
    ) -> None:
        super().__init__(address, Handler)
        self.store = Store()
        self.verbose = verbose
        self.max_watch_seconds = max_watch_seconds
        self.stopping = threading.Event()

    def shutdown(self) -> None:
        self.stopping.set()
        with self.store.cond:
            self.store.cond.notify_all()
        super().shutdown()


@contextlib.contextmanager
def serve(host: str = "127.0.0.1", port: int = 0, verbose: bool = False) -> Iterator[StubServer]:
    """Run a stub in a background thread (for in-process use); yields the server."""
    server = StubServer((host, port), verbose=verbose)
    thread = threading.Thread(target=server.serve_forever, name="core-stub", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    server = StubServer((args.host, args.port), verbose=args.verbose)
    print(f"listening on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
