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

This module is the server's routing and verbs; its parts are beside it: ``fakekube_store`` (the served
resources and the objects with their event log), ``fakekube_selectors``, ``fakekube_patches``,
``fakekube_errors``, ``fakekube_faults`` (injection and the request log), ``fakekube_http`` (handler and
server), ``fake_pki``, and ``fakekube_builders`` (the objects tests compose clusters from).
"""

from __future__ import annotations

import base64
import copy
import os
import re
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.support.fake_pki import fake_pki
from tests.support.fakekube_errors import ApiError
from tests.support.fakekube_faults import Faults, RequestRecord
from tests.support.fakekube_http import STREAMED, Handler, Route, Server
from tests.support.fakekube_patches import json_patch, merge_patch
from tests.support.fakekube_selectors import dotted, field_selector_matches, label_selector_matches
from tests.support.fakekube_store import Resource, Store, WatchEvent, conflict, default_resources, not_found

Obj = dict[str, Any]

_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "unsupported",
}


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
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        for ns in namespaces:
            self.store.create("namespaces", {"metadata": {"name": ns}})

    # lifecycle
    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self.stopping.clear()
        self._server = Server((host, port), Handler)
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
        handler: Handler,
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
                    return 200, STREAMED
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
                raise not_found(res, route.name or "")
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
        body_rv = dotted(body, "metadata.resourceVersion") if isinstance(body, dict) else None
        if kind == "json":
            body_rv = dotted(patched, "metadata.resourceVersion")
            if body_rv == current["metadata"]["resourceVersion"]:
                body_rv = None
        if body_rv and body_rv != current["metadata"]["resourceVersion"]:
            raise conflict(res, route.name or "")
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

    def _watch(self, route: Route, q: dict[str, str], handler: Handler) -> None:
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
        rv = dotted(wanted, "metadata.resourceVersion")
        if method == "PUT" and rv and rv != current["metadata"]["resourceVersion"]:
            raise conflict(res, route.name)
        replicas = dotted(wanted, "spec.replicas")
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
