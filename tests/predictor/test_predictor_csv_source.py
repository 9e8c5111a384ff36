from pathlib import Path

import numpy as np
import pytest

from forescale_predictor.csv_source import load_csv
from forescale_predictor.errors import SeriesError
from forescale_predictor.series_input import read_series


def write(tmp_path: Path, text: str, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text",
    [
        '"TimeStamp","Value","Label"\n"2018-04-25T00:00:00Z","1.5","0"\n"2018-04-25T00:01:00Z","2.5","0"\n',
        "timestamp,value\n2014-02-14 14:30:00,1.5\n2014-02-14 14:31:00,2.5\n",
        "Time,VALUE\n1524614400,1.5\n1524614460,2.5\n",
        "time,value\n1524614400000,1.5\n1524614460000,2.5\n",
        "rps,timestamp\n1.5,1524614400\n2.5,1524614460\n",  # two columns: the one beside the time, whatever its name
    ],
    ids=["ms-quoted-iso", "nab-space", "epoch-seconds", "epoch-ms", "two-columns"],
)
def test_columns_found_case_insensitively(tmp_path, text):
    raw = load_csv(write(tmp_path, text))
    assert raw.values.tolist() == [1.5, 2.5]
    assert raw.times[1] - raw.times[0] == pytest.approx(60.0)
    assert raw.times[0] == pytest.approx(1524614400.0) or raw.times[0] == pytest.approx(1392388200.0)


def test_named_columns(tmp_path):
    raw = load_csv(write(tmp_path, "when,a,b\n0,1,10\n60,2,20\n"), time_column="when", value_column="b")
    assert raw.values.tolist() == [10, 20]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("timestamp,value\n", "no rows"),
        ("foo,bar\n1,2\n", "no time column (timestamp / time / ts / datetime / date) in header [foo, bar]"),
        ("timestamp,other,more\n0,1,2\n", "no value column (value / y / rate / latency_ms) in header"),
        ("timestamp,value\n0,1\n120,2\n60,3\n", "goes back in time"),
        ("timestamp,value\nyesterday,1\n", "cannot read 'yesterday'"),
    ],
    ids=["empty", "header-only", "no-time", "no-value", "non-monotonic", "bad-time"],
)
def test_bad_csv_gets_clear_error(tmp_path, text, message):
    with pytest.raises(SeriesError) as info:
        load_csv(write(tmp_path, text))
    assert message in str(info.value)


def test_repeated_timestamps_are_merged_and_declared(tmp_path):
    raw = load_csv(write(tmp_path, "timestamp,value\n0,1\n60,2\n60,4\n120,5\n"))
    assert raw.times.tolist() == [0, 60, 120] and raw.values.tolist() == [1, 3, 5]
    assert len(raw.warnings) == 1 and "1 repeated timestamp(s), first on row 4" in raw.warnings[0]


def test_missing_file():
    with pytest.raises(SeriesError, match="cannot read"):
        load_csv("/nonexistent/x.csv")


def test_unparsable_values_become_nan(tmp_path):
    raw = load_csv(write(tmp_path, "timestamp,value\n0,1\n60,oops\n120,\n180,4\n"))
    assert np.isnan(raw.values[1]) and np.isnan(raw.values[2]) and raw.values[3] == 4


def test_request_traces_bin_into_rates(tmp_path):
    azure = write(tmp_path, "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:00:{s:02d}.5000000,10,10\n" for s in (0, 1, 2, 20, 21, 40, 59)), "azure.csv")
    history, kind = read_series(azure, step_seconds=15)
    assert kind == "azure"
    assert history.features["value"].tolist() == pytest.approx([3 / 15, 2 / 15, 1 / 15])  # last partial bin dropped
    moon = write(tmp_path, "".join(f'{{"timestamp": {ms}, "input_length": 1}}\n' for ms in (0, 0, 500, 15_000, 31_000)), "m.jsonl")
    history, kind = read_series(moon, step_seconds=15)
    assert kind == "mooncake"
    assert history.features["value"].tolist() == pytest.approx([3 / 15, 1 / 15])


def test_bad_jsonl_line(tmp_path):
    with pytest.raises(SeriesError, match="line 2"):
        read_series(write(tmp_path, '{"timestamp": 0}\nnot json\n', "m.jsonl"))


def test_real_trace_files_load(traces):
    for rel in (
        "ms-cloud-monitoring/mongodb-application-rps/mongo-01.csv",
        "nab/realAWSCloudwatch/ec2_cpu_utilization_24ae8d.csv",
        "azure-llm-2023/AzureLLMInferenceTrace_conv.csv",
        "mooncake/conversation_trace.jsonl",
    ):
        history, _ = read_series(traces / rel)
        assert len(history) > 200
        assert np.isfinite(history.features["value"]).mean() > 0.99
