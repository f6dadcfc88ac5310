"""What a reconcile answers: look at this object again after N seconds, or only when something changes.

Every reconciler (``FederatedHPAReconciler``, ``CronFederatedHPAReconciler``) returns a ``Result``, so the
runtime's work queue and the simulator's virtual clock drive them the same way: a requeue-after becomes a
delayed add (or the simulator's next pass), nothing waits in a thread or a timer of its own. A reconcile
that failed and must be retried with backoff raises instead (controller.errors): the retry is the queue's
rate limiter's business, not a time the reconciler picks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Result:
    """``requeue_after_seconds``: when to reconcile the object again; None: on the next event or resync."""

    requeue_after_seconds: float | None = None
    routine: bool = False
    """The requeue is routine (a periodic optimization, nothing falls due): it waits behind reactions."""

    @classmethod
    def after(cls, seconds: float | None, routine: bool = False) -> Result:
        """A requeue in ``seconds`` (negative is now); None is the same as ``Result()``."""
        return cls(None if seconds is None else max(0.0, seconds), routine and seconds is not None)


class Reconciler(Protocol):
    """One kind's reconcile: bring the object ``namespace/name`` to what it asks for, from a fresh read."""

    def reconcile(self, namespace: str, name: str) -> Result: ...
