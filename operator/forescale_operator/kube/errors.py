"""API errors, classified by what the caller should do next."""

from __future__ import annotations

#: statuses worth retrying: conflict, throttling, server-side trouble
RETRYABLE = frozenset({409, 429, 500, 502, 503, 504})


class ApiError(Exception):
    """A non-2xx answer. `retry_after` comes from the Retry-After header (429/503)."""

    def __init__(self, status: int, reason: str, message: str, *, retry_after: float | None = None,
                 method: str = "", path: str = "") -> None:
        self.status, self.reason, self.message, self.retry_after = status, reason, message, retry_after
        self.method, self.path = method, path
        super().__init__(f"{method} {path}: {status} {reason}: {message}".strip())

    @property
    def retryable(self) -> bool:
        return self.status in RETRYABLE


class ApiUnavailable(ApiError):
    """The API server could not be reached (connection refused/reset, timeout)."""

    def __init__(self, message: str, *, method: str = "", path: str = "") -> None:
        super().__init__(0, "Unavailable", message, method=method, path=path)

    @property
    def retryable(self) -> bool:
        return True
