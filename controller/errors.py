"""Errors the ports raise, so that callers react to what happened rather than to an HTTP library."""

from __future__ import annotations


class PortError(Exception):
    """Base of every error a port raises."""


class ConflictError(PortError):
    """The object changed since it was read (HTTP 409): re-read and re-plan."""


class NotFoundError(PortError):
    """The object is not there (HTTP 404)."""


class GoneError(PortError):
    """A watch's resourceVersion is too old (HTTP 410): list again."""


class ClusterUnreachableError(PortError):
    """A member cluster did not answer (connection refused, timeout, 5xx)."""

    def __init__(self, cluster: str, detail: str) -> None:
        super().__init__(f"cluster {cluster}: {detail}")
        self.cluster = cluster
        self.detail = detail


class NotOwnedError(PortError):
    """A member HPA exists under our name but belongs to someone else; we never overwrite it."""
