"""Reader for the Azure LLM inference trace 2023 (Patel et al., Splitwise):
CSV with one row per request, `TIMESTAMP,ContextTokens,GeneratedTokens`."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .errors import TraceError
from .trace_files import existing_file
from .trace_types import RequestTrace, check_sorted, check_tokens

COLUMNS = ("timestamp", "contexttokens", "generatedtokens")
WHAT = "an Azure LLM trace CSV with columns TIMESTAMP,ContextTokens,GeneratedTokens"


def read_azure(path: str | Path) -> RequestTrace:
    """Arrivals (s from the first request) and token counts of an Azure trace."""
    path = existing_file(path, WHAT)
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [h.strip().lower() for h in next(reader, [])]
        if any(c not in header for c in COLUMNS):
            raise TraceError(f"{path}: wrong format: header {header!r} lacks {', '.join(c for c in COLUMNS if c not in header)} (expected {WHAT})")
        t_i, in_i, out_i = (header.index(c) for c in COLUMNS)
        stamps, inputs, outputs = [], [], []
        for number, row in enumerate(reader, start=2):
            if not row or not any(cell.strip() for cell in row):
                continue
            try:
                stamps.append(row[t_i].strip().replace(" ", "T", 1).rstrip("Z"))
                inputs.append(int(row[in_i]))
                outputs.append(int(row[out_i]))
            except (IndexError, ValueError):
                raise TraceError(f"{path}: line {number} is not 'timestamp,context tokens,generated tokens': {row!r}") from None
    if not stamps:
        raise TraceError(f"{path}: has a header but no requests")
    try:
        times = np.array(stamps, dtype="datetime64[ns]").astype(np.int64).astype(np.float64) / 1e9
    except ValueError as exc:
        raise TraceError(f"{path}: a TIMESTAMP is not an ISO date-time ({exc})") from None
    check_sorted(times, str(path), unit="request")
    check_tokens(np.asarray(inputs, dtype=np.float64), np.asarray(outputs, dtype=np.float64), str(path), unit="request")
    return RequestTrace(
        name=str(path),
        arrivals=times - times[0],
        input_tokens=np.asarray(inputs, dtype=np.float64),
        output_tokens=np.asarray(outputs, dtype=np.float64),
    )
