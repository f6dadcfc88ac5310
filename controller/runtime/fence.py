"""Write fencing: every write a reconcile makes asks first whether this process may still write.

The leader elector answers "no" from the moment the last successful renewal is older than the renew
deadline, which is shorter than the lease duration, so a leader that lost its Lease stops writing before
any other candidate can acquire it. The writes are what the ports say they are: the control-plane methods
marked ``@writes`` (controller.ports) and a member's one write entry point, so a write added to a port is
fenced without anyone listing it here. Reads are never fenced. A refused write raises NotLeaderError, which
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

from controller.finalizer import FinalizerStore
from controller.member_layer import MemberLayer
from controller.ports import (
    ConditionalControlPlane,
    ControlPlane,
    MemberCluster,
    MemberWrite,
    NotLeaderError,
    operation_of,
    write_verbs,
)

CONTROL_PLANE_WRITES = write_verbs(ControlPlane, ConditionalControlPlane, FinalizerStore)
"""What the fence refuses on the control plane: every method its ports mark as a write."""


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


class FencedMember(MemberLayer):
    """A member cluster whose writes are behind the fence (the member port has one write entry point)."""

    def __init__(self, inner: MemberCluster, fence: Fence) -> None:
        super().__init__(inner)
        self._fence = fence

    def before_write(self, action: MemberWrite) -> None:
        self._fence.check(f"{operation_of(action)} in {self.identity.name}")


__all__ = ["Fence", "FencedControlPlane", "FencedMember", "NotLeaderError", "current_object", "writes_for"]
