"""Parse the duration strings users type: `60s`, `1m`, `180`, `1h30m`, `500ms`."""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def parse_duration(text: str | float | int) -> float:
    """Seconds in `text`; a bare number means seconds. Raises ValueError naming the input."""
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        raw = str(text).strip().lower()
        if not raw:
            raise ValueError("empty duration; write e.g. 60s, 1m or 180")
        try:
            seconds = float(raw)
        except ValueError:
            pos, seconds = 0, 0.0
            for match in _PART.finditer(raw):
                if match.start() != pos:
                    break
                seconds += float(match.group(1)) * _UNITS[match.group(2)]
                pos = match.end()
            if pos != len(raw) or pos == 0:
                raise ValueError(f"cannot read duration {text!r}; write e.g. 60s, 1m, 1h30m or 180") from None
    if not seconds > 0 or seconds != seconds:
        raise ValueError(f"duration {text!r} must be positive")
    return seconds
