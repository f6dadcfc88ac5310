"""What a member's watch-backed cache keeps of each object (``controller.kube.member_cache``): the fields
``observe`` and the capacity estimate read, and nothing else, so a member of many pods costs little memory.

- pods: namespace, name, labels, whether deletionTimestamp is set, nodeName, the containers' and init
  containers' resource requests (a limit without a request counts as the request, as API defaulting
  does; an init container keeps its ``restartPolicy`` so sidecars count as the scheduler counts them),
  the pod overhead, tolerations, nodeSelector, phase, and conditions (type, status, reason). The shape is
  the API's, so ``member_reads.pod_counts`` and ``capacity.used_by_node`` read a trimmed pod as they read a
  full one. Identical sub-objects (one workload's requests, tolerations and labels; the usual condition
  lists) are stored once and shared: trimmed objects are read-only;
- nodes: name, labels, allocatable, taints, unschedulable, the Ready condition;
- HPAs (autoscaling/v2, or v2beta2 where v2 is not served): metadata name, namespace, labels,
  annotations, resourceVersion and uid; spec; status;
- workloads, per kind as FederatedHPAs reference it (``watch_workloads``): name, namespace,
  resourceVersion, ``spec.replicas``, ``spec.selector``, the pod template's placement fields, and a
  ReplicaFailure condition with the pod count (how a quota refusing its pods shows).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from typing import Any


class Interner:
    """Shares equal immutable-by-convention sub-objects (dicts, lists of dicts) and strings.

    Keyed by the canonical JSON of the value; the table is cleared when it grows past ``limit`` entries
    so that values no longer used do not accumulate forever (sharing then restarts; nothing is lost).
    """

    def __init__(self, limit: int = 50_000) -> None:
        self._table: dict[str, Any] = {}
        self._limit = limit
        self._lock = threading.Lock()

    def share(self, value: Any) -> Any:
        if not value:
            return value
        key = json.dumps(value, sort_keys=True, separators=(",", ":"))
        with self._lock:
            found = self._table.get(key)
            if found is not None:
                return found
            if len(self._table) >= self._limit:
                self._table.clear()
            self._table[key] = value
            return value


def _s(value: Any) -> str:
    return sys.intern(str(value))


def _str_map(raw: Any) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        return {}
    return {_s(k): _s(v) for k, v in raw.items()}


def _resources(container: Mapping[str, Any]) -> dict[str, str]:
    res = container.get("resources") or {}
    merged = _str_map(res.get("limits"))
    merged.update(_str_map(res.get("requests")))
    return merged


def _toleration(tol: Mapping[str, Any]) -> dict[str, str]:
    """What taint matching reads (key, operator, value, effect); tolerationSeconds is not kept."""
    return {k: _s(tol[k]) for k in ("key", "operator", "value", "effect") if tol.get(k) is not None}


def trim_pod_spec(spec: Mapping[str, Any], interner: Interner | None = None) -> dict[str, Any]:
    """What capacity and placement read of a pod spec (or a workload's pod template spec)."""
    share = interner.share if interner is not None else (lambda v: v)
    out_spec: dict[str, Any] = {}
    if spec.get("nodeName"):
        out_spec["nodeName"] = _s(spec["nodeName"])
    containers = [{"resources": {"requests": _resources(c)}} for c in spec.get("containers") or ()]
    if containers:
        out_spec["containers"] = share(containers)
    inits = []
    for c in spec.get("initContainers") or ():
        init: dict[str, Any] = {"resources": {"requests": _resources(c)}}
        if c.get("restartPolicy"):
            init["restartPolicy"] = _s(c["restartPolicy"])
        inits.append(init)
    if inits:
        out_spec["initContainers"] = share(inits)
    for field, value in (
        ("overhead", _str_map(spec.get("overhead"))),
        ("nodeSelector", _str_map(spec.get("nodeSelector"))),
        ("tolerations", [_toleration(t) for t in spec.get("tolerations") or () if isinstance(t, Mapping)]),
    ):
        if value:
            out_spec[field] = share(value)
    return out_spec


def trim_pod(pod: Mapping[str, Any], interner: Interner | None = None) -> dict[str, Any]:
    share = interner.share if interner is not None else (lambda v: v)
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    out_meta: dict[str, Any] = {
        "namespace": _s(meta.get("namespace") or ""),
        "name": _s(meta.get("name") or ""),
    }
    labels = _str_map(meta.get("labels"))
    if labels:
        out_meta["labels"] = share(labels)
    if meta.get("deletionTimestamp"):
        out_meta["deletionTimestamp"] = True
    out_spec = trim_pod_spec(spec, interner)
    out_status: dict[str, Any] = {}
    if status.get("phase"):
        out_status["phase"] = _s(status["phase"])
    conditions = [
        {k: _s(c[k]) for k in ("type", "status", "reason") if c.get(k) is not None}
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping)
    ]
    if conditions:
        out_status["conditions"] = share(conditions)
    return {"metadata": out_meta, "spec": out_spec, "status": out_status}


