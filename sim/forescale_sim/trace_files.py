"""Checks every trace reader makes before parsing: the file exists, is a
file, and is not empty. Kept apart so each reader's error reads the same."""

from __future__ import annotations

from pathlib import Path

from .errors import TraceError


def existing_file(path: str | Path, what: str) -> Path:
    """The path as a Path; TraceError when it is missing, a folder or empty."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file (expected {what})")
    if path.is_dir():
        raise TraceError(f"{path}: is a folder, expected {what}")
    if path.stat().st_size == 0:
        raise TraceError(f"{path}: the file is empty (expected {what})")
    return path
