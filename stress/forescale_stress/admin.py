"""The target's admin API: the bearer token and the calls the
stress tool makes (faults, precision switch, warm-up). The token is sent in a
header and never printed, logged or put in the report."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import aiohttp

from forescale_stress.errors import StressError
from forescale_stress.target import Target

TOKEN_ENV = "FORESCALE_ADMIN_TOKEN"
TOKEN_FILE_ENV = "FORESCALE_ADMIN_TOKEN_FILE"


def load_token(token_file: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The admin token from `--admin-token-file`, else from the file named by
    FORESCALE_ADMIN_TOKEN_FILE, else from FORESCALE_ADMIN_TOKEN; None if none."""
    path = token_file or env.get(TOKEN_FILE_ENV)
    if path:
        try:
            token = Path(path).read_text().strip()
        except OSError as exc:
            raise StressError(f"cannot read the admin token file {path}: {exc.strerror or exc}") from None
        if not token:
            raise StressError(f"the admin token file {path} is empty")
        return token
    token = env.get(TOKEN_ENV, "").strip()
    return token or None


@dataclass(frozen=True)
class AdminResult:
    """One admin call: when it was made and answered (seconds on the caller's
    clock) and its outcome; `error` is None on HTTP 200."""

    called_at: float
    answered_at: float
    status: int
    error: str | None


def _explain(status: int, path: str) -> str:
    if status == 401 or status == 403:
        return f"the admin API refused the token (HTTP {status}) at {path}"
    if status == 404:
        hint = " (start the server with --enable-faults)" if path == "/admin/faults" else ""
        return f"the admin endpoint {path} is switched off or missing (HTTP 404){hint}"
    return f"{path} answered HTTP {status}"


class AdminClient:
    """Calls `<origin>/admin/...` of the target with the bearer token."""

    def __init__(self, target: Target, token: str, timeout: float = 30.0, clock=time.monotonic):
        self._target = target
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._clock = clock

    async def post(self, path: str, body: dict) -> AdminResult:
        """POST `body` to `path` on the target's origin; never raises for HTTP
        or connection errors, which are returned in `error`."""
        called = self._clock()
        try:
            async with aiohttp.ClientSession(timeout=self._timeout) as session:
                async with session.post(
                    self._target.admin_url(path), json=body, headers=self._headers, allow_redirects=False
                ) as resp:
                    await resp.read()
                    status = resp.status
        except TimeoutError:
            return AdminResult(called, self._clock(), 0, f"{path}: no answer within {self._timeout.total:g}s")
        except aiohttp.ClientError as exc:
            return AdminResult(called, self._clock(), 0, f"{path}: {exc or type(exc).__name__}")
        error = None if status == 200 else _explain(status, path)
        return AdminResult(called, self._clock(), status, error)

    async def preflight(self, paths: list[str]) -> None:
        """Check, without side effects, that each admin path exists and takes
        the token: an empty body must be refused as a bad body (400), not as
        unauthorised (401) or missing (404). Raises StressError otherwise."""
        for path in paths:
            result = await self.post(path, {})
            if result.status in (200, 400, 422):
                continue
            raise StressError(f"admin API of {self._target.origin}: {result.error}")
