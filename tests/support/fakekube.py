"""A small, stateful Kubernetes API server over real HTTP, for tests of code that talks through the
official client.

Why our own: the real API server built for the tests (tests/support/realapi.py) serves only CRDs, and
kmock lacks resourceVersion concurrency, status isolation and label selectors (research/test_infra.md
§2). This fake serves what a member cluster and the control plane's core API need (discovery, core/v1,
apps/v1 with /scale, autoscaling/v2 and v2beta2 HPAs, coordination.k8s.io/v1 Leases, extra kinds with a
scale subresource) with the semantics our code relies on:

- a global resourceVersion; a write carrying a stale one gets 409 Conflict, a duplicate create 409
  AlreadyExists; creates answer 201;
- labelSelector and simple fieldSelector filtering;
- watch from a resourceVersion, 410 Expired (as an ERROR event) for one older than the retained
  history, bookmarks when asked, the stream closed after timeoutSeconds;
- JSON merge patch, JSON patch (RFC 6902), strategic merge (approximated as merge patch) and
  server-side apply (approximated as a merge patch, the field manager recorded in managedFields);
- status isolation: writes to the main resource keep status, writes to /status change only status;
  metadata.generation moves with spec changes;
- fault injection: ``faults.add(...)`` makes the next N requests matching a method and path regex answer
  with a status, stall, or drop the connection; ``vanish()`` makes the whole server stop answering.

Approximations, on purpose: no admission, no defaulting beyond metadata, no pagination, no controllers
(tests set pods' and Deployments' status through ``store``), apply never reports field conflicts.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import json
import os
import re
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

Obj = dict[str, Any]


# --- resource table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resource:
    """One served resource type. ``scale`` maps the /scale subresource onto the object."""

    group: str  # "" for core
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    status: bool = False
    scale: bool = False
    short_names: tuple[str, ...] = ()
    # extra served versions of the same storage (autoscaling v2beta2 next to v2)
    also_versions: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str | None = None) -> str:
        version = version or self.version
        return f"{self.group}/{version}" if self.group else version

    def versions(self) -> tuple[str, ...]:
        return (self.version, *self.also_versions)


def default_resources(hpa_versions: tuple[str, ...] = ("v2",)) -> list[Resource]:
    hpa_main, *hpa_more = hpa_versions
    return [
        Resource("", "v1", "namespaces", "Namespace", namespaced=False, status=True, short_names=("ns",)),
        Resource("", "v1", "nodes", "Node", namespaced=False, status=True, short_names=("no",)),
        Resource("", "v1", "pods", "Pod", status=True, short_names=("po",)),
        Resource("", "v1", "secrets", "Secret"),
        Resource("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
        Resource("", "v1", "events", "Event", short_names=("ev",)),
        Resource("", "v1", "resourcequotas", "ResourceQuota", status=True, short_names=("quota",)),
        Resource("apps", "v1", "deployments", "Deployment", status=True, scale=True, short_names=("deploy",)),
        Resource("apps", "v1", "statefulsets", "StatefulSet", status=True, scale=True, short_names=("sts",)),
        Resource(
            "autoscaling",
            hpa_main,
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            status=True,
            short_names=("hpa",),
            also_versions=tuple(hpa_more),
        ),
        Resource("coordination.k8s.io", "v1", "leases", "Lease"),
        Resource("events.k8s.io", "v1", "events", "Event", short_names=("ev",)),
    ]


# --- errors -----------------------------------------------------------------------------------------


class ApiError(Exception):
    """An HTTP error answer with a metav1.Status body."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _not_found(res: Resource, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{res.key} "{name}" not found',
        {"name": name, "group": res.group, "kind": res.plural},
    )


def _conflict(res: Resource, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res.key} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        {"name": name, "group": res.group, "kind": res.plural},
    )


# --- selectors --------------------------------------------------------------------------------------

_TERM_COMMA = re.compile(r",(?![^(]*\))")
_SET_RE = re.compile(r"^\s*(!?)([\w./-]+)\s*(?:(in|notin)\s*\(([^)]*)\)|(==|=|!=)\s*([\w./-]*))?\s*$")


def _split_selector(text: str) -> list[str]:
    """Split on commas that are not inside parentheses (a comma before the next ")" is inside a set)."""
    parts = _TERM_COMMA.split(text)
    if not parts[-1].strip():
        parts.pop()
    return parts


