"""The admin API's bearer token: read once at start-up, compared in constant time."""

from __future__ import annotations

import hmac
import os
from pathlib import Path
from typing import Mapping


class AdminToken:
    """Holds the token (never logged, never in repr) and checks Authorization headers."""

    def __init__(self, token: str | None):
        self._token = token.encode() if token else None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "AdminToken":
        """FORESCALE_ADMIN_TOKEN_FILE (a file, e.g. a mounted Secret) wins over
        FORESCALE_ADMIN_TOKEN. With neither the admin API is off."""
        env = os.environ if env is None else env
        path = env.get("FORESCALE_ADMIN_TOKEN_FILE")
        if path:
            try:
                token = Path(path).read_text().strip()
            except OSError as exc:
                raise ValueError(f"FORESCALE_ADMIN_TOKEN_FILE={path!r} cannot be read: {exc.strerror}") from None
            if not token:
                raise ValueError(f"FORESCALE_ADMIN_TOKEN_FILE={path!r} is empty")
            return cls(token)
        return cls(env.get("FORESCALE_ADMIN_TOKEN") or None)

    @property
    def enabled(self) -> bool:
        """False when no token is configured: the admin API answers 404."""
        return self._token is not None

    def check(self, authorization: str | None) -> bool:
        """True when the header is `Bearer <token>`; constant-time in the token."""
        if self._token is None or not authorization:
            return False
        scheme, _, supplied = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(supplied.strip().encode(), self._token)

    def __repr__(self) -> str:  # keep the secret out of logs and tracebacks
        return f"AdminToken(enabled={self.enabled})"
