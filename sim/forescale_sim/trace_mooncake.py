"""Reader for the Mooncake (Kimi) conversation trace: JSON lines with
`timestamp` (ms from the trace start), `input_length`, `output_length`.

The released timestamps sit on a ~3 s grid: 12,031 requests share 1,180
distinct stamps, ~10 per stamp. Replayed literally, every 3 s ten prompts
would hit the pods in the same millisecond, a burst the real service never
saw. So when most requests share a stamp, each stamp's requests are spread
uniformly at random (seeded) over the interval up to the next distinct
stamp (capped at the median interval). The notes say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .errors import TraceError
from .trace_files import existing_file
from .trace_types import RequestTrace, check_sorted, check_tokens

WHAT = "a Mooncake JSONL trace with timestamp (ms), input_length and output_length on each line"


def read_mooncake(path: str | Path, seed: int = 0) -> RequestTrace:
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
    check_tokens(np.asarray(inputs), np.asarray(outputs), str(path), unit="line")
    times = np.asarray(stamps)
    check_sorted(times, str(path), unit="line")
    times = times - times[0]
    times, order, notes = _dequantize(times, seed)
    return RequestTrace(str(path), times, np.asarray(inputs)[order], np.asarray(outputs)[order], notes=notes)


def _dequantize(times: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Spread requests that share a timestamp over the gap to the next stamp.
    Returns the new sorted times, the order applied, and a note."""
    if times.size < 3 or np.mean(np.diff(times) == 0) < 0.5:
        return times, np.arange(times.size), ()
    stamps, first, counts = np.unique(times, return_index=True, return_counts=True)
    gaps = np.diff(stamps)
    slot = np.minimum(np.append(gaps, np.median(gaps)), np.median(gaps))
    rng = np.random.default_rng(seed)
    spread = times + rng.uniform(0.0, 1.0, times.size) * np.repeat(slot, counts)
    order = np.argsort(spread, kind="stable")
    note = (f"timestamps on a {np.median(gaps):g} s grid ({stamps.size} distinct for {times.size} requests): "
            f"each stamp's requests spread uniformly over the following {np.median(gaps):g} s (seed {seed})")
    return spread[order], order, (note,)
