"""The one error type the HTTP layer turns into an OpenAI-shaped error object,
`{"error": {"message", "type", "param", "code"}}`."""

from __future__ import annotations


class APIError(Exception):
    """A client-visible error: an HTTP status, a message naming the problem, an
    OpenAI-style error type, and (as OpenAI gives them) the request field at
    fault (`param`) and a machine-readable `code`. Raised anywhere below the
    HTTP layer."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", headers: dict[str, str] | None = None,
                 param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.headers = dict(headers or {})
        self.param = param
        self.code = code

    def body(self) -> dict:
        """The JSON body of the error response; `param` and `code` are null when
        they do not apply, as in OpenAI's own errors."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    """400 for a body that is well-formed HTTP but not a valid request; `param`
    names the field at fault."""
    return APIError(400, message, "invalid_request_error", param=param, code=code)
