"""The trace-reader factory: one reader per `--format`."""

from __future__ import annotations

import csv
from pathlib import Path

from .errors import TraceError
from .trace_azure import read_azure
from .trace_mooncake import read_mooncake
from .trace_rate_csv import read_rate_csv
from .trace_servegen import DEFAULT_COMPRESS, read_servegen
from .trace_types import RateTrace, RequestTrace, check_span

FORMATS = ("azure", "mooncake", "servegen", "csv")


def load_trace(path: str | Path, fmt: str, *, seed: int = 0, compress: float | None = None) -> RequestTrace | RateTrace:
    """Read a trace in `fmt`; TraceError with a clear message on any bad input.

    `compress` applies to rate traces only (ServeGen defaults to 24x, CSV to 1x).
    """
    readers = {
        "azure": lambda: read_azure(path),
        "mooncake": lambda: read_mooncake(path, seed=seed),
        "servegen": lambda: read_servegen(path, compress=compress or DEFAULT_COMPRESS, seed=seed),
        "csv": lambda: read_rate_csv(path, compress=compress or 1.0, seed=seed),
    }
    if fmt not in readers:
        raise TraceError(f"unknown trace format {fmt!r}; expected one of {', '.join(FORMATS)}")
    try:
        trace = readers[fmt]()
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); expected a {fmt} trace") from None
    except csv.Error as exc:  # e.g. a field over the 131072-character limit
        raise TraceError(f"{path}: not a readable CSV file ({exc}); expected a {fmt} trace") from None
    except RecursionError:
        raise TraceError(f"{path}: JSON nested too deeply; expected a {fmt} trace") from None
    check_span(trace.duration_seconds, str(path))
    return trace
