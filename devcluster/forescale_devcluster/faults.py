"""Fault injection for tests: answer the next N requests for a resource with an error.

`FaultPlan.add(resource="deployments", status=409, count=2, verbs={"create"})`
makes the next two matching requests fail the way a real API server fails
(a `Status` body; 429 carries `Retry-After`). Dropped watches are handled by
the server itself (`EmulatedApiServer.drop_watches`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

_REASONS = {409: "Conflict", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


@dataclass
class Fault:
    status: int
    remaining: int
    resource: str | None = None
    verbs: frozenset[str] | None = None
    subresource: str | None = None

    def matches(self, verb: str, resource: str, subresource: str | None) -> bool:
        return ((self.resource is None or self.resource == resource)
                and (self.verbs is None or verb in self.verbs)
                and (self.subresource is None or self.subresource == (subresource or "")))


class FaultPlan:
    """Pending faults, consumed in order; safe to fill from another thread."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, status: int, count: int = 1, resource: str | None = None, verbs: set[str] | None = None,
            subresource: str | None = None) -> None:
        """Fail the next `count` requests matching resource plural / verbs / subresource ("" = main object)."""
        if status < 400 or count < 1:
            raise ValueError(f"a fault needs an HTTP error status and count >= 1, got {status}, {count}")
        with self._lock:
            self._faults.append(Fault(status, count, resource, frozenset(verbs) if verbs else None, subresource))

    def take(self, verb: str, resource: str, subresource: str | None) -> int | None:
        """The status to answer this request with, or None to serve it normally."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(verb, resource, subresource):
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                    return fault.status
        return None

    def clear(self) -> None:
        """Drop every pending fault (between the examples of a campaign)."""
        with self._lock:
            self._faults.clear()

    def pending(self) -> int:
        with self._lock:
            return sum(f.remaining for f in self._faults)


def status_body(code: int, message: str, reason: str | None = None, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A `Status` object as a real API server returns it with an error."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason or _REASONS.get(code, "InternalError"), "details": details or {}, "code": code}