def trim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    ready = [
        {k: _s(c[k]) for k in ("type", "status", "reason") if c.get(k) is not None}
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") == "Ready"
    ]
    out_spec: dict[str, Any] = {"unschedulable": bool(spec.get("unschedulable", False))}
    taints = [
        {k: _s(t[k]) for k in ("key", "value", "effect") if t.get(k) is not None}
        for t in spec.get("taints") or ()
        if isinstance(t, Mapping)
    ]
    if taints:
        out_spec["taints"] = taints
    return {
        "metadata": {"name": _s(meta.get("name") or ""), "labels": _str_map(meta.get("labels"))},
        "spec": out_spec,
        "status": {"allocatable": _str_map(status.get("allocatable")), "conditions": ready},
    }


_HPA_META = ("name", "namespace", "labels", "annotations", "resourceVersion", "uid")


def trim_hpa(hpa: Mapping[str, Any]) -> dict[str, Any]:
    meta = hpa.get("metadata") or {}
    out: dict[str, Any] = {"metadata": {k: meta[k] for k in _HPA_META if meta.get(k) is not None}}
    for field in ("apiVersion", "kind"):
        if hpa.get(field):
            out[field] = hpa[field]
    out["spec"] = hpa.get("spec") or {}
    out["status"] = hpa.get("status") or {}
    return out


class AlreadyTrimmed(dict[str, Any]):
    """A workload the cache trimmed and then updated from our own Scale write: kept as it is."""


def trim_workload(obj: Mapping[str, Any], interner: Interner | None = None) -> dict[str, Any]:
    """A workload with a scale subresource: its identity and resourceVersion (a Deployment's Scale carries
    the Deployment's), ``spec.replicas``, ``spec.selector`` and the pod template's placement fields."""
    if isinstance(obj, AlreadyTrimmed):
        return dict(obj)
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    out_meta = {k: _s(meta[k]) for k in ("namespace", "name", "resourceVersion") if meta.get(k) is not None}
    out_spec: dict[str, Any] = {}
    if spec.get("replicas") is not None:
        out_spec["replicas"] = spec["replicas"]
    if spec.get("selector") is not None:
        out_spec["selector"] = spec["selector"]
    template = (spec.get("template") or {}).get("spec")
    if isinstance(template, Mapping):
        out_spec["template"] = {"spec": trim_pod_spec(template, interner)}
    return {"metadata": out_meta, "spec": out_spec, **_quota_failure(obj.get("status") or {})}


def _quota_failure(status: Mapping[str, Any]) -> dict[str, Any]:
    """A workload's ReplicaFailure condition and its pod count: how a quota refusal shows (room.py)."""
    failures = [
        {k: _s(c[k]) for k in ("type", "status", "reason", "message") if c.get(k) is not None}
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") == "ReplicaFailure"
    ]
    if not failures:
        return {}
    return {"status": {"replicas": status.get("replicas") or 0, "conditions": failures}}
