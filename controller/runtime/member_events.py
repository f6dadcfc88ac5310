"""Which FederatedHPAs a change in a member cluster concerns (issue 13, event-driven reconcile).

The member caches (controller.kube.member_cache) report every change of a trimmed object. Most do not
matter to any plan: a pod's unrelated label, an HPA's CPU reading moving by a percent, a Deployment's
status. These pure functions decide what does, and whom it concerns, so the manager enqueues only
those FederatedHPAs (within a second of the change) and the resync stays a safety net:

- a pod of a targeted workload appears, goes, is bound, becomes Ready or not, Unschedulable or not,
  terminates, starts terminating, or changes labels;
- a member HPA's bounds, current or desired replicas, or conditions (type, status, reason) change, or
  its metrics cross a tenth of their target (``metric_ratio`` bucket: the planner reads whether a
  cluster presses for more, and by how much);
- a targeted workload's replicas, selector or pod template change, or a quota starts or stops refusing
  its pods (the only status the cache keeps: a ReplicaFailure and the pod count with it);
- a node appears, goes, or changes what the capacity estimate reads: every FederatedHPA whose
  clusterAffinity selects the member (``ClusterSelection``), since only their plans read its capacity;
- a resource's first list completes (a member joined, or its cache started): every FederatedHPA, once,
  rather than once per object in the list.

``TargetIndex`` maps a workload (namespace, API group, kind, name) to the FederatedHPAs that target it,
kept from the FederatedHPA watch.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from controller.kube.member_cache import HPA, NODE, POD, WORKLOAD, Change, WorkloadKind
from controller.kube.member_reads import pod_counts
from controller.planning.affinity import affinity_matches
from controller.planning.member_hpa import LABEL_OWNER_NAME, LABEL_OWNER_NAMESPACE
from controller.planning.metric_ratio import metric_ratio
from controller.ports import ClusterIdentity
from fhpa_api.models import ClusterAffinity

ObjectRef = tuple[str, str]  # (namespace, name) of a FederatedHPA
Target = tuple[str, str, str, str]  # (namespace, API group, kind, name) of a workload
ALL: frozenset[ObjectRef] = frozenset({("*", "*")})
"""Every FederatedHPA (a node changed: every plan on the member may change)."""

_DEFAULT_GROUPS = {"Deployment": "apps", "StatefulSet": "apps", "ReplicaSet": "apps"}


def target_of(fhpa: Mapping[str, Any]) -> Target | None:
    """The workload a FederatedHPA (as the watch serves it) scales."""
    meta, spec = fhpa.get("metadata") or {}, fhpa.get("spec") or {}
    ref = spec.get("scaleTargetRef") or {}
    kind, name = ref.get("kind"), ref.get("name")
    if not kind or not name:
        return None
    api_version = str(ref.get("apiVersion") or "")
    group = api_version.rpartition("/")[0] if api_version else _DEFAULT_GROUPS.get(str(kind), "")
    return (str(meta.get("namespace") or ""), group, str(kind), str(name))


class TargetIndex:
    """Workload -> the FederatedHPAs that target it. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_target: dict[Target, set[ObjectRef]] = {}
        self._of: dict[ObjectRef, Target] = {}

    def update(self, ref: ObjectRef, target: Target | None) -> None:
        with self._lock:
            self._drop(ref)
            if target is not None:
                self._of[ref] = target
                self._by_target.setdefault(target, set()).add(ref)

    def remove(self, ref: ObjectRef) -> None:
        with self._lock:
            self._drop(ref)

    def _drop(self, ref: ObjectRef) -> None:
        old = self._of.pop(ref, None)
        if old is not None:
            refs = self._by_target.get(old)
            if refs is not None:
                refs.discard(ref)
                if not refs:
                    del self._by_target[old]

    def targeting(self, target: Target) -> set[ObjectRef]:
        with self._lock:
            return set(self._by_target.get(target, ()))

    def targets_in(self, namespace: str) -> set[Target]:
        with self._lock:
            return {t for t in self._by_target if t[0] == namespace}


_UNREADABLE = object()
"""A clusterAffinity that does not parse: treated as selecting every cluster (never fewer than before)."""


