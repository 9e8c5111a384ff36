"""Read the series a CLI command is pointed at, whatever its kind.

- `*.jsonl`: a Mooncake request trace, binned into a request rate;
- a CSV with `TIMESTAMP` and token columns but no value column: an Azure LLM
  request trace, binned into a request rate;
- any other CSV: a value series, columns found as docs/predictor.md says.

Request traces are binned at the given step (15 s when none is given).
Value series keep their own step unless another is given.
"""

from __future__ import annotations

import csv
from pathlib import Path

from .csv_source import RawSeries, load_csv
from .errors import SeriesError
from .forecast_types import History
from .input_files import readable
from .request_traces import is_request_trace_csv, load_azure_trace, load_mooncake_trace
from .resample import native_step, raw_to_history

TRACE_STEP_SECONDS = 15.0


def detect_kind(path: Path) -> str:
    """`mooncake`, `azure` or `csv`."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return "mooncake"
    try:
        with readable(path), path.open(newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), [])
    except OSError as exc:
        raise SeriesError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SeriesError(f"{path} is not a UTF-8 text file") from None
    return "azure" if is_request_trace_csv(header) else "csv"


def read_series(
    path: str | Path,
    *,
    step_seconds: float | None = None,
    time_column: str | None = None,
    value_column: str | None = None,
    warnings: list[str] | None = None,
) -> tuple[History, str]:
    """A one-feature History (`value`) on a regular grid, and the kind of file it came from.

    Notes about repaired input (merged repeated timestamps) are appended to `warnings`.
    """
    path = Path(path)
    if not path.exists():
        raise SeriesError(f"{path} does not exist")
    kind = detect_kind(path)
    if kind == "mooncake":
        raw: RawSeries = load_mooncake_trace(path, step_seconds or TRACE_STEP_SECONDS)
    elif kind == "azure":
        raw = load_azure_trace(path, step_seconds or TRACE_STEP_SECONDS)
    else:
        raw = load_csv(path, time_column=time_column, value_column=value_column)
    if warnings is not None:
        warnings.extend(raw.warnings)
    if len(raw) < 2:
        raise SeriesError(f"{path} has {len(raw)} sample(s); a series needs many more")
    step = step_seconds or native_step(raw.times)
    return raw_to_history(raw, step), kind