def label_selector_matches(selector: str | None, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector syntax: ``a=b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``."""
    if not selector:
        return True
    for term in _split_selector(selector):
        m = _SET_RE.match(term)
        if not m:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")
        neg, key, setop, values, op, value = m.groups()
        if setop:
            allowed = {v.strip() for v in values.split(",") if v.strip()}
            inside = key in labels and labels[key] in allowed
            if (setop == "in") != inside:
                return False
        elif op:
            equal = labels.get(key) == value
            if op == "!=" and equal:
                return False
            if op != "!=" and (key not in labels or not equal):
                return False
        elif bool(neg) == (key in labels):
            return False
    return True


def _dotted(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def field_selector_matches(selector: str | None, obj: Obj) -> bool:
    """``metadata.name=x``, ``spec.nodeName=n``, ``status.phase!=Failed``, comma-separated (AND)."""
    if not selector:
        return True
    for term in selector.split(","):
        m = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise ApiError(400, "BadRequest", f"invalid field selector: {term!r}")
        path, op, value = m.groups()
        actual = _dotted(obj, path)
        actual = "" if actual is None else str(actual)
        if (actual == value) == (op == "!="):
            return False
    return True


# --- patches ----------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve_parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    cur = doc
    for part in parts[:-1]:
        if isinstance(cur, list):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            raise ApiError(422, "Invalid", f"path /{'/'.join(parts)} does not exist")
    return cur, parts[-1]


def _json_get(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for part in parts:
        try:
            cur = cur[int(part)] if isinstance(cur, list) else cur[part]
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, "Invalid", f"path /{'/'.join(parts)} does not exist") from exc
    return cur


def _json_remove(doc: Any, parts: list[str]) -> Any:
    parent, last = _resolve_parent(doc, parts)
    try:
        return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)
    except (KeyError, IndexError, ValueError) as exc:
        raise ApiError(422, "Invalid", f"path /{'/'.join(parts)} does not exist") from exc


def _json_add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return copy.deepcopy(value)
    parent, last = _resolve_parent(doc, parts)
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if index > len(parent):
            raise ApiError(422, "Invalid", f"index {index} out of range")
        parent.insert(index, copy.deepcopy(value))
    elif isinstance(parent, dict):
        parent[last] = copy.deepcopy(value)
    else:
        raise ApiError(422, "Invalid", f"cannot add at /{'/'.join(parts)}")
    return doc


def json_patch(doc: Any, ops: list[Obj]) -> Any:
    """RFC 6902 JSON patch: add, remove, replace, move, copy, test."""
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        if kind == "add":
            doc = _json_add(doc, parts, op.get("value"))
        elif kind == "remove":
            _json_remove(doc, parts)
        elif kind == "replace":
            _json_get(doc, parts)
            if not parts:
                doc = copy.deepcopy(op.get("value"))
            else:
                parent, last = _resolve_parent(doc, parts)
                parent[int(last) if isinstance(parent, list) else last] = copy.deepcopy(op.get("value"))
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = _json_remove(doc, src) if kind == "move" else copy.deepcopy(_json_get(doc, src))
            doc = _json_add(doc, parts, value)
        elif kind == "test":
            if _json_get(doc, parts) != op.get("value"):
                raise ApiError(422, "Invalid", f"test failed at {op.get('path')}")
        else:
            raise ApiError(422, "Invalid", f"unknown JSON patch op {kind!r}")
    return doc


# --- store ------------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class WatchEvent:
    rv: int
    resource: str  # Resource.key
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj
    prior: Obj | None = None  # the object before a MODIFIED: a selector watch turns it into ADDED/DELETED


class Store:
    """Objects by (resource key, namespace, name), one resourceVersion counter, a bounded event log.

    Every method is thread-safe and is what the HTTP layer calls, so a test that writes through the store
    is seen by watchers like a write over HTTP.
    """

    def __init__(self, resources: list[Resource], history: int = 1000) -> None:
        self.resources = resources
        self._by_key = {r.key: r for r in resources}
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._rv = 1
        self._log: list[WatchEvent] = []
        self._history = history
        self._oldest = 1  # the oldest resourceVersion a watch may start from
        self.cond = threading.Condition()

    # resource lookup
    def resource(self, name: str) -> Resource:
        """A resource by key (``deployments.apps``), plural (``deployments``) or kind (``Deployment``)."""
        if name in self._by_key:
            return self._by_key[name]
        matches = [r for r in self.resources if name in (r.plural, r.kind)]
        if not matches:
            raise KeyError(f"no resource {name!r}")
        return matches[0]

    def add_resource(self, res: Resource) -> None:
        with self.cond:
            self.resources.append(res)
            self._by_key[res.key] = res

    @property
    def resource_version(self) -> int:
        with self.cond:
            return self._rv

    def compact(self) -> None:
        """Forget the event history: a watch from any earlier resourceVersion now gets 410."""
        with self.cond:
            self._log.clear()
            self._oldest = self._rv

    # reads
    def get(self, resource: str, namespace: str | None, name: str) -> Obj:
        res = self.resource(resource)
        with self.cond:
            obj = self._objects.get((res.key, namespace or "", name))
            if obj is None:
                raise _not_found(res, name)
            return copy.deepcopy(obj)

    def find(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        try:
            return self.get(resource, namespace, name)
        except ApiError:
            return None

    def list_objects(
        self,
        resource: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[Obj], int]:
        res = self.resource(resource)
        with self.cond:
            items = [
                copy.deepcopy(o)
                for (key, ns, _), o in sorted(self._objects.items())
                if key == res.key
                and (namespace is None or ns == namespace)
                and label_selector_matches(label_selector, o["metadata"].get("labels") or {})
                and field_selector_matches(field_selector, o)
            ]
            return items, self._rv

    # writes
    def _bump(self, res: Resource, type_: str, obj: Obj, prior: Obj | None = None) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self._log.append(WatchEvent(self._rv, res.key, type_, copy.deepcopy(obj), copy.deepcopy(prior)))
        if len(self._log) > self._history:
            dropped = self._log.pop(0)
            self._oldest = dropped.rv
        self.cond.notify_all()

    def _check_namespace(self, res: Resource, namespace: str | None) -> str:
        if not res.namespaced:
            return ""
        if not namespace:
            raise ApiError(400, "BadRequest", f"{res.key} is namespaced: a namespace is required")
        if ("namespaces", "", namespace) not in self._objects:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
        return namespace

    def create(
        self,
        resource: str,
        obj: Obj,
        namespace: str | None = None,
        manager: str | None = None,
        operation: str = "Update",
    ) -> Obj:
        res = self.resource(resource)
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        with self.cond:
            ns = self._check_namespace(res, namespace or meta.get("namespace"))
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            name = meta.get("name")
            if not name:
                raise ApiError(422, "Invalid", "metadata.name: Required value")
            if (res.key, ns, name) in self._objects:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{res.key} "{name}" already exists',
                    {"name": name, "group": res.group, "kind": res.plural},
                )
            if ns:
                meta["namespace"] = ns
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
            meta.pop("resourceVersion", None)
            obj["apiVersion"], obj["kind"] = res.api_version(), res.kind
            if manager:
                meta["managedFields"] = [{"manager": manager, "operation": operation, "time": _now()}]
            self._objects[(res.key, ns, name)] = obj
            self._bump(res, "ADDED", obj)
            return copy.deepcopy(obj)

    def update(
        self,
        resource: str,
        obj: Obj,
        namespace: str | None = None,
        subresource: str | None = None,
        manager: str | None = None,
        operation: str = "Update",
    ) -> Obj:
        """Replace an object (PUT semantics): a resourceVersion in ``obj`` must be the current one."""
        res = self.resource(resource)
        meta = obj.get("metadata") or {}
        with self.cond:
            ns = "" if not res.namespaced else (namespace or meta.get("namespace") or "")
            key = (res.key, ns, meta.get("name", ""))
            old = self._objects.get(key)
            if old is None:
                raise _not_found(res, meta.get("name", ""))
            rv = meta.get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise _conflict(res, key[2])
            new = self._merge_for_write(res, old, obj, subresource)
            if new == old:
                return copy.deepcopy(old)  # a no-op write does not bump the resourceVersion
            if manager:
                fields = [m for m in new["metadata"].get("managedFields", []) if m.get("manager") != manager]
                fields.append({"manager": manager, "operation": operation, "time": _now()})
                new["metadata"]["managedFields"] = fields
            self._objects[key] = new
            self._bump(res, "MODIFIED", new, old)
            return copy.deepcopy(new)

    def _merge_for_write(self, res: Resource, old: Obj, obj: Obj, subresource: str | None) -> Obj:
        """Status isolation and server-owned metadata, as the real server enforces them."""
        new = copy.deepcopy(old)
        if subresource == "status":
            if "status" in obj:
                new["status"] = copy.deepcopy(obj["status"])
            else:
                new.pop("status", None)
            return new
        new = {k: copy.deepcopy(v) for k, v in obj.items() if not (res.status and k == "status")}
        if res.status and "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        meta = new.setdefault("metadata", {})
        for kept in ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp"):
            if kept in old["metadata"]:
                meta[kept] = old["metadata"][kept]
            else:
                meta.pop(kept, None)
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        if "spec" in new and new.get("spec") != old.get("spec"):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        return new

    def delete(
        self, resource: str, namespace: str | None, name: str, preconditions: Obj | None = None
    ) -> Obj:
        """Delete now, or set deletionTimestamp when finalizers remain (removed when they are cleared)."""
        res = self.resource(resource)
        with self.cond:
            key = (res.key, (namespace or "") if res.namespaced else "", name)
            old = self._objects.get(key)
            if old is None:
                raise _not_found(res, name)
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
                raise ApiError(409, "Conflict", f"Precondition failed: UID in precondition: {pre['uid']}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise _conflict(res, name)
            if old["metadata"].get("finalizers"):
                if not old["metadata"].get("deletionTimestamp"):
                    prior = copy.deepcopy(old)
                    old["metadata"]["deletionTimestamp"] = _now()
                    self._bump(res, "MODIFIED", old, prior)
                return copy.deepcopy(old)
            del self._objects[key]
            self._bump(res, "DELETED", old)
            return copy.deepcopy(old)

    def _reap(self, res: Resource, key: tuple[str, str, str]) -> None:
        obj = self._objects.get(key)
        if obj and obj["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers"):
            del self._objects[key]
            self._bump(res, "DELETED", obj)

    def write(self, resource: str, obj: Obj, subresource: str | None = None, **kw: Any) -> Obj:
        """Update, and remove an object being deleted once its last finalizer is gone."""
        res = self.resource(resource)
        out = self.update(resource, obj, subresource=subresource, **kw)
        with self.cond:
            meta = out["metadata"]
            self._reap(res, (res.key, meta.get("namespace", ""), meta["name"]))
        return out

    def set_status(self, resource: str, namespace: str | None, name: str, status: Obj) -> Obj:
        """Test helper: replace an object's status as a controller would."""
        obj = self.get(resource, namespace, name)
        obj["status"] = status
        obj["metadata"].pop("resourceVersion", None)
        return self.update(resource, obj, namespace, subresource="status")

    def put(self, resource: str, obj: Obj, namespace: str | None = None) -> Obj:
        """Test helper: create, or replace unconditionally (status included)."""
        meta = obj.get("metadata", {})
        existing = self.find(resource, namespace or meta.get("namespace"), meta.get("name", ""))
        if existing is None:
            created = self.create(resource, obj, namespace)
            if "status" in obj and self.resource(resource).status:
                return self.set_status(
                    resource, created["metadata"].get("namespace"), meta["name"], obj["status"]
                )
            return created
        body = copy.deepcopy(obj)
        body.setdefault("metadata", {}).pop("resourceVersion", None)
        out = self.update(resource, body, namespace)
        if "status" in obj and self.resource(resource).status:
            return self.set_status(resource, out["metadata"].get("namespace"), meta["name"], obj["status"])
        return out

    def events_since(self, rv: int) -> list[WatchEvent]:
        """Events after ``rv``; raises ApiError(410) when ``rv`` is older than the retained history."""
        with self.cond:
            if rv < self._oldest:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({self._oldest})")
            return [e for e in self._log if e.rv > rv]


# --- faults -----------------------------------------------------------------------------------------


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


# --- HTTP -------------------------------------------------------------------------------------------

_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "unsupported",
}


