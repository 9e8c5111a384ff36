"""Adversarial CLI files (issue 19, defect 13): tracebacks and silent mistakes of backtest, train and replay.

Table cases pin each reported defect; the property at the end draws hostile
files (long fields, deep nesting, sparse giants, epochs in every unit, extreme
values and token counts) and asks for a result or a one-line error, never a
traceback. FORESCALE_CAMPAIGN_EXAMPLES sets its size (60 here, more in
`python -m bench.campaign_hardening`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from campaign_tally import TALLY
from forescale_predictor.cli_backtest import app as backtest_app
from forescale_predictor.cli_train import app as train_app
from forescale_predictor.timeparse import parse_times
from forescale_sim.cli import app as replay_app
from forescale_sim.trace_files import epoch_seconds
from test_bad_cli_inputs import MemoryCap, _check

EXAMPLES = int(os.environ.get("FORESCALE_CAMPAIGN_EXAMPLES", "60"))
RUNNER = CliRunner()
REPLAY = ["--policies", "static", "--forecaster", "last", "--json", "--incidents", "none"]


def _rate_csv(rows: int = 200, step: float = 15.0, start: float = 1_700_000_000, scale: float = 1.0, value=None) -> str:
    lines = ["timestamp,value"]
    for i in range(rows):
        v = value if value is not None else 50 + 10 * np.sin(i / 5)
        lines.append(f"{(start + i * step) * scale:.0f},{v}")
    return "\n".join(lines) + "\n"


def _invoke(command: str, path: Path, tmp: Path, fmt: str = "csv", extra: list[str] = ()):
    if command == "backtest":
        return RUNNER.invoke(backtest_app, ["--csv", str(path), "--models", "last", "--quiet", "--json", *extra])
    if command == "train":
        return RUNNER.invoke(train_app, ["--csv", str(path), "--out", str(tmp / "model.pt"), "--epochs", "1", "--quiet",
                                         "--feature", "rate", *extra])
    return RUNNER.invoke(replay_app, ["--trace", str(path), "--format", fmt, *REPLAY, *extra])


def _error(result) -> str:
    _check(result, "hostile file")
    assert result.exit_code != 0
    return result.output.strip().splitlines()[-1]


COMMANDS = ["backtest", "train", "replay"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_csv_field_over_128_kib_is_a_one_line_error(command, tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("timestamp,value\n1700000000," + "9" * (200 << 10) + "\n1700000015,3\n")
    assert "not a readable CSV file" in _error(_invoke(command, path, tmp_path))


@pytest.mark.parametrize("command", COMMANDS)
def test_a_2_gb_sparse_file_is_refused_by_size_before_it_is_read(command, tmp_path):
    path = tmp_path / "sparse.csv"
    with path.open("wb") as handle:
        handle.write(b"timestamp,value\n")
        handle.truncate(2 << 30)  # no disk used: a hole
    with MemoryCap(extra=1 << 30):  # were it read whole, this would fail with MemoryError, not the message
        message = _error(_invoke(command, path, tmp_path))
    assert "2048 MiB" in message and "limited to 1024 MiB" in message


@pytest.mark.parametrize("command,fmt", [("backtest", None), ("replay", "mooncake")])
def test_deeply_nested_jsonl_is_a_one_line_error(command, fmt, tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"timestamp": 1, "input_length": 5, "output_length": 3}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    assert "nested too deeply" in _error(_invoke(command, path, tmp_path, fmt=fmt or "csv"))


@pytest.mark.parametrize("out", ["a-folder", "a-file/model.pt"])
def test_train_checks_its_output_path_before_training(out, tmp_path):
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("x")
    data = tmp_path / "series.csv"
    data.write_text(_rate_csv())
    result = RUNNER.invoke(train_app, ["--csv", str(data), "--out", str(tmp_path / out), "--epochs", "1"])
    message = _error(result)
    assert "--out" in message and "training on" not in result.output  # refused before any training


@pytest.mark.parametrize("value", ["1e308", "-1e308", "1e13"])
def test_train_refuses_values_it_cannot_scale_and_writes_no_model(value, tmp_path):
    data = tmp_path / "series.csv"
    data.write_text(_rate_csv(value=value))
    assert "cannot be trained on" in _error(_invoke("train", data, tmp_path))
    assert not (tmp_path / "model.pt").exists()


EPOCHS = [(1.0, 1_700_000_000.0), (1e3, 1_700_000_000.0), (1e6, 1_700_000_000.0), (1e9, 1_700_000_000.0)]


@pytest.mark.parametrize("scale,seconds", EPOCHS, ids=["s", "ms", "us", "ns"])
def test_epochs_in_every_unit_read_as_seconds_alike_in_backtest_and_replay(scale, seconds):
    raw = np.array([seconds * scale, (seconds + 15) * scale])
    assert parse_times([f"{x:.0f}" for x in raw]).tolist() == pytest.approx([seconds, seconds + 15])
    assert epoch_seconds(raw).tolist() == pytest.approx([seconds, seconds + 15])


def test_replay_reads_millisecond_epochs_as_backtest_does(tmp_path):
    path = tmp_path / "ms.csv"
    path.write_text(_rate_csv(rows=300, step=1.0, scale=1e3))
    result = _invoke("replay", path, tmp_path)
    _check(result, "replay ms")
    assert result.exit_code == 0, result.output[-500:]
    duration = json.loads(result.output[result.output.index("{"):])["duration_seconds"]
    assert duration < 400  # 300 one-second rows, not 300,000 s


TOKENS = [("NaN", "mooncake"), ("1e12", "mooncake"), ("-5", "mooncake"), ("1000000000000", "azure"), ("-5", "azure")]


@pytest.mark.parametrize("tokens,fmt", TOKENS)
def test_replay_refuses_token_counts_that_are_not_counts(tokens, fmt, tmp_path):
    if fmt == "mooncake":
        path = tmp_path / "t.jsonl"
        path.write_text("".join(f'{{"timestamp": {i * 100}, "input_length": {tokens if i == 3 else 100}, "output_length": 20}}\n'
                                for i in range(2000)))
    else:
        path = tmp_path / "t.csv"
        rows = [f"2023-11-16 18:{i // 60:02d}:{i % 60:02d}.0,{tokens if i == 3 else 100},20" for i in range(2000)]
        path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    assert "token count" in _error(_invoke("replay", path, tmp_path, fmt=fmt))


@st.composite
def hostile_file(draw) -> tuple[bytes, str]:
    kind = draw(st.sampled_from(["long-field", "deep-json", "epoch-units", "extreme-values", "tokens"]))
    if kind == "long-field":
        size = draw(st.integers(100 << 10, 300 << 10))
        return f"timestamp,value\n1700000000,{'7' * size}\n".encode(), "csv"
    if kind == "deep-json":
        depth = draw(st.integers(1_000, 60_000))
        return ("[" * depth + "]" * depth + "\n").encode(), "mooncake"
    if kind == "epoch-units":
        scale = draw(st.sampled_from([1.0, 1e3, 1e6, 1e9]))
        return _rate_csv(rows=draw(st.integers(2, 150)), step=draw(st.sampled_from([1.0, 15.0])), scale=scale).encode(), "csv"
    if kind == "extreme-values":
        value = draw(st.sampled_from(["1e308", "-1e308", "nan", "inf", "-1", "1e13", "0"]))
        return _rate_csv(rows=draw(st.integers(2, 120)), value=value).encode(), "csv"
    tokens = draw(st.sampled_from(["NaN", "1e12", "-1", "1e400", "\"x\"", "null", "3"]))
    lines = [f'{{"timestamp": {i * 100}, "input_length": {tokens}, "output_length": 5}}' for i in range(draw(st.integers(1, 50)))]
    return ("\n".join(lines) + "\n").encode(), "mooncake"


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=hostile_file(), command=st.sampled_from(["backtest", "replay"]))
def test_hostile_files_give_a_result_or_a_one_line_error(case, command, tmp_path_factory):
    data, fmt = case
    TALLY.cases(f"cli hostile files ({command})")
    tmp = tmp_path_factory.mktemp("hostile")
    path = tmp / ("f.jsonl" if fmt == "mooncake" else "f.csv")
    path.write_bytes(data)
    with MemoryCap():
        result = _invoke(command, path, tmp, fmt=fmt)
    _check(result, f"{command} {fmt}")
