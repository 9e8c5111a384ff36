"""Trace readers on small real slices, and every bad input they must name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from forescale_sim.errors import TraceError
from forescale_sim.trace_types import LLM, ENCODER
from forescale_sim.traces import load_trace


def test_azure_slice_reads_arrivals_and_tokens(azure_slice: Path) -> None:
    trace = load_trace(azure_slice, "azure")
    assert len(trace) == 2000
    assert trace.kind == LLM
    assert trace.arrivals[0] == 0.0 and np.all(np.diff(trace.arrivals) >= 0)
    # the first row of the real trace: 374 context tokens, 44 generated
    assert (trace.input_tokens[0], trace.output_tokens[0]) == (374, 44)
    # the second request arrived 4.3145788 s after the first (18:15:46.6805900 -> 50.9951690)
    assert trace.arrivals[1] == pytest.approx(4.314579, abs=1e-6)


def test_mooncake_slice_spreads_its_3s_grid(mooncake_slice: Path) -> None:
    trace = load_trace(mooncake_slice, "mooncake", seed=0)
    assert len(trace) == 500
    assert np.all(np.diff(trace.arrivals) >= 0)
    # the raw stamps repeat (~10 per 3 s); after spreading, no two requests share one
    assert np.unique(trace.arrivals).size == 500
    assert any("grid" in note for note in trace.notes)
    # token counts travel with their request: the (input, output) pairs are unchanged
    raw = [json.loads(line) for line in mooncake_slice.read_text().splitlines()]
    assert sorted((r["input_length"], r["output_length"]) for r in raw) == sorted(zip(trace.input_tokens, trace.output_tokens))


def test_mooncake_spreading_is_seeded(mooncake_slice: Path) -> None:
    a = load_trace(mooncake_slice, "mooncake", seed=1).arrivals
    b = load_trace(mooncake_slice, "mooncake", seed=1).arrivals
    c = load_trace(mooncake_slice, "mooncake", seed=2).arrivals
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_servegen_slice_sums_clients_and_compresses(servegen_slice: Path) -> None:
    trace = load_trace(servegen_slice, "servegen", compress=24)
    assert trace.kind == ENCODER
    assert trace.tick_seconds == 1.0
    # one day of 600 s windows at 24x compression replays in 3,600 s at most
    assert trace.counts.size <= 3600
    assert any("compressed 24x" in note for note in trace.notes)
    rows = [line.split(",") for f in sorted(servegen_slice.glob("*.csv")) for line in f.read_text().splitlines()]
    # the replayed mean rate over the busy windows matches the summed rate column within 10%
    total_rate = sum(float(r[1]) for r in rows if float(r[0]) < 86400) / 144
    assert trace.counts.sum() / (144 * 25) == pytest.approx(total_rate, rel=0.1)


def test_rate_csv(traces_dir: Path, tmp_path: Path) -> None:
    src = traces_dir / "ms-cloud-monitoring" / "mongodb-application-rps" / "mongo-02.csv"
    if not src.is_file():
        pytest.skip(f"{src} not found; set FORESCALE_TRACES")
    path = tmp_path / "rates.csv"
    path.write_text("\n".join(src.read_text().splitlines()[:31]) + "\n")  # 30 minutes at 1 min
    trace = load_trace(path, "csv")
    assert trace.counts.size == 30 * 60
    assert trace.counts[:60].mean() == pytest.approx(319.88, rel=0.05)  # the first row's rate


BAD = [
    # (format, file name, content or None for missing, words the message must hold)
    ("azure", "missing.csv", None, "no such file"),
    ("azure", "empty.csv", "", "empty"),
    ("azure", "wrong.csv", "time,value\n2023-01-01 00:00:00,3\n", "wrong format"),
    ("azure", "header.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n", "no requests"),
    ("azure", "unsorted.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:50,1,1\n2023-11-16 18:15:46,1,1\n", "not sorted"),
    ("azure", "badrow.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:50,x,1\n", "line 2"),
    ("mooncake", "missing.jsonl", None, "no such file"),
    ("mooncake", "empty.jsonl", "", "empty"),
    ("mooncake", "wrong.jsonl", "TIMESTAMP,ContextTokens\n", "wrong format at line 1"),
    ("mooncake", "unsorted.jsonl", '{"timestamp": 3000, "input_length": 1, "output_length": 1}\n{"timestamp": 0, "input_length": 1, "output_length": 1}\n', "not sorted"),
    ("servegen", "missing", None, "no such file"),
    ("servegen", "empty.csv", "", "empty"),
    ("servegen", "wrong.csv", '{"timestamp": 0}\n', "wrong format"),
    ("servegen", "unsorted.csv", "600,1,1,Gamma,1,1\n0,1,1,Gamma,1,1\n", "not sorted"),
    ("servegen", "zero.csv", "0,0,0,,0,0\n600,0,0,,0,0\n", "rate 0"),
    ("csv", "missing.csv", None, "no such file"),
    ("csv", "empty.csv", "", "empty"),
    ("csv", "wrong.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:50,1,1\n", "wrong format"),
    ("csv", "unsorted.csv", "timestamp,value\n120,5\n60,5\n", "not sorted"),
]


@pytest.mark.parametrize("fmt,name,content,words", BAD, ids=[f"{b[0]}-{b[1]}" for b in BAD])
def test_bad_trace_gets_a_clear_message(tmp_path: Path, fmt: str, name: str, content: str | None, words: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(TraceError) as err:
        load_trace(path, fmt)
    assert words in str(err.value)
    assert str(path) in str(err.value) or fmt == "servegen"


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="unknown trace format 'parquet'"):
        load_trace(tmp_path / "x", "parquet")
