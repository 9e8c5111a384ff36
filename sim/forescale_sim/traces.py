"""The trace-reader factory: one reader per `--format`."""

from __future__ import annotations

from pathlib import Path

from .errors import TraceError
from .trace_azure import read_azure
from .trace_mooncake import read_mooncake
from .trace_rate_csv import read_rate_csv
from .trace_servegen import DEFAULT_COMPRESS, read_servegen
from .trace_types import RateTrace, RequestTrace

FORMATS = ("azure", "mooncake", "servegen", "csv")


def load_trace(path: str | Path, fmt: str, *, seed: int = 0, compress: float | None = None) -> RequestTrace | RateTrace:
    """Read a trace in `fmt`; TraceError with a clear message on any bad input.

    `compress` applies to rate traces only (ServeGen defaults to 24x, CSV to 1x).
    """
    if fmt == "azure":
        return read_azure(path)
    if fmt == "mooncake":
        return read_mooncake(path, seed=seed)
    if fmt == "servegen":
        return read_servegen(path, compress=compress or DEFAULT_COMPRESS, seed=seed)
    if fmt == "csv":
        return read_rate_csv(path, compress=compress or 1.0, seed=seed)
    raise TraceError(f"unknown trace format {fmt!r}; expected one of {', '.join(FORMATS)}")
