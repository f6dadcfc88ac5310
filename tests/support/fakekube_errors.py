"""The error answers of FakeKube: an HTTP status with the metav1.Status body a real API server sends."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


class ApiError(Exception):
    """An HTTP error answer with a metav1.Status body."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body
