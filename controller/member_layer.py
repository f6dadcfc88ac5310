"""Member layers: a member cluster seen through one concern (a health gate, timing, the write fence).

Layers stack, each wrapping the next, and every call of the member port passes through each of them. A
concern is written once, over the port's three entry points (probe, observe, write), rather than once
per method with the port's signatures typed out again; and since every change to a member goes through
``write``, a layer that guards writes guards all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

from controller.planning.observation import ClusterObservation
from controller.ports import ClusterIdentity, MemberCluster, MemberWrite, operation_of
from fhpa_api.models import FederatedHPA

_T = TypeVar("_T")


class MemberLayer:
    """Passes every call to the member it wraps; a concern overrides ``around`` or ``before_write``."""

    def __init__(self, inner: MemberCluster) -> None:
        self._wrapped = inner

    def inner(self) -> MemberCluster:
        """The member this layer wraps (a layer whose member can be replaced resolves it here)."""
        return self._wrapped

    @property
    def identity(self) -> ClusterIdentity:
        return self.inner().identity

    def probe(self) -> bool:
        return self.around("probe", self.inner().probe)

    def observe(self, fhpa: FederatedHPA) -> ClusterObservation:
        return self.around("observe", partial(self.inner().observe, fhpa))

    def write(self, fhpa: FederatedHPA, action: MemberWrite) -> None:
        self.before_write(action)
        self.around(operation_of(action), partial(self.inner().write, fhpa, action))

    def before_write(self, action: MemberWrite) -> None:
        """Runs before a write reaches the member; raising here refuses it."""

    def around(self, operation: str, call: Callable[[], _T]) -> _T:
        """Runs one call of the wrapped member (``operation``: probe, observe or operation_of a write)."""
        return call()
