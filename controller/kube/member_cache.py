"""One watch-backed cache per member cluster: pods, nodes and HPAs, trimmed (issue 13, item 1).

Shared by every FederatedHPA on the member: instead of polling the HPA list, the pods by selector and
every pod and node for each reconcile, the cache lists each resource once (in pages) and then watches it
(``controller.kube.listwatch``). Memory holds only what the observation and the capacity estimate read:

- pods: namespace, name, labels, whether deletionTimestamp is set, nodeName, the containers' and init
  containers' resource requests (a limit without a request counts as the request, as API defaulting
  does; an init container keeps its ``restartPolicy`` so sidecars count as the scheduler counts them),
  the pod overhead, tolerations, nodeSelector, phase, and conditions (type, status, reason). The shape is
  the API's, so ``member.pod_counts`` and ``capacity.used_by_node`` read a trimmed pod as they read a
  full one. Identical sub-objects (one workload's requests, tolerations and labels; the usual condition
  lists) are stored once and shared: trimmed objects are read-only;
- nodes: name, labels, allocatable, taints, unschedulable, the Ready condition;
- HPAs (autoscaling/v2 by default): metadata name, namespace, labels, annotations, resourceVersion and
  uid; spec; status.

``synced`` is True only after every resource's first list completed; until then the member must be
observed as UNKNOWN, never as empty, and the query methods raise ``CacheNotSyncedError`` (a
``ClusterUnreachableError``) rather than answer from a partial store. Each change of a trimmed object is
reported to the ``on_change(kind, key)`` listeners (kind "Pod", "Node" or "HorizontalPodAutoscaler",
key (namespace, name)); a change to a field not kept (a pod's annotations, say) is not reported.

Not wired into ``KubeMemberCluster.observe()`` or the manager yet.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.errors import ClusterUnreachableError
from controller.kube.clients import KubeClient
from controller.kube.listwatch import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_WATCH_TIMEOUT_SECONDS,
    Backoff,
    KubeTransport,
    ListWatch,
    ObjectKey,
    Transport,
)

log = logging.getLogger(__name__)

POD, NODE, HPA = "Pod", "Node", "HorizontalPodAutoscaler"
ChangeListener = Callable[[str, ObjectKey], None]


class CacheNotSyncedError(ClusterUnreachableError):
    """The member's first lists have not all completed: what it holds is unknown, not empty."""


# --- trimming ---------------------------------------------------------------------------------------


class _Interner:
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


def trim_pod(pod: Mapping[str, Any], interner: _Interner | None = None) -> dict[str, Any]:
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


# --- label selectors ----------------------------------------------------------------------------------


def _split_terms(text: str) -> list[str]:
    terms, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur.strip())
    return terms


Requirement = tuple[str, str, frozenset[str]]  # (key, operator, values): In, NotIn, Exists, DoesNotExist


def parse_selector(selector: Any) -> list[Requirement] | None:
    """A LabelSelector (dict) or selector string as requirements; None when it selects nothing
    (a None selector, or an operator we do not know: never guess a match)."""
    if selector is None:
        return None
    reqs: list[Requirement] = []
    if isinstance(selector, Mapping):
        for k, v in (selector.get("matchLabels") or {}).items():
            reqs.append((str(k), "In", frozenset({str(v)})))
        for expr in selector.get("matchExpressions") or ():
            op = expr.get("operator")
            if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
                return None
            reqs.append((str(expr.get("key")), op, frozenset(str(v) for v in expr.get("values") or ())))
        return reqs
    if not isinstance(selector, str):
        return None
    for term in _split_terms(selector):
        words = term.split()
        if len(words) >= 3 and words[1] in ("in", "notin"):
            values = " ".join(words[2:]).strip()
            if not (values.startswith("(") and values.endswith(")")):
                return None
            vals = frozenset(v.strip() for v in values[1:-1].split(",") if v.strip())
            reqs.append((words[0], "In" if words[1] == "in" else "NotIn", vals))
        elif "!=" in term:
            key, _, value = term.partition("!=")
            reqs.append((key.strip(), "NotIn", frozenset({value.strip()})))
        elif "=" in term:
            key, _, value = term.partition("==") if "==" in term else term.partition("=")
            reqs.append((key.strip(), "In", frozenset({value.strip()})))
        elif term.startswith("!"):
            reqs.append((term[1:].strip(), "DoesNotExist", frozenset()))
        elif term:
            reqs.append((term, "Exists", frozenset()))
    return reqs


def selector_matches(reqs: Iterable[Requirement], labels: Mapping[str, str]) -> bool:
    for key, op, values in reqs:
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


# --- the cache ----------------------------------------------------------------------------------------


