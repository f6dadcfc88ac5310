"""The control-plane port (controller.ports.ControlPlane) on the official ``kubernetes`` client.

Every call goes through the raw-request helper of controller.kube.clients (shared with the member
adapter) rather than the generated API classes, for three reasons: the content type of a patch must
be chosen by us (the client labels a JSON Patch list as a merge patch, kubernetes-client/python#2119,
and the server answers 400); the scale subresource of an arbitrary workload kind needs a path the
generated classes do not have for the core group; and every HTTP failure must leave this module as a
controller.errors type (one mapping, api_errors.map_error), never as an ApiException.

Writes that must not clobber a concurrent change carry the resourceVersion they were planned from:
status is replaced through the status subresource (PUT with metadata.resourceVersion; the server takes
only ``status`` from the body, so a spec change made meanwhile is kept and our write fails with 409),
and finalizer edits are merge patches carrying resourceVersion (a precondition the server checks).

Events follow client-go's recorder: one core/v1 Event per series (the object, type, reason and message
without its timestamps: controller.event_series), named from a digest of those, created with count 1
and then patched with a higher count, lastTimestamp and the latest message when the same thing happens
again, so a repeating condition (a cron rule firing every minute) does not flood etcd with new objects.
An Event the API server has expired meanwhile (its event TTL, an hour by default) is created anew.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from kubernetes.client import ApiClient
from pydantic import ValidationError

from controller.errors import ConflictError, NotFoundError, PortError
from controller.event_series import series_key
from controller.kube.clients import MERGE_PATCH, KubeClient, Timeouts
from controller.kube.watch_transport import KubeTransport
from controller.planning.member_hpa import FIELD_MANAGER
from fhpa_api import GROUP, VERSION
from fhpa_api.models import (
    CronFederatedHPA,
    CronFederatedHPAStatus,
    CrossVersionObjectReference,
    FederatedHPA,
    FederatedHPAStatus,
    to_json,
)

log = logging.getLogger(__name__)

CONTROL_PLANE = "control-plane"  # the name errors carry (controller.kube.api_errors.map_error)
FEDERATED_HPA_PLURAL = "federatedhpas"
CRON_FEDERATED_HPA_PLURAL = "cronfederatedhpas"
EVENT_COMPONENT = "federated-hpa-controller"
MAX_EVENT_MESSAGE = 1024
DEFAULT_REQUEST_TIMEOUT = (5.0, 30.0)  # connect, read (seconds)

Obj = TypeVar("Obj", FederatedHPA, CronFederatedHPA)


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class KubeControlPlane:
    """ControlPlane over HTTP. ``namespace`` limits list/watch to one namespace (None: all namespaces)."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        namespace: str | None = None,
        field_manager: str = FIELD_MANAGER,
        reporting_instance: str = "",
        request_timeout: tuple[float, float] = DEFAULT_REQUEST_TIMEOUT,
        now: Callable[[], datetime] = _now,
    ) -> None:
        self.api_client = api_client
        self._client = KubeClient(
            CONTROL_PLANE, api_client, Timeouts(connect=request_timeout[0], read=request_timeout[1])
        )
        self.namespace = namespace
        self._field_manager = field_manager
        self._instance = reporting_instance
        self._timeout = request_timeout
        self._now = now
        self._lock = threading.Lock()
        self._plurals: dict[
            tuple[str, str], str
        ] = {}  # (apiVersion, kind) -> plural with a scale subresource
        self._event_counts: dict[tuple[str, str], int] = {}  # (namespace, event name) -> last count written

    # -- FederatedHPA -------------------------------------------------------------------------------

    def get_federated_hpa(self, namespace: str, name: str) -> FederatedHPA | None:
        return self._get(FederatedHPA, FEDERATED_HPA_PLURAL, namespace, name)

    def list_federated_hpas(self) -> list[FederatedHPA]:
        return self._list(FederatedHPA, FEDERATED_HPA_PLURAL)

    def update_federated_hpa_status(self, fhpa: FederatedHPA, status: FederatedHPAStatus) -> FederatedHPA:
        return self._put_status(FederatedHPA, FEDERATED_HPA_PLURAL, fhpa, to_json(status))

    def patch_federated_hpa_bounds(
        self, namespace: str, name: str, min_replicas: int | None, max_replicas: int | None
    ) -> FederatedHPA:
        spec: dict[str, int] = {}
        if min_replicas is not None:
            spec["minReplicas"] = min_replicas
        if max_replicas is not None:
            spec["maxReplicas"] = max_replicas
        path = self._object_path(FEDERATED_HPA_PLURAL, namespace, name)
        what = f"patch FederatedHPA {namespace}/{name}"
        body = self._request("PATCH", path, what, body={"spec": spec}, content_type=MERGE_PATCH)
        return self._model(FederatedHPA, body, what)

    def patch_federated_hpa_bounds_if_unchanged(
        self,
        namespace: str,
        name: str,
        min_replicas: int | None,
        max_replicas: int | None,
        resource_version: str,
    ) -> FederatedHPA:
        """Like patch_federated_hpa_bounds, with a resourceVersion precondition (ConflictError when the
        object moved since that version was read): two leaders holding one read cannot both apply."""
        spec: dict[str, int] = {}
        if min_replicas is not None:
            spec["minReplicas"] = min_replicas
        if max_replicas is not None:
            spec["maxReplicas"] = max_replicas
        patch = {"metadata": {"resourceVersion": resource_version}, "spec": spec}
        path = self._object_path(FEDERATED_HPA_PLURAL, namespace, name)
        what = f"patch FederatedHPA {namespace}/{name}"
        body = self._request("PATCH", path, what, body=patch, content_type=MERGE_PATCH)
        return self._model(FederatedHPA, body, what)

    def set_finalizers(self, fhpa: FederatedHPA, finalizers: list[str]) -> FederatedHPA:
        """Replace metadata.finalizers, guarded by fhpa's resourceVersion (ConflictError when it moved)."""
        namespace, name = fhpa.metadata.namespace or "", fhpa.metadata.name or ""
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": fhpa.metadata.resource_version}}
        what = f"set finalizers of FederatedHPA {namespace}/{name}"
        path = self._object_path(FEDERATED_HPA_PLURAL, namespace, name)
        body = self._request("PATCH", path, what, body=patch, content_type=MERGE_PATCH)
        return self._model(FederatedHPA, body, what)

    # -- CronFederatedHPA ---------------------------------------------------------------------------

    def get_cron_federated_hpa(self, namespace: str, name: str) -> CronFederatedHPA | None:
        return self._get(CronFederatedHPA, CRON_FEDERATED_HPA_PLURAL, namespace, name)

    def list_cron_federated_hpas(self) -> list[CronFederatedHPA]:
        return self._list(CronFederatedHPA, CRON_FEDERATED_HPA_PLURAL)

    def update_cron_federated_hpa_status(
        self, cron: CronFederatedHPA, status: CronFederatedHPAStatus
    ) -> CronFederatedHPA:
        return self._put_status(CronFederatedHPA, CRON_FEDERATED_HPA_PLURAL, cron, to_json(status))

    # -- workloads ----------------------------------------------------------------------------------

    def scale_workload(self, namespace: str, target: CrossVersionObjectReference, replicas: int) -> None:
        """PATCH the target's scale subresource; the kind's plural comes from API discovery (cached)."""
        if replicas < 0:
            raise ValueError(f"replicas must be >= 0, got {replicas}")
        api_version = target.api_version or "apps/v1"
        plural = self._scale_plural(api_version, target.kind)
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        path = f"{prefix}/namespaces/{namespace}/{plural}/{target.name}/scale"
        what = f"scale {target.kind} {namespace}/{target.name}"
        self._request("PATCH", path, what, body={"spec": {"replicas": replicas}}, content_type=MERGE_PATCH)

    def _scale_path(self, namespace: str, target: CrossVersionObjectReference) -> str:
        api_version = target.api_version or "apps/v1"
        plural = self._scale_plural(api_version, target.kind)
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        return f"{prefix}/namespaces/{namespace}/{plural}/{target.name}/scale"

    def get_config_map_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """A ConfigMap's ``data`` (a CronFederatedHPA rule's calendar); None when it does not exist."""
        what = f"get ConfigMap {namespace}/{name}"
        try:
            body = self._request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}", what)
        except NotFoundError:
            return None
        data = (body or {}).get("data") or {}
        return {str(k): str(v) for k, v in data.items()}

    def get_scale(self, namespace: str, target: CrossVersionObjectReference) -> tuple[int, str]:
        """The target's scale subresource: (spec.replicas, metadata.resourceVersion)."""
        what = f"read scale of {target.kind} {namespace}/{target.name}"
        doc = self._request("GET", self._scale_path(namespace, target), what) or {}
        replicas = (doc.get("spec") or {}).get("replicas") or 0
        return int(replicas), str((doc.get("metadata") or {}).get("resourceVersion") or "")

    def scale_workload_if_unchanged(
        self, namespace: str, target: CrossVersionObjectReference, replicas: int, resource_version: str
    ) -> None:
        """PUT the Scale carrying the resourceVersion read by get_scale (ConflictError when it moved)."""
        if replicas < 0:
            raise ValueError(f"replicas must be >= 0, got {replicas}")
        body = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": target.name, "namespace": namespace, "resourceVersion": resource_version},
            "spec": {"replicas": replicas},
        }
        what = f"scale {target.kind} {namespace}/{target.name}"
        self._request("PUT", self._scale_path(namespace, target), what, body=body)

    def _scale_plural(self, api_version: str, kind: str) -> str:
        with self._lock:
            cached = self._plurals.get((api_version, kind))
        if cached:
            return cached
        discovery_path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        doc = self._request("GET", discovery_path, f"discover {api_version}")
        resources = (doc or {}).get("resources") or []
        names = {r.get("name") for r in resources}
        for resource in resources:
            plural = resource.get("name", "")
            if resource.get("kind") == kind and "/" not in plural and f"{plural}/scale" in names:
                with self._lock:
                    self._plurals[(api_version, kind)] = plural
                return str(plural)
        raise NotFoundError(f"{api_version} serves no kind {kind} with a scale subresource")

    # -- Events -------------------------------------------------------------------------------------

    def emit_event(
        self,
        obj: FederatedHPA | CronFederatedHPA,
        type_: Literal["Normal", "Warning"],
        reason: str,
        message: str,
    ) -> None:
        """Record a core/v1 Event on ``obj``; a repeat of the same event raises its count instead."""
        namespace = obj.metadata.namespace or "default"
        message = message[:MAX_EVENT_MESSAGE]
        name = event_name(obj, type_, reason, message)
        now = _timestamp(self._now())
        key = (namespace, name)
        with self._lock:
            known = self._event_counts.get(key)
        if known is None:
            try:
                self._request(
                    "POST",
                    f"/api/v1/namespaces/{namespace}/events",
                    f"create Event {name}",
                    body=self._event_body(obj, namespace, name, type_, reason, message, now),
                )
                self._remember_event(key, 1)
                return
            except ConflictError:  # it exists already (a restart, or the cache was trimmed)
                known = self._read_event_count(namespace, name)
        count = known + 1
        try:
            self._request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/events/{name}",
                f"update Event {name}",
                body={"count": count, "lastTimestamp": now, "message": message},
                content_type=MERGE_PATCH,
            )
        except NotFoundError:  # expired (the API server's event TTL) or deleted: the series starts again
            with self._lock:
                self._event_counts.pop(key, None)
            self._request(
                "POST",
                f"/api/v1/namespaces/{namespace}/events",
                f"create Event {name}",
                body=self._event_body(obj, namespace, name, type_, reason, message, now),
            )
            count = 1
        self._remember_event(key, count)

    def _event_body(
        self,
        obj: FederatedHPA | CronFederatedHPA,
        namespace: str,
        name: str,
        type_: str,
        reason: str,
        message: str,
        now: str,
    ) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.api_version,
                "kind": obj.kind,
                "name": obj.metadata.name,
                "namespace": namespace,
                "uid": obj.metadata.uid,
                "resourceVersion": obj.metadata.resource_version,
            },
            "type": type_,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": EVENT_COMPONENT},
            "reportingComponent": EVENT_COMPONENT,
            "reportingInstance": self._instance,
        }

    def _read_event_count(self, namespace: str, name: str) -> int:
        existing = self._request("GET", f"/api/v1/namespaces/{namespace}/events/{name}", f"read Event {name}")
        return int((existing or {}).get("count") or 1)

    def _remember_event(self, key: tuple[str, str], count: int) -> None:
        with self._lock:
            if len(self._event_counts) > 4096:  # bounded: forgetting only costs one extra read
                self._event_counts.clear()
            self._event_counts[key] = count

    # -- watches ------------------------------------------------------------------------------------

    def watch_transport(self, read_seconds: float) -> KubeTransport:
        """The list/watch transport of the manager's informers: this API client, with list requests
        allowed ``read_seconds`` (a page of a thousand objects is slower than one GET)."""
        timeouts = Timeouts(connect=self._timeout[0], read=read_seconds)
        return KubeTransport(KubeClient(CONTROL_PLANE, self.api_client, timeouts))

    def collection_path(self, plural: str) -> str:
        """Where ``plural`` of this API group is listed: all namespaces, or only ``namespace``."""
        if self.namespace:
            return f"/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/{plural}"
        return f"/apis/{GROUP}/{VERSION}/{plural}"

    @staticmethod
    def secrets_path(namespace: str) -> str:
        return f"/api/v1/namespaces/{namespace}/secrets"

    # -- internals ----------------------------------------------------------------------------------

    def _object_path(self, plural: str, namespace: str, name: str) -> str:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}/{name}"

    def _get(self, model: type[Obj], plural: str, namespace: str, name: str) -> Obj | None:
        what = f"get {model.__name__} {namespace}/{name}"
        try:
            body = self._request("GET", self._object_path(plural, namespace, name), what)
        except NotFoundError:
            return None
        return self._model(model, body, what)

    def _list(self, model: type[Obj], plural: str) -> list[Obj]:
        if self.namespace:
            path = f"/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/{plural}"
        else:
            path = f"/apis/{GROUP}/{VERSION}/{plural}"
        body = self._request("GET", path, f"list {plural}")
        result = []
        for item in (body or {}).get("items") or []:
            item.setdefault("apiVersion", f"{GROUP}/{VERSION}")
            item.setdefault("kind", model.__name__)
            try:
                result.append(model.model_validate(item))
            except ValidationError as exc:  # one bad object must not hide the others
                meta = item.get("metadata") or {}
                log.warning(
                    "invalid object skipped",
                    extra={
                        "object": f"{meta.get('namespace')}/{meta.get('name')}",
                        "error": _first_error(exc),
                    },
                )
        return result

    def _put_status(self, model: type[Obj], plural: str, obj: Obj, status: dict[str, Any]) -> Obj:
        namespace, name = obj.metadata.namespace or "", obj.metadata.name or ""
        body = {
            "apiVersion": obj.api_version,
            "kind": obj.kind,
            "metadata": {
                "name": name,
                "namespace": namespace,
                "resourceVersion": obj.metadata.resource_version,
            },
            "spec": to_json(obj.spec),
            "status": status,
        }
        what = f"write status of {model.__name__} {namespace}/{name}"
        path = self._object_path(plural, namespace, name) + "/status"
        return self._model(model, self._request("PUT", path, what, body=body), what)

    def _model(self, model: type[Obj], body: Any, what: str) -> Obj:
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            raise PortError(f"{what}: the stored object is not valid: {_first_error(exc)}") from None

    def _request(
        self,
        method: str,
        path: str,
        what: str,
        *,
        body: Any = None,
        content_type: str | None = None,
    ) -> Any:
        """One JSON request through the shared client helper, which maps every failure to a PortError."""
        query = {"fieldManager": self._field_manager} if method in ("POST", "PUT", "PATCH") else None
        return self._client.request(method, path, query, body=body, content_type=content_type)


def event_name(obj: FederatedHPA | CronFederatedHPA, type_: str, reason: str, message: str) -> str:
    """A stable Event name: the object's name plus a digest of its series (a repeat finds it)."""
    series = series_key(type_, reason, message)
    raw = "\x00".join([obj.kind, obj.metadata.uid or "", obj.metadata.name or "", series])
    digest = hashlib.sha256(raw.encode()).hexdigest()[:16]
    return f"{(obj.metadata.name or 'object')[:200]}.{digest}"


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc}: {err.get('msg')}"
