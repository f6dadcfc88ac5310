"""A controller: one kind's reconciler, run by the workers for the keys of that kind.

The manager's workers take keys ``(kind, namespace, name)`` from the one work queue and hand each to the
controller of its kind. What a controller does with a key is the same for every kind, so it lives here
once: tag the log records with the object (``reconciling``), scope the fence to it (every write the
reconcile makes is refused once this process no longer owns the object), call the reconciler, count and
time it, and turn the outcome into the queue's next step: a ``Result``'s requeue-after becomes a delayed
add, a ConflictError or PortError (or a bug) a rate-limited retry, a NotLeaderError nothing (the process
lost the object; whoever owns it now reconciles it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from controller.errors import ConflictError, PortError
from controller.ports import NotLeaderError
from controller.result import Reconciler
from controller.runtime.fence import writes_for
from controller.runtime.metrics import Metrics
from controller.runtime.workqueue import WorkQueue

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # (kind, namespace, name)

_RECONCILING: ContextVar[tuple[str, str] | None] = ContextVar("fhpa_reconciling", default=None)


def _install_reconcile_log_context() -> None:
    """Every log record made while a worker reconciles carries ``reconcile_kind`` and
    ``reconcile_object`` ("namespace/name"), whichever module logs it and whatever extras it passed.

    A record factory rather than a handler filter, because logs.configure() replaces the handlers; and
    keys of its own, because the logging module refuses an ``extra=`` key already on the record, so
    setting ``object`` here would break the callers that pass it.
    """
    previous = logging.getLogRecordFactory()
    if getattr(previous, "fhpa_reconcile_context", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        current = _RECONCILING.get()
        if current is not None:
            record.reconcile_kind, record.reconcile_object = current
        return record

    factory.fhpa_reconcile_context = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


@contextmanager
def reconciling(kind: str, namespace: str, name: str) -> Iterator[None]:
    """Tag the log records of this thread with the object being reconciled, for the block's length."""
    _install_reconcile_log_context()
    token = _RECONCILING.set((kind, f"{namespace}/{name}"))
    try:
        yield
    finally:
        _RECONCILING.reset(token)


class Controller:
    """Runs ``reconciler`` for the keys of ``kind``; the queue is the manager's, shared by every kind."""

    def __init__(self, kind: str, reconciler: Reconciler, metrics: Metrics) -> None:
        self.kind = kind
        self.reconciler = reconciler
        self.metrics = metrics

    def handle(self, queue: WorkQueue[Key], key: Key) -> None:
        """One key taken by a worker that owns the object: reconcile it within its log and fence scope."""
        with reconciling(*key), writes_for(key[1], key[2]):
            self.process(queue, key)

    def process(self, queue: WorkQueue[Key], key: Key) -> None:
        """Reconcile ``key`` and put it back on ``queue`` as the outcome asks."""
        kind, namespace, name = key
        ref = f"{namespace}/{name}"
        start = time.perf_counter()
        try:
            result = self.reconciler.reconcile(namespace, name)
        except NotLeaderError as exc:
            log.warning(
                "reconcile abandoned: not the leader", extra={"object": ref, "kind": kind, "error": str(exc)}
            )
            self.metrics.reconciles.labels(kind=kind, result="abandoned").inc()
            return
        except ConflictError as exc:
            self._failed(queue, key, "conflict", exc)
            return
        except PortError as exc:
            self._failed(queue, key, "error", exc)
            return
        except Exception as exc:  # a bug must not kill the worker; it shows in logs and metrics
            log.exception("reconcile crashed", extra={"object": ref, "kind": kind})
            self._failed(queue, key, "error", exc)
            return
        finally:
            self.metrics.reconcile_seconds.labels(kind=kind).observe(time.perf_counter() - start)
        self.metrics.reconciles.labels(kind=kind, result="success").inc()
        requeue = result.requeue_after_seconds
        log.debug("reconciled", extra={"object": ref, "kind": kind, "requeue_after_seconds": requeue})
        queue.forget(key)
        if requeue is not None:
            queue.add_after(key, requeue, low=result.routine)

    def _failed(self, queue: WorkQueue[Key], key: Key, result: str, exc: BaseException) -> None:
        self.metrics.reconciles.labels(kind=key[0], result=result).inc()
        if result == "error":
            self.metrics.reconcile_errors.labels(kind=key[0]).inc()
        delay = queue.add_rate_limited(key)
        log.info(
            "reconcile failed; retrying",
            extra={
                "object": f"{key[1]}/{key[2]}",
                "kind": key[0],
                "error": str(exc),
                "retry_in_seconds": round(delay, 3),
            },
        )
