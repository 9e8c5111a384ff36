"""Bad-input campaign, CLI inputs: the CSV of `forescale backtest` and the traces of `forescale replay`
(random bytes, bad headers, NaN, unsorted and duplicated timestamps, wrong formats).

Property: a result (exit 0) or a clear error and a non-zero exit; never a
traceback. Run in-process with Typer's runner (a subprocess per case would
cost seconds of imports); an exception escaping the command shows up as
`result.exception`.
"""

from __future__ import annotations

import math
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from campaign_tally import TALLY
from forescale_predictor.cli_backtest import app as backtest_app
from forescale_sim.cli import app as replay_app

EXAMPLES = int(os.environ.get("FORESCALE_CAMPAIGN_EXAMPLES", "60"))
RUNNER = CliRunner()
HEADERS = ["timestamp,value", "time,value", "TIMESTAMP,Value", "ts,val", "timestamp", "value,timestamp", "", "timestamp,value,extra",
           "TIMESTAMP,ContextTokens,GeneratedTokens", "\ufefftimestamp,value"]
VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.sampled_from(["NaN", "", "abc", "-1", "1e400", " 3 "]),
                   st.integers(min_value=-5, max_value=10**6).map(str))
# Spans mostly stay within a day: a wider gap makes both commands allocate a grid of billions of points
# (test_a_gap_of_decades_is_a_one_line_error below); MemoryCap keeps any that slip through from taking
# the shared machine's memory, and those count as hits of the known bug.
TIMES = st.one_of(st.integers(min_value=1_700_000_000, max_value=1_700_086_400).map(str),
                  st.sampled_from(["2023-11-16 18:15:46.6805900", "2023-11-16T18:15:47Z", "yesterday", "", "NaN"]))


@st.composite
def csv_text(draw) -> bytes:
    """A CSV with a drawn header and rows: sorted, unsorted, duplicated or garbage."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=300))
    header = draw(st.sampled_from(HEADERS))
    n = draw(st.integers(0, 80))
    order = draw(st.sampled_from(["sorted", "unsorted", "duplicated", "random"]))
    if order == "random":
        rows = [f"{draw(TIMES)},{draw(VALUES)}" for _ in range(min(n, 12))]
    else:
        start, step = 1_700_000_000, draw(st.sampled_from([1, 15, 60, 3600]))
        times = [start + i * step for i in range(n)]
        if order == "unsorted":
            times = draw(st.permutations(times))
        elif order == "duplicated":
            times = [t for t in times for _ in (0, 1)]
        values = [50 + 10 * math.sin(i / 5) for i in range(len(times))]
        if draw(st.booleans()):
            values = [draw(st.sampled_from([v, float("nan"), v, v])) for v in values]
        rows = [f"{t},{v}" for t, v in zip(times, values)]
    return ("\n".join([header, *rows]) + "\n").encode()


def _utf8(data: bytes) -> bytes:
    """Replay's fuzz stays UTF-8: non-UTF-8 bytes are a known bug (test_a_trace_that_is_not_utf8 below)."""
    return data.decode("utf-8", errors="replace").encode()


def _write(data: bytes, suffix: str) -> Path:
    handle = tempfile.NamedTemporaryFile("wb", suffix=suffix, delete=False)
    with handle:
        handle.write(data)
    return Path(handle.name)