@dataclass
class Route:
    res: Resource
    version: str
    namespace: str | None
    name: str | None
    subresource: str | None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read fake.requests instead

    # entry points
    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        fake = self.server.fake
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        raw = self._read_body()
        record = RequestRecord(method, url.path, query, self.headers.get("Content-Type"), None)
        record.headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
        record.headers["authorization"] = "<present>" if self.headers.get("Authorization") else ""
        record.client_cn = _peer_common_name(self.connection)
        fake.record(record)
        if fake.faults.vanished:
            self._misbehave(fake.faults.vanished, fake.stall_seconds)
            return
        fault = fake.faults.take(method, url.path)
        if fault is not None and fault.action != "status":
            self._misbehave(fault.action, fault.seconds)
            return
        try:
            if fault is not None:
                raise ApiError(
                    fault.status, _reason_for(fault.status), f"injected fault: HTTP {fault.status}"
                )
            body = self._decode(raw)
            record.body = body
            status, payload = fake.dispatch(
                method, url.path, query, body, self.headers.get("Content-Type"), self
            )
        except ApiError as err:
            status, payload = err.code, err.status()
        except Exception as exc:  # a bug in the fake must show as a 500, never hang the client
            status, payload = 500, ApiError(500, "InternalError", f"fake API server error: {exc!r}").status()
        record.status = status
        if payload is _STREAMED:
            return
        self._send_json(status, payload)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _decode(self, raw: bytes) -> Any:
        if not raw:
            return None
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        try:
            if ctype.endswith("yaml"):
                return yaml.safe_load(raw)
            return json.loads(raw)
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiError(400, "BadRequest", f"request body is not valid {ctype or 'JSON'}: {exc}") from exc

    def _misbehave(self, action: str, seconds: float) -> None:
        if action == "stall":
            self.server.fake.stopping.wait(seconds)
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(2)

    def _send_json(self, status: int, payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        ctype = "text/plain" if isinstance(payload, bytes) else "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    # streaming (watch)
    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, event: Obj) -> bool:
        data = json.dumps(event).encode() + b"\n"
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except OSError:
            return False
        return True

    def end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True


