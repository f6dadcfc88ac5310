"""FakeKube's data: the resources it serves, its API errors, and the store of objects with one
resourceVersion counter and a bounded event log for watches."""

from __future__ import annotations

import copy
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.support.fakekube_errors import ApiError
from tests.support.fakekube_selectors import field_selector_matches, label_selector_matches

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


def not_found(res: Resource, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{res.key} "{name}" not found',
        {"name": name, "group": res.group, "kind": res.plural},
    )


def conflict(res: Resource, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res.key} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        {"name": name, "group": res.group, "kind": res.plural},
    )


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
                raise not_found(res, name)
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
                raise not_found(res, meta.get("name", ""))
            rv = meta.get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, key[2])
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
                raise not_found(res, name)
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
                raise ApiError(409, "Conflict", f"Precondition failed: UID in precondition: {pre['uid']}")
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)
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
