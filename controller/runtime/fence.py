"""Write fencing: every write a reconcile makes asks first whether this process may still write.

The leader elector answers "no" from the moment the last successful renewal is older than the renew
deadline, which is shorter than the lease duration, so a leader that lost its Lease stops writing before
any other candidate can acquire it. Reads are never fenced. A refused write raises NotLeaderError, which
abandons the reconcile in flight (the next leader starts it again from what the API says).

With shards (controller.runtime.shard_elector) the question is per object: the worker names the object
it reconciles with ``writes_for()``, and the manager's predicate asks ``current_object()`` whether this
replica still holds that object's shard, so losing one shard fences only that shard's writes.

What the fence cannot stop is a write already sent and held by a slow server; the writes that must not
be applied twice carry a resourceVersion precondition as well (see controller.cron_controller).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from controller.planning.observation import ClusterObservation
from controller.planning.plan import Observed
from controller.ports import ClusterIdentity, MemberCluster, NotLeaderError
from fhpa_api.models import CrossVersionObjectReference, FederatedHPA

CONTROL_PLANE_WRITES = frozenset(
    {
        "update_federated_hpa_status",
        "patch_federated_hpa_bounds",
        "patch_federated_hpa_bounds_if_unchanged",
        "scale_workload_if_unchanged",
        "set_finalizers",
        "update_cron_federated_hpa_status",
        "scale_workload",
        "emit_event",
    }
)


_WRITING_FOR: ContextVar[tuple[str, str] | None] = ContextVar("fhpa_writing_for", default=None)


@contextmanager
def writes_for(namespace: str, name: str) -> Iterator[None]:
    """The writes this thread makes inside the block are for the object ``namespace/name``."""
    token = _WRITING_FOR.set((namespace, name))
    try:
        yield
    finally:
        _WRITING_FOR.reset(token)


def current_object() -> tuple[str, str] | None:
    """The object this thread's writes are for (None: outside a reconcile, e.g. a member's Event)."""
    return _WRITING_FOR.get()


class Fence:
    """Checks a may-write predicate before each write; counts what it refused."""

    def __init__(self, may_write: Callable[[], bool]) -> None:
        self._may_write = may_write
        self.refused = 0

    def check(self, what: str) -> None:
        if not self._may_write():
            self.refused += 1
            raise NotLeaderError(f"no longer the Lease holder for it: {what} not sent")


class FencedControlPlane:
    """The control-plane adapter with every write behind the fence; everything else passes through."""

    def __init__(self, inner: Any, fence: Fence) -> None:
        self._inner = inner
        self._fence = fence

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in CONTROL_PLANE_WRITES or not callable(attr):
            return attr
        fence = self._fence

        def fenced(*args: Any, **kwargs: Any) -> Any:
            fence.check(name)
            return attr(*args, **kwargs)

        return fenced


class FencedMember:
    """A member cluster whose writes (HPA apply/delete, scale) are behind the fence."""

    def __init__(self, inner: MemberCluster, fence: Fence) -> None:
        self._inner = inner
        self._fence = fence

    @property
    def identity(self) -> ClusterIdentity:
        return self._inner.identity

    def probe(self) -> bool:
        return self._inner.probe()

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        return self._inner.observe(fhpa)

    def apply_hpa(
        self,
        fhpa: FederatedHPA,
        spec: dict[str, object],
        observed: Observed | None = None,
        decision: str | None = None,
    ) -> None:
        self._fence.check(f"apply HPA in {self._inner.identity.name}")
        self._inner.apply_hpa(fhpa, spec, observed=observed, decision=decision)

    def delete_hpa(self, fhpa: FederatedHPA, observed: Observed | None = None) -> None:
        self._fence.check(f"delete HPA in {self._inner.identity.name}")
        self._inner.delete_hpa(fhpa, observed=observed)

    def scale_workload(
        self,
        namespace: str,
        target: CrossVersionObjectReference,
        replicas: int,
        observed: Observed | None = None,
    ) -> None:
        self._fence.check(f"scale in {self._inner.identity.name}")
        self._inner.scale_workload(namespace, target, replicas, observed=observed)


__all__ = ["Fence", "FencedControlPlane", "FencedMember", "NotLeaderError", "current_object", "writes_for"]
