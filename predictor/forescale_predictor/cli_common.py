"""What the predictor's CLI commands share: argument parsing and error reporting."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer

from .durations import parse_duration


def duration(text: str | None, option: str) -> float | None:
    """Seconds of a duration option, or a usage error naming the option."""
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None


def fail(command: str, message: str, code: int = 2) -> NoReturn:
    """Print a one-line error on stderr and exit with `code` (no traceback)."""
    print(f"forescale {command}: error: {message}", file=sys.stderr)
    raise typer.Exit(code)


def emit_json(obj: Any) -> None:
    """Exactly one JSON object on stdout."""
    sys.stdout.write(json.dumps(obj, allow_nan=False, default=_plain) + "\n")
    sys.stdout.flush()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def clean(obj: Any) -> Any:
    """NaN and infinities become null so the output is valid JSON."""
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    return obj


def _plain(value: Any) -> Any:
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(value)
