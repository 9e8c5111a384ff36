"""The one error type the HTTP layer turns into `{"error": {"message", "type"}}`."""

from __future__ import annotations


class APIError(Exception):
    """A client-visible error: an HTTP status, a message naming the problem and
    an OpenAI-style error type. Raised anywhere below the HTTP layer."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.headers = dict(headers or {})

    def body(self) -> dict:
        """The JSON body of the error response."""
        return {"error": {"message": self.message, "type": self.type}}


def bad_request(message: str) -> APIError:
    """400 for a body that is well-formed HTTP but not a valid request."""
    return APIError(400, message, "invalid_request_error")
