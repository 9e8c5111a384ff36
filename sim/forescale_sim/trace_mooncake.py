"""Reader for the Mooncake (Kimi) conversation trace: JSON lines with
`timestamp` (ms from the trace start), `input_length`, `output_length`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .errors import TraceError
from .trace_files import existing_file
from .trace_types import RequestTrace, check_sorted

WHAT = "a Mooncake JSONL trace with timestamp (ms), input_length and output_length on each line"


def read_mooncake(path: str | Path) -> RequestTrace:
    """Arrivals (s from the first request) and token counts of a Mooncake trace."""
    path = existing_file(path, WHAT)
    stamps, inputs, outputs = [], [], []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                stamps.append(float(item["timestamp"]) / 1000.0)
                inputs.append(float(item["input_length"]))
                outputs.append(float(item["output_length"]))
            except (ValueError, KeyError, TypeError):
                raise TraceError(f"{path}: wrong format at line {number}: expected a JSON object with numeric timestamp, input_length and output_length ({WHAT})") from None
    if not stamps:
        raise TraceError(f"{path}: has no requests")
    times = np.asarray(stamps)
    check_sorted(times, str(path), unit="line")
    return RequestTrace(str(path), times - times[0], np.asarray(inputs), np.asarray(outputs))
