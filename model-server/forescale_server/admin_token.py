"""The admin API's bearer token: read once at start-up, compared in constant time."""

from __future__ import annotations

import hmac
import os
from pathlib import Path
from typing import Mapping


def clean_token(raw: str, source: str) -> str:
    """`raw` stripped of surrounding whitespace; a ValueError naming `source` when nothing usable is left."""
    token = raw.strip()
    if not token:
        raise ValueError(f"{source} is empty or only whitespace")
    bad = next((c for c in token if not 0x20 <= ord(c) <= 0x7E), None)
    if bad is not None:
        raise ValueError(f"{source} holds the character U+{ord(bad):04X}, which an Authorization header cannot carry (printable ASCII only)")
    return token


class AdminToken:
    """Holds the token (never logged, never in repr) and checks Authorization headers."""

    def __init__(self, token: str | None):
        self._token = token.encode() if token else None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "AdminToken":
        """FORESCALE_ADMIN_TOKEN_FILE (a file, e.g. a mounted Secret) wins over
        FORESCALE_ADMIN_TOKEN. With neither the admin API is off.

        Both forms follow one rule (the operator's too): surrounding whitespace
        is stripped (`$'tok\\n'` is `tok`), and a token that is only whitespace
        or holds anything but printable ASCII is refused at start-up: no client
        could send it in an Authorization header.
        """
        env = os.environ if env is None else env
        path = env.get("FORESCALE_ADMIN_TOKEN_FILE")
        if path:
            try:
                text = Path(path).read_text()
            except OSError as exc:
                raise ValueError(f"FORESCALE_ADMIN_TOKEN_FILE={path!r} cannot be read: {exc.strerror}") from None
            except UnicodeDecodeError:
                raise ValueError(f"FORESCALE_ADMIN_TOKEN_FILE={path!r} is not UTF-8 text") from None
            return cls(clean_token(text, f"FORESCALE_ADMIN_TOKEN_FILE={path!r}"))
        raw = env.get("FORESCALE_ADMIN_TOKEN")
        if not raw:
            return cls(None)
        return cls(clean_token(raw, "FORESCALE_ADMIN_TOKEN"))

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