class MemoryCap:
    """Lowers this process's address-space limit to its current size + `extra` around one command, so the
    known huge-grid bug raises MemoryError here instead of taking the shared machine (the OOM killer)."""

    def __init__(self, extra: int = 3 << 30) -> None:
        self.extra = extra

    def __enter__(self) -> "MemoryCap":
        self.saved = resource.getrlimit(resource.RLIMIT_AS)
        size = next(int(line.split()[1]) * 1024 for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith("VmSize:"))
        hard = self.saved[1]
        soft = size + self.extra if hard == resource.RLIM_INFINITY else min(size + self.extra, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        return self

    def __exit__(self, *exc: object) -> None:
        resource.setrlimit(resource.RLIMIT_AS, self.saved)


#: reported bugs, each pinned by a strict xfail below: (exception type, words in its message, name)
KNOWN_BUGS: list[tuple[type, str, str]] = []


def _known_bug(result) -> bool:
    exc = result.exception
    for kind, words, name in KNOWN_BUGS:
        if isinstance(exc, kind) and words in str(exc):
            TALLY.cases(f"cli known bug hit: {name} (reported)")
            return True
    return False


def _check(result, what: str) -> None:
    if _known_bug(result):
        return
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{what}: unhandled {type(result.exception).__name__}: {result.exception}\n{result.output[-1500:]}")
    assert "Traceback" not in result.output, result.output[-1500:]
    if result.exit_code != 0:
        lines = [line for line in result.output.strip().splitlines() if line.strip()]
        assert lines, f"{what}: exit {result.exit_code} without a message"
        assert len(lines[-1]) > 10, f"{what}: unclear error {lines[-1]!r}"


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=csv_text())
def test_backtest_csv_gives_a_result_or_a_one_line_error(data):
    TALLY.cases("cli backtest --csv")
    path = _write(data, ".csv")
    try:
        with MemoryCap():
            result = RUNNER.invoke(backtest_app, ["--csv", str(path), "--models", "last,ewm", "--quiet", "--json"])
    finally:
        path.unlink()
    _check(result, "backtest")


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.one_of(csv_text().map(_utf8), st.binary(max_size=200).map(_utf8),
                      st.lists(st.sampled_from(['{"timestamp": 1, "input_length": 5, "output_length": 3}', "{}", "[1,2]", "not json",
                                                '{"timestamp": "x"}', '{"timestamp": -5, "input_length": -1}']),
                               max_size=6).map(lambda lines: "\n".join(lines).encode())),
       fmt=st.sampled_from(["csv", "azure", "mooncake", "nonsense"]))
def test_replay_trace_gives_a_result_or_a_one_line_error(data, fmt):
    TALLY.cases("cli replay --trace")
    path = _write(data, ".jsonl" if fmt == "mooncake" else ".csv")
    try:
        with MemoryCap():
            result = RUNNER.invoke(replay_app, ["--trace", str(path), "--format", fmt, "--policies", "static",
                                                "--forecaster", "last", "--json", "--incidents", "none"])
    finally:
        path.unlink()
    _check(result, f"replay --format {fmt}")


# Found by this campaign (UnicodeDecodeError escaped as a traceback); fixed in forescale_sim.traces.load_trace.
@pytest.mark.parametrize("fmt", ["csv"])
def test_a_trace_that_is_not_utf8_is_a_one_line_error(fmt):
    path = _write(b"\x80\x81timestamp,value\n", ".csv")
    try:
        result = RUNNER.invoke(replay_app, ["--trace", str(path), "--format", fmt, "--policies", "static", "--json"])
    finally:
        path.unlink()
    _check(result, "replay of a non-UTF-8 trace")


def _run_with_memory_cap(args: list[str]) -> subprocess.CompletedProcess:
    """The real command in a subprocess capped at 4 GiB of address space: the bug must not take the machine."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run([sys.executable, "-m", "forescale_cli.main", *args], capture_output=True, text=True,
                          timeout=120, preexec_fn=cap)


# Found by the long form of this campaign (it was OOM-killed: the grid was sized by the time span, not by the
# rows); fixed by the span checks in forescale_predictor.resample and forescale_sim.trace_types.
@pytest.mark.parametrize("command,last", [("backtest", "2000000000"), ("replay", "2000000000"), ("replay", "1e20")])
def test_a_gap_of_decades_is_a_one_line_error(command, last, tmp_path):
    path = tmp_path / "gap.csv"
    path.write_text(f"timestamp,value\n0,1\n1,3\n2,2\n3,4\n{last},2\n")
    args = (["backtest", "--csv", str(path), "--models", "last", "--quiet", "--json"] if command == "backtest" else
            ["replay", "--trace", str(path), "--format", "csv", "--policies", "static", "--forecaster", "last", "--json",
             "--incidents", "none"])
    result = _run_with_memory_cap(args)
    assert "Traceback" not in result.stderr and "Error" not in result.stderr.splitlines()[-1], result.stderr[-500:]


# Found by this campaign ('could not broadcast'); a trace shorter than a minute is now a one-line error.
def test_a_two_row_rate_csv_is_a_result_or_a_one_line_error():
    path = _write(b"timestamp,value\n1700000000,50.0\n1700000001,51.9\n", ".csv")
    try:
        result = RUNNER.invoke(replay_app, ["--trace", str(path), "--format", "csv", "--policies", "static",
                                            "--forecaster", "last", "--json", "--incidents", "none"])
    finally:
        path.unlink()
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
