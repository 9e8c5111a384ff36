"""The built-in calibration set: real sentences shipped with the server
(see calibration_sentences.txt for their source and licence)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_FILE = Path(__file__).with_name("calibration_sentences.txt")


@lru_cache(maxsize=1)
def calibration_sentences() -> tuple[str, ...]:
    """All calibration sentences (300), in file order."""
    lines = _FILE.read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))