class ClusterSelection:
    """FederatedHPA -> its clusterAffinity, kept from the FederatedHPA watch, so that a member's node
    change asks for a pass over only the FederatedHPAs that plan over that member. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._affinity: dict[ObjectRef, Any] = {}

    def update(self, ref: ObjectRef, fhpa: Mapping[str, Any]) -> None:
        raw = (fhpa.get("spec") or {}).get("clusterAffinity")
        try:
            affinity: Any = None if raw is None else ClusterAffinity.model_validate(raw)
        except ValidationError:
            affinity = _UNREADABLE
        with self._lock:
            self._affinity[ref] = affinity

    def remove(self, ref: ObjectRef) -> None:
        with self._lock:
            self._affinity.pop(ref, None)

    def selects(self, ref: ObjectRef, cluster: ClusterIdentity) -> bool:
        """Whether ``ref`` plans over ``cluster`` (True for an object not seen yet: the caller asked)."""
        with self._lock:
            affinity = self._affinity.get(ref)
        if affinity is _UNREADABLE:
            return True
        return affinity_matches(affinity, cluster.observed())


# --- what matters ---------------------------------------------------------------------------------


def _pod_state(pod: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    if pod is None:
        return None
    meta = pod.get("metadata") or {}
    return (
        pod_counts([pod]),
        (pod.get("status") or {}).get("phase"),
        bool(meta.get("deletionTimestamp")),
        tuple(sorted((meta.get("labels") or {}).items())),
    )


def pod_matters(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    return _pod_state(old) != _pod_state(new)


def _ratio_bucket(hpa: Mapping[str, Any]) -> int | None:
    ratio = metric_ratio(
        (hpa.get("spec") or {}).get("metrics") or [], (hpa.get("status") or {}).get("currentMetrics") or []
    )
    return None if ratio is None else math.floor(ratio * 10)


def _hpa_state(hpa: Mapping[str, Any] | None) -> tuple[Any, ...] | None:
    if hpa is None:
        return None
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    conditions = tuple(
        (c.get("type"), c.get("status"), c.get("reason")) for c in status.get("conditions") or ()
    )
    return (
        spec.get("minReplicas"),
        spec.get("maxReplicas"),
        spec.get("scaleTargetRef"),
        status.get("currentReplicas"),
        status.get("desiredReplicas"),
        conditions,
        _ratio_bucket(hpa),
        (hpa.get("metadata") or {}).get("labels"),
    )


def hpa_matters(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    return _hpa_state(old) != _hpa_state(new)


def workload_matters(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    if old is None or new is None:
        return old is not new
    return old.get("spec") != new.get("spec") or old.get("status") != new.get("status")


# --- whom it concerns -------------------------------------------------------------------------------

WorkloadsSelecting = Callable[[str, Mapping[str, str]], Iterable[tuple[WorkloadKind, str]]]
"""(namespace, pod labels) -> the watched workloads whose selector picks the pod."""


@dataclass(frozen=True)
class Touched:
    """What a member change touches before the FederatedHPAs are known: the workloads it concerns, the
    FederatedHPAs an HPA's owner labels name, or every plan (``every``: a node, a first list)."""

    targets: frozenset[Target] = frozenset()
    refs: frozenset[ObjectRef] = frozenset()
    every: bool = False


NOTHING = Touched()


def touched(change: Change, workloads_selecting: WorkloadsSelecting) -> Touched:
    """What ``change`` touches; ``NOTHING`` when it does not matter to any plan."""
    namespace, name = change.key
    if change.synced:  # a resource's first list completed: what it holds is new to every plan
        return Touched(every=True)
    if change.resource == NODE:
        return Touched(every=True) if _node_matters(change) else NOTHING
    if change.resource == POD:
        if not pod_matters(change.old, change.new):
            return NOTHING
        found: set[Target] = set()
        for pod in (change.old, change.new):
            if pod is None:
                continue
            labels = (pod.get("metadata") or {}).get("labels") or {}
            for (group, kind), workload in workloads_selecting(namespace, labels):
                found.add((namespace, group, kind, workload))
        return Touched(targets=frozenset(found))
    if change.resource == WORKLOAD:
        if change.kind is None or not workload_matters(change.old, change.new):
            return NOTHING
        group, kind = change.kind
        return Touched(targets=frozenset({(namespace, group, kind, name)}))
    if change.resource == HPA:
        return _hpa_touches(namespace, change) if hpa_matters(change.old, change.new) else NOTHING
    return NOTHING


def concerned(change: Change, index: TargetIndex, workloads_selecting: WorkloadsSelecting) -> set[ObjectRef]:
    """The FederatedHPAs to look at again after ``change`` (``ALL`` for every one); empty when it does
    not matter."""
    return resolve(touched(change, workloads_selecting), index)


def resolve(touch: Touched, index: TargetIndex) -> set[ObjectRef]:
    """The FederatedHPAs ``touch`` concerns, as ``index`` knows them now."""
    if touch.every:
        return set(ALL)
    found = set(touch.refs)
    for target in touch.targets:
        found |= index.targeting(target)
    return found


def _node_matters(change: Change) -> bool:
    return change.old != change.new


def _hpa_touches(namespace: str, change: Change) -> Touched:
    refs: set[ObjectRef] = set()
    targets: set[Target] = set()
    for hpa in (change.old, change.new):
        if hpa is None:
            continue
        labels = (hpa.get("metadata") or {}).get("labels") or {}
        owner = labels.get(LABEL_OWNER_NAME)
        if owner and labels.get(LABEL_OWNER_NAMESPACE, namespace) == namespace:
            refs.add((namespace, owner))
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        targets.add((namespace, group, str(ref.get("kind") or ""), str(ref.get("name") or "")))
    return Touched(frozenset(targets), frozenset(refs))


class RecentChanges:
    """The workloads and FederatedHPAs member changes touched within the last ``window_seconds``.

    Kept for the moment the FederatedHPAs are not known: a standby keeps its member caches but not the
    FederatedHPA watch, so it cannot tell whom a change concerns. When it takes over, the FederatedHPA
    list's objects go to the resync lane, except those a recent change touched: the takeover reaches
    what changed while nobody led before it re-plans the rest. Bounded: past ``cap`` entries the oldest
    go. Thread-safe."""

    def __init__(
        self, window_seconds: float, cap: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._window, self._cap, self._clock = window_seconds, cap, clock
        self._lock = threading.Lock()
        self._seen: OrderedDict[Any, float] = OrderedDict()

    def record(self, touch: Touched) -> None:
        if touch.every:
            return  # a node or a first list: every plan, none before another
        now = self._clock()
        with self._lock:
            for item in (*touch.targets, *touch.refs):
                self._seen[item] = now
                self._seen.move_to_end(item)
            while len(self._seen) > self._cap:
                self._seen.popitem(last=False)

    def holds(self, ref: ObjectRef, target: Target | None) -> bool:
        """Whether a recent change touched the FederatedHPA ``ref`` or its workload ``target``."""
        oldest = self._clock() - self._window
        with self._lock:
            while self._seen and next(iter(self._seen.values())) < oldest:
                self._seen.popitem(last=False)
            return ref in self._seen or (target is not None and target in self._seen)