class MemberCache:
    """Pods, nodes and HPAs of one member cluster, listed once and then watched.

    ``start()`` runs one thread per resource; ``stop()`` ends them. Thread-safe reads.
    """

    def __init__(
        self,
        cluster: str,
        transport: Transport,
        *,
        hpa_version: str = "v2",
        page_size: int = DEFAULT_PAGE_SIZE,
        timeout_seconds: int = DEFAULT_WATCH_TIMEOUT_SECONDS,
        read_slack_seconds: float = 30.0,
        backoff: Backoff | None = None,
        min_watch_interval: float = 1.0,
        on_change: ChangeListener | None = None,
    ) -> None:
        self.cluster = cluster
        self._listeners: list[ChangeListener] = [on_change] if on_change is not None else []
        self._interner = _Interner()
        self._lock = threading.Lock()
        self._pods_by_ns: dict[str, dict[str, dict[str, Any]]] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        common: dict[str, Any] = {
            "page_size": page_size,
            "timeout_seconds": timeout_seconds,
            "read_slack_seconds": read_slack_seconds,
            "backoff": backoff,
            "min_watch_interval": min_watch_interval,
        }
        self.pods_watch = ListWatch(
            transport,
            "/api/v1/pods",
            lambda p: trim_pod(p, self._interner),
            name=f"{cluster}/pods",
            handler=self._pod_changed,
            **common,
        )
        self.nodes_watch = ListWatch(
            transport,
            "/api/v1/nodes",
            trim_node,
            name=f"{cluster}/nodes",
            handler=self._notify(NODE),
            **common,
        )
        self.hpas_watch = ListWatch(
            transport,
            f"/apis/autoscaling/{hpa_version}/horizontalpodautoscalers",
            trim_hpa,
            name=f"{cluster}/hpas",
            handler=self._notify(HPA),
            **common,
        )
        self.watches = (self.pods_watch, self.nodes_watch, self.hpas_watch)

    @classmethod
    def for_client(cls, client: KubeClient, **kwargs: Any) -> MemberCache:
        return cls(client.cluster, KubeTransport(client), **kwargs)

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            return
        for lw in self.watches:
            thread = threading.Thread(
                target=lw.run, args=(self._stop,), name=f"listwatch {lw.name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        for lw in self.watches:
            lw.close()
        for thread in self._threads:
            thread.join(timeout)

    # -- change hook ----------------------------------------------------------------------------------

    def add_listener(self, listener: ChangeListener) -> None:
        """``listener(kind, (namespace, name))`` after each change of a trimmed object; must be quick."""
        self._listeners.append(listener)

    def _fire(self, kind: str, key: ObjectKey) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, key)
            except Exception:
                log.exception("member cache listener failed", extra={"cluster": self.cluster, "kind": kind})

    def _notify(self, kind: str) -> Callable[[str, ObjectKey, Any, Any], None]:
        def handler(_type: str, key: ObjectKey, _old: Any, _new: Any) -> None:
            self._fire(kind, key)

        return handler

    def _pod_changed(self, _type: str, key: ObjectKey, _old: Any, new: dict[str, Any] | None) -> None:
        namespace, name = key
        with self._lock:
            if new is None:
                pods = self._pods_by_ns.get(namespace)
                if pods is not None:
                    pods.pop(name, None)
                    if not pods:
                        del self._pods_by_ns[namespace]
            else:
                self._pods_by_ns.setdefault(namespace, {})[name] = new
        self._fire(POD, key)

    # -- queries --------------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return all(lw.synced.is_set() for lw in self.watches)

    def _require_synced(self) -> None:
        if not self.synced:
            waiting = ", ".join(lw.name for lw in self.watches if not lw.synced.is_set())
            raise CacheNotSyncedError(self.cluster, f"member cache not synced (waiting for {waiting})")

    def wait_synced(self, timeout: float | None = None) -> bool:
        return all(lw.synced.wait(timeout) for lw in self.watches)

    def pods_matching(self, namespace: str, selector: Any) -> list[dict[str, Any]]:
        """The pods of ``namespace`` a LabelSelector (dict) or selector string picks; an empty or
        unreadable selector picks none (a workload without a selector owns no pods we can count)."""
        self._require_synced()
        reqs = parse_selector(selector)
        if not reqs:
            return []
        with self._lock:
            pods = list((self._pods_by_ns.get(namespace) or {}).values())
        return [p for p in pods if selector_matches(reqs, (p["metadata"].get("labels") or {}))]

    def all_pods(self) -> list[dict[str, Any]]:
        self._require_synced()
        return self.pods_watch.items()

    def nodes(self) -> list[dict[str, Any]]:
        self._require_synced()
        return self.nodes_watch.items()

    def hpas(self, namespace: str) -> list[dict[str, Any]]:
        self._require_synced()
        return [h for h in self.hpas_watch.items() if h["metadata"].get("namespace") == namespace]