def _reason_for(status: int) -> str:
    return {
        400: "BadRequest",
        401: "Unauthorized",
        403: "Forbidden",
        404: "NotFound",
        409: "Conflict",
        410: "Expired",
        422: "Invalid",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        504: "Timeout",
    }.get(status, "Unknown")


_STREAMED = object()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeKube

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (timeouts, dropped faults) is expected here; keep test output clean."""


class FakeKube:
    """An in-process fake API server. ``start()`` returns its URL; ``store`` holds the objects;
    ``faults`` injects failures; ``requests`` lists what was asked (Authorization redacted).

    >>> fake = FakeKube(); url = fake.start(); ...; fake.stop()
    """

    def __init__(
        self,
        hpa_versions: tuple[str, ...] = ("v2",),
        namespaces: tuple[str, ...] = ("default", "kube-system"),
        history: int = 1000,
        watch_max_seconds: float = 30.0,
        bookmark_seconds: float = 1.0,
        stall_seconds: float = 30.0,
        git_version: str = "v1.31.0-fake",
        tls: bool = False,
    ) -> None:
        self.store = Store(default_resources(hpa_versions), history=history)
        self.tls = tls  # serve HTTPS with a test CA; client certificates are accepted and recorded
        self._tls_dir: tempfile.TemporaryDirectory[str] | None = None
        self.faults = Faults()
        self.requests: list[RequestRecord] = []
        self.watch_max_seconds = watch_max_seconds
        self.bookmark_seconds = bookmark_seconds
        self.stall_seconds = stall_seconds
        self.git_version = git_version
        self.ready = True  # /readyz answers 200 when True, 500 otherwise
        self.stopping = threading.Event()
        self._requests_lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        for ns in namespaces:
            self.store.create("namespaces", {"metadata": {"name": ns}})

    # lifecycle
    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self.stopping.clear()
        self._server = _Server((host, port), _Handler)
        self._server.fake = self
        if self.tls:
            self._server.socket = self._server_tls_context().wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fakekube", daemon=True
        )
        self._thread.start()
        return self.url

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeKube is not started"
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host!s}:{port}"

    def _server_tls_context(self) -> ssl.SSLContext:
        pki = fake_pki()
        self._tls_dir = tempfile.TemporaryDirectory(prefix="fakekube-")
        cert, key = os.path.join(self._tls_dir.name, "tls.crt"), os.path.join(self._tls_dir.name, "tls.key")
        with open(cert, "wb") as fh:
            fh.write(pki.server_cert)
        with open(key, "wb") as fh:
            fh.write(pki.server_key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.verify_mode = ssl.CERT_OPTIONAL
        context.load_verify_locations(cadata=pki.ca_cert.decode())
        return context

    def stop(self) -> None:
        self.stopping.set()
        with self.store.cond:
            self.store.cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._tls_dir is not None:
            self._tls_dir.cleanup()
            self._tls_dir = None

    def __enter__(self) -> FakeKube:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def vanish(self, stall: bool = False) -> None:
        """Stop answering: every request (and open watch) is dropped, or stalls when ``stall``."""
        self.faults.vanished = "stall" if stall else "drop"
        with self.store.cond:
            self.store.cond.notify_all()

    def reappear(self) -> None:
        self.faults.vanished = None

    def kubeconfig(
        self, token: str = "fake-token", cluster: str = "fake", client_cert: bool = False
    ) -> dict[str, Any]:
        """A kubeconfig (as a dict) that reaches this server with a bearer token, or with the test CA's
        client certificate when ``client_cert`` (TLS only). Over TLS it carries the CA as data."""
        b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
        server: Obj = {"server": self.url}
        user: Obj = {"token": token}
        if self.tls:
            pki = fake_pki()
            server["certificate-authority-data"] = b64(pki.ca_cert)
            if client_cert:
                user = {
                    "client-certificate-data": b64(pki.client_cert),
                    "client-key-data": b64(pki.client_key),
                }
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster, "cluster": server}],
            "users": [{"name": cluster, "user": user}],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
            "current-context": cluster,
        }

    def add_scalable_kind(self, group: str, version: str, plural: str, kind: str) -> Resource:
        """Serve a custom kind with status and scale subresources (a stand-in for any scalable workload)."""
        res = Resource(group, version, plural, kind, status=True, scale=True)
        self.store.add_resource(res)
        return res

    def record(self, req: RequestRecord) -> None:
        with self._requests_lock:
            self.requests.append(req)

    def requests_matching(self, method: str, path_regex: str) -> list[RequestRecord]:
        with self._requests_lock:
            return [r for r in self.requests if r.method == method and re.search(path_regex, r.path)]

    # dispatch
    def dispatch(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: Any,
        ctype: str | None,
        handler: _Handler,
    ) -> tuple[int, Any]:
        path = path.rstrip("/") or "/"
        if path in ("/readyz", "/healthz", "/livez"):
            return (200, b"ok") if self.ready else (500, b"[-]fake not ready\nreadyz check failed")
        if path == "/version":
            return 200, {
                "major": "1",
                "minor": "31",
                "gitVersion": self.git_version,
                "platform": "linux/amd64",
            }
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            return 200, self._group_list()
        route = self._route(path)
        if route is None:
            discovery = self._discovery(path)
            if discovery is not None:
                return 200, discovery
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        q = {k: v[-1] for k, v in query.items()}
        if route.subresource == "scale":
            return self._scale(method, route, body)
        if method == "GET":
            if route.name is None:
                if q.get("watch") in ("true", "1"):
                    self._watch(route, q, handler)
                    return 200, _STREAMED
                return self._list(route, q)
            return 200, self._out(route, self.store.get(route.res.key, route.namespace, route.name))
        if method == "POST" and route.name is None:
            obj = self._body_object(body)
            if route.namespace:
                obj.setdefault("metadata", {})["namespace"] = route.namespace
            return 201, self._out(
                route, self.store.create(route.res.key, obj, route.namespace, q.get("fieldManager"))
            )
        if method == "PUT" and route.name is not None:
            obj = self._body_object(body)
            self._check_name(route, obj)
            sub = route.subresource
            return 200, self._out(
                route, self.store.write(route.res.key, obj, sub, manager=q.get("fieldManager"))
            )
        if method == "PATCH" and route.name is not None:
            return self._patch(route, body, ctype, q)
        if method == "DELETE" and route.name is not None:
            pre = (body or {}).get("preconditions") if isinstance(body, dict) else None
            return 200, self._out(route, self.store.delete(route.res.key, route.namespace, route.name, pre))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {path}")

    def _body_object(self, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body must be an object")
        return copy.deepcopy(body)

    def _check_name(self, route: Route, obj: Obj) -> None:
        meta = obj.setdefault("metadata", {})
        if meta.get("name") not in (None, route.name):
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        meta["name"] = route.name
        if route.namespace:
            if meta.get("namespace") not in (None, route.namespace):
                raise ApiError(400, "BadRequest", "the namespace of the object does not match the URL")
            meta["namespace"] = route.namespace

    def _out(self, route: Route, obj: Obj) -> Obj:
        """Present the object in the API version the request used (v2 and v2beta2 share storage)."""
        obj["apiVersion"] = route.res.api_version(route.version)
        return obj

    def _patch(self, route: Route, body: Any, ctype: str | None, q: dict[str, str]) -> tuple[int, Any]:
        kind = _PATCH_TYPES.get((ctype or "").split(";")[0].strip())
        if kind in (None, "unsupported"):
            raise ApiError(
                415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {ctype}"
            )
        res = route.res
        current = self.store.find(res.key, route.namespace, route.name or "")
        if current is None:
            if kind != "apply":
                raise _not_found(res, route.name or "")
            manager = q.get("fieldManager")
            if not manager:
                raise ApiError(400, "BadRequest", "PATCH with apply-patch+yaml requires fieldManager")
            obj = self._body_object(body)
            self._check_name(route, obj)
            return 201, self._out(route, self.store.create(res.key, obj, route.namespace, manager, "Apply"))
        if kind == "json":
            if not isinstance(body, list):
                raise ApiError(400, "BadRequest", "a JSON patch must be a list of operations")
            patched = json_patch(current, body)
        else:
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "a merge patch must be an object")
            if kind == "apply" and not q.get("fieldManager"):
                raise ApiError(400, "BadRequest", "PATCH with apply-patch+yaml requires fieldManager")
            patched = merge_patch(current, body)
        # a resourceVersion in the patch is a precondition; without one it patches the current object
        body_rv = _dotted(body, "metadata.resourceVersion") if isinstance(body, dict) else None
        if kind == "json":
            body_rv = _dotted(patched, "metadata.resourceVersion")
            if body_rv == current["metadata"]["resourceVersion"]:
                body_rv = None
        if body_rv and body_rv != current["metadata"]["resourceVersion"]:
            raise _conflict(res, route.name or "")
        patched.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
        operation = "Apply" if kind == "apply" else "Update"
        out = self.store.write(
            res.key, patched, route.subresource, manager=q.get("fieldManager"), operation=operation
        )
        return 200, self._out(route, out)

    def _list(self, route: Route, q: dict[str, str]) -> tuple[int, Any]:
        items, rv = self.store.list_objects(
            route.res.key, route.namespace, q.get("labelSelector"), q.get("fieldSelector")
        )
        for item in items:
            self._out(route, item)
        return 200, {
            "kind": f"{route.res.kind}List",
            "apiVersion": route.res.api_version(route.version),
            "metadata": {"resourceVersion": str(rv)},
            "items": items,
        }

    def _watch(self, route: Route, q: dict[str, str], handler: _Handler) -> None:
        timeout = min(float(q.get("timeoutSeconds") or self.watch_max_seconds), self.watch_max_seconds)
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        rv_text = q.get("resourceVersion") or ""
        deadline = time.monotonic() + timeout
        handler.start_stream()

        def visible(obj: Obj) -> bool:
            meta = obj["metadata"]
            return (route.namespace is None or meta.get("namespace") == route.namespace) and (
                label_selector_matches(q.get("labelSelector"), meta.get("labels") or {})
                and field_selector_matches(q.get("fieldSelector"), obj)
            )

        def send(type_: str, obj: Obj) -> bool:
            return handler.send_chunk({"type": type_, "object": self._out(route, copy.deepcopy(obj))})

        if rv_text in ("", "0") or q.get("sendInitialEvents") == "true":
            items, last = self.store.list_objects(
                route.res.key, route.namespace, q.get("labelSelector"), q.get("fieldSelector")
            )
            if rv_text not in ("", "0"):
                last = int(rv_text)
            for item in items:
                if not send("ADDED", item):
                    return
            if q.get("sendInitialEvents") == "true":
                mark = {
                    "metadata": {
                        "resourceVersion": str(last),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    }
                }
                handler.send_chunk({"type": "BOOKMARK", "object": {"kind": route.res.kind, **mark}})
        else:
            try:
                last = int(rv_text)
            except ValueError:
                handler.send_chunk(
                    {"type": "ERROR", "object": ApiError(400, "BadRequest", "bad rv").status()}
                )
                handler.end_stream()
                return
        next_bookmark = time.monotonic() + self.bookmark_seconds
        while not self.stopping.is_set() and not self.faults.vanished:
            try:
                events = self.store.events_since(last)
            except ApiError as err:
                handler.send_chunk({"type": "ERROR", "object": err.status()})
                break
            for ev in events:
                last = ev.rv
                type_ = _as_seen(ev, visible) if ev.resource == route.res.key else None
                if type_ is not None and not send(type_, ev.obj):
                    return
            now = time.monotonic()
            if now >= deadline:
                break
            if bookmarks and now >= next_bookmark:
                beat: Obj = {"kind": route.res.kind, "apiVersion": route.res.api_version(route.version)}
                beat["metadata"] = {"resourceVersion": str(max(last, 0))}
                if not handler.send_chunk({"type": "BOOKMARK", "object": beat}):
                    return
                next_bookmark = now + self.bookmark_seconds
            with self.store.cond:
                if self.store.resource_version <= last:
                    self.store.cond.wait(min(0.2, max(0.0, deadline - now)))
        if self.faults.vanished:
            handler.close_connection = True
            return
        handler.end_stream()

    def _scale(self, method: str, route: Route, body: Any) -> tuple[int, Any]:
        res = route.res
        if not res.scale or route.name is None:
            raise ApiError(404, "NotFound", f"{res.key} has no scale subresource")
        if method == "GET":
            return 200, _scale_of(self.store.get(res.key, route.namespace, route.name))
        if method not in ("PUT", "PATCH") or not isinstance(body, dict):
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on /scale")
        current = self.store.get(res.key, route.namespace, route.name)
        scale = _scale_of(current)
        wanted = merge_patch(scale, body) if method == "PATCH" else body
        rv = _dotted(wanted, "metadata.resourceVersion")
        if method == "PUT" and rv and rv != current["metadata"]["resourceVersion"]:
            raise _conflict(res, route.name)
        replicas = _dotted(wanted, "spec.replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise ApiError(422, "Invalid", "spec.replicas: must be a non-negative integer")
        current.setdefault("spec", {})["replicas"] = replicas
        return 200, _scale_of(self.store.write(res.key, current))

    # routing
    def _route(self, path: str) -> Route | None:
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace = None
        if (
            rest[0] == "namespaces"
            and len(rest) >= 3
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            namespace, rest = rest[1], rest[2:]
        res = self._served(group, version, rest[0])
        if res is None:
            return None
        if res.namespaced is False and namespace is not None:
            return None
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3 or (sub is not None and sub not in ("status", "scale", "finalize")):
            return None
        if sub == "finalize":
            sub = None
        return Route(res, version, namespace, name, sub)

    def _served(self, group: str, version: str, plural: str) -> Resource | None:
        for res in self.store.resources:
            if res.group == group and res.plural == plural and version in res.versions():
                return res
        return None

    def _group_versions(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for res in self.store.resources:
            if res.group:
                for v in res.versions():
                    if v not in groups.setdefault(res.group, []):
                        groups[res.group].append(v)
        return groups

    def _group_list(self) -> Obj:
        groups = []
        for group, versions in self._group_versions().items():
            vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
            groups.append({"name": group, "versions": vs, "preferredVersion": vs[0]})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def _discovery(self, path: str) -> Obj | None:
        parts = path.strip("/").split("/")
        if parts[0] == "apis" and len(parts) == 2:
            for group in self._group_list()["groups"]:
                if group["name"] == parts[1]:
                    return {"kind": "APIGroup", "apiVersion": "v1", **group}
            return None
        if parts[0] == "api" and len(parts) == 2:
            group, version = "", parts[1]
        elif parts[0] == "apis" and len(parts) == 3:
            group, version = parts[1], parts[2]
        else:
            return None
        served = [r for r in self.store.resources if r.group == group and version in r.versions()]
        if not served:
            return None
        resources = []
        verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
        for r in served:
            entry = {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
            }
            resources.append({**entry, "verbs": verbs, "shortNames": list(r.short_names)})
            if r.status:
                resources.append({**entry, "name": f"{r.plural}/status", "verbs": ["get", "patch", "update"]})
            if r.scale:
                scale = {**entry, "name": f"{r.plural}/scale", "kind": "Scale", "group": "autoscaling"}
                resources.append({**scale, "version": "v1", "verbs": ["get", "patch", "update"]})
        gv = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _as_seen(ev: WatchEvent, visible: Callable[[Obj], bool]) -> str | None:
    """The event a filtered watch shows: an object entering the selector is ADDED, one leaving it is
    DELETED (as the real API server does), one outside it nothing."""
    now = visible(ev.obj)
    if ev.type == "MODIFIED" and ev.prior is not None:
        was = visible(ev.prior)
        if was != now:
            return "ADDED" if now else "DELETED"
    return ev.type if now else None


def _peer_common_name(connection: Any) -> str | None:
    getpeercert = getattr(connection, "getpeercert", None)
    if getpeercert is None:
        return None
    try:
        cert = getpeercert()
    except (ValueError, OSError):
        return None
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


@dataclass(frozen=True)
class FakePKI:
    """PEM material for HTTPS tests: a CA, a server certificate for 127.0.0.1/localhost, a client one."""

    ca_cert: bytes
    server_cert: bytes
    server_key: bytes
    client_cert: bytes
    client_key: bytes


@functools.cache
def fake_pki() -> FakePKI:
    """One test CA per process (EC keys: fast to make)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.now(UTC)

    def name(cn: str, org: str | None = None) -> x509.Name:
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if org:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        return x509.Name(attrs)

    def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("fakekube-ca"))
        .issuer_name(name("fakekube-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(cn: str, org: str | None, usage: x509.ObjectIdentifier, san: bool) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(cn, org))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if san:
            alt = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), pem_key(key)

    server_cert, server_key = leaf("fakekube", None, ExtendedKeyUsageOID.SERVER_AUTH, san=True)
    client_cert, client_key = leaf(
        "fhpa-controller", "system:masters", ExtendedKeyUsageOID.CLIENT_AUTH, san=False
    )
    return FakePKI(
        ca.public_bytes(serialization.Encoding.PEM), server_cert, server_key, client_cert, client_key
    )


def _scale_of(obj: Obj) -> Obj:
    """The autoscaling/v1 Scale of a workload; the selector as the label-selector string."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    selector = spec.get("selector")
    if isinstance(selector, dict):
        text = ",".join(f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items()))
        for expr in selector.get("matchExpressions") or []:
            op = expr["operator"]
            if op in ("In", "NotIn"):
                text += f",{expr['key']} {op.lower()} ({','.join(expr.get('values') or [])})"
            elif op == "Exists":
                text += f",{expr['key']}"
            else:
                text += f",!{expr['key']}"
        selector = text.strip(",")
    elif not isinstance(selector, str):
        selector = status.get("selector")
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": int(spec.get("replicas", 1))},
        "status": {
            "replicas": int(status.get("replicas", 0)),
            **({"selector": selector} if selector else {}),
        },
    }


# --- builders (tests compose clusters from these) ---------------------------------------------------


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    unschedulable: bool = False,
    ready: bool = True,
    taints: list[Obj] | None = None,
    labels: dict[str, str] | None = None,
) -> Obj:
    return {
        "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
        "spec": {"unschedulable": unschedulable, **({"taints": taints} if taints else {})},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    cpu: str | None = "100m",
    memory: str | None = None,
    ready: bool = True,
    unschedulable: bool = False,
    phase: str | None = None,
) -> Obj:
    """A pod as the scheduler and kubelet would leave it: bound and Ready, or Pending and Unschedulable."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    conditions: list[Obj]
    if unschedulable:
        conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
        phase = phase or "Pending"
    else:
        conditions = [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True" if ready else "False"},
        ]
        phase = phase or "Running"
    spec: Obj = {"containers": [{"name": "app", "image": "app", "resources": {"requests": requests}}]}
    if node_name and not unschedulable:
        spec["nodeName"] = node_name
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
        "status": {"phase": phase, "conditions": conditions},
    }


def deployment(
    name: str,
    namespace: str = "default",
    replicas: int = 1,
    labels: dict[str, str] | None = None,
    cpu: str | None = "100m",
    memory: str | None = None,
    kind: str = "Deployment",
) -> Obj:
    labels = labels or {"app": name}
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "app", "image": "app", "resources": {"requests": requests}}]
                },
            },
        },
        "status": {"replicas": replicas},
    }


def cron_federated_hpa(name: str = "c", namespace: str = "default") -> Obj:
    """A CronFederatedHPA with one rule ``r`` that scales Deployment ``web`` to 3 every minute."""
    return {
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "CronFederatedHPA",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "rules": [{"name": "r", "schedule": "* * * * *", "targetReplicas": 3}],
        },
    }


def iter_watch_lines(raw: bytes) -> Iterator[Obj]:
    """Parse a watch body (newline-delimited JSON) into events: for tests that read streams directly."""
    for line in raw.splitlines():
        if line.strip():
            yield json.loads(line)
