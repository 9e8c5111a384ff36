"""Kubernetes timestamps (RFC 3339, `Z` for UTC) to and from epoch seconds."""

from __future__ import annotations

import datetime as dt
from typing import Any


def epoch_seconds(text: Any) -> float | None:
    """`2026-12-03T10:00:00Z` as epoch seconds; None for a missing, empty or unparsable value."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def rfc3339(epoch: float | None) -> str | None:
    """Epoch seconds as `2026-12-03T10:00:00Z` (whole seconds, UTC); None stays None."""
    if epoch is None:
        return None
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
