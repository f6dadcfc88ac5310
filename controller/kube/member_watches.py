"""The watches of a member's cache: one family of list/watch loops per resource (every namespace, or each
namespace asked for where RBAC refuses the cluster-wide list), and the ``Change`` each reports."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.kube.listwatch import (
    ListWatch,
    ObjectKey,
    watch_backoff,
)

if TYPE_CHECKING:
    from controller.kube.member_cache import MemberCache

log = logging.getLogger(__name__)

POD, NODE, HPA = "Pod", "Node", "HorizontalPodAutoscaler"
WORKLOAD = "Workload"
WorkloadKind = tuple[str, str]  # (API group, Kind), e.g. ("apps", "Deployment")
PathFor = Callable[[str | None], str]  # namespace (None: every namespace) -> list/watch path


@dataclass(frozen=True)
class Change:
    """One change of a trimmed object in a member: what the manager maps to FederatedHPAs to look at."""

    resource: str  # POD, NODE, HPA or WORKLOAD
    key: ObjectKey
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    kind: WorkloadKind | None = None  # for WORKLOAD: which kind
    # the resource's first list just completed, or its store was given up over the member's budget:
    # news to every plan on the member (key is ("", ""), old/new None)
    synced: bool = False


ChangeListener = Callable[[Change], None]


class WatchFamily:
    """One resource watched in every namespace, or, when that list is refused (RBAC scoped to some
    namespaces), in each namespace asked for. ``paths`` may raise until it can be resolved (the HPA
    API version needs discovery); the family's thread retries it with backoff."""

    def __init__(
        self,
        cache: MemberCache,
        name: str,
        paths: Callable[[], PathFor],
        trim: Callable[[Mapping[str, Any]], dict[str, Any]],
        handler: Callable[[str, ObjectKey, Any, Any], None],
        *,
        per_namespace: bool,
        resource: str,
        kind: WorkloadKind | None = None,
    ) -> None:
        self.cache, self.name, self._paths, self._trim, self._handler = cache, name, paths, trim, handler
        self.resource, self.kind = resource, kind
        self._per_namespace_allowed = per_namespace
        self._path_for: PathFor | None = None
        self.cluster: ListWatch | None = None
        self.per_ns: dict[str, ListWatch] = {}
        self._lock = threading.Lock()

    def _watch(self, path: str, label: str) -> ListWatch:
        def synced() -> None:  # one notice for the whole first list, instead of one per object in it
            self.cache.fire(Change(self.resource, ("", ""), None, None, self.kind, synced=True))

        return ListWatch(
            self.cache.transport,
            path,
            self._trim,
            name=label,
            handler=self._handler,
            on_synced=synced,
            on_given_up=synced,  # what it held is unknown now: every plan on the member looks again
            is_own=lambda key, old: self.cache.own_writes.is_echo(self.resource, key, old),
            **self.cache.options,
        )

    def start(self) -> None:
        self.cache.spawn(f"listwatch {self.cache.cluster}/{self.name}", self._run)

    def _run(self, stop: threading.Event) -> None:
        failures = 0
        backoff = self.cache.options.get("backoff") or watch_backoff()
        while self._path_for is None and not stop.is_set():
            try:
                self._path_for = self._paths()
            except Exception as exc:  # discovery failed: the member is down or refuses; try again
                failures += 1
                log.info(
                    "member cache: cannot resolve a path yet", extra={"watch": self.name, "error": str(exc)}
                )
                stop.wait(backoff.delay(failures))
        if self._path_for is None:
            return
        self.cluster = self._watch(self._path_for(None), f"{self.cache.cluster}/{self.name}")
        self.cluster.run(stop)

    def ensure(self, namespace: str) -> None:
        """The cluster-wide list was refused: watch ``namespace`` on its own (once)."""
        cluster = self.cluster
        if not self._per_namespace_allowed or cluster is None or not cluster.denied.is_set():
            return
        with self._lock:
            if namespace in self.per_ns or self._path_for is None:
                return
            lw = self._watch(self._path_for(namespace), f"{self.cache.cluster}/{self.name}@{namespace}")
            self.per_ns[namespace] = lw
        self.cache.spawn(f"listwatch {lw.name}", lw.run)

    def source(self, namespace: str | None) -> ListWatch | None:
        """The synced store that holds ``namespace`` (None: every namespace), or None."""
        cluster = self.cluster
        if cluster is not None and cluster.synced.is_set() and not cluster.denied.is_set():
            return cluster
        if namespace is None:
            return None
        lw = self.per_ns.get(namespace)
        return lw if lw is not None and lw.synced.is_set() and not lw.denied.is_set() else None

    @property
    def denied(self) -> bool:
        cluster = self.cluster
        return cluster is not None and cluster.denied.is_set()

    def watches(self) -> list[ListWatch]:
        found = [self.cluster] if self.cluster is not None else []
        return found + list(self.per_ns.values())

    def waiting(self, namespace: str | None) -> str | None:
        return None if self.source(namespace) is not None else self.name
