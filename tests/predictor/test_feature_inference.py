"""What a training series measures, told from its name (forescale train --csv / --query)."""

from __future__ import annotations

import json

import pytest

from forescale_cli.main import main
from forescale_predictor.feature_inference import FeatureUnknown, infer_feature


@pytest.mark.parametrize("name, feature", [
    ("latency_ms", "latency_ms"),
    ("Latency", "latency_ms"),
    ("p99_ms", "latency_ms"),
    ("requestLatencyMs", "latency_ms"),
    ("request_latency_ms", "latency_ms"),  # a latency word wins over a rate word
    ("ttft_ms", "latency_ms"),
    ("rate", "rate"),
    ("rps", "rate"),
    ("requests_per_second", "rate"),  # "second" is a unit of the rate here, not a latency in seconds
    ("QPS", "rate"),
    ("sum(rate(forescale_requests_total[1m]))", "rate"),
    ("histogram_quantile(0.99, sum by (le) (rate(x_duration_seconds_bucket[1m]))) * 1000", "latency_ms"),
])
def test_a_name_that_says_what_it_measures(name, feature):
    assert infer_feature(name) == feature


@pytest.mark.parametrize("name, message", [
    ("value", "cannot tell from the column 'value' whether it is a latency or a request rate; pass --feature"),
    ("y", "cannot tell from the column 'y'"),
    ("cpu_util", "cannot tell from the column 'cpu_util'"),
    ("latency_seconds", "looks like a latency in seconds, but the model forecasts milliseconds"),
    ("histogram_quantile(0.99, rate(x_duration_seconds_bucket[1m]))", "looks like a latency in seconds"),
])
def test_a_name_that_does_not_is_refused(name, message):
    with pytest.raises(FeatureUnknown) as err:
        infer_feature(name)
    assert message in str(err.value) and "\n" not in str(err.value)


def _series(tmp_path, column: str, rows: int = 200):
    path = tmp_path / "series.csv"
    path.write_text(f"timestamp,{column}\n" + "".join(f"{1_700_000_000 + i * 60},{20 + i % 7}\n" for i in range(rows)))
    return path


def _train(tmp_path, capsys, *args):
    code = main(["train", "--out", str(tmp_path / "m.pt"), "--epochs", "1", "--json", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_request_rate_column_trains_a_rate_model(tmp_path, capsys):
    code, out, err = _train(tmp_path, capsys, "--csv", str(_series(tmp_path, "rate")))
    assert code == 0, err
    assert json.loads(out)["features"] == ["rate"]
    assert "training a rate model: told from the column 'rate' (--feature overrides)" in err


def test_a_column_that_does_not_say_is_a_one_line_error(tmp_path, capsys):
    code, out, err = _train(tmp_path, capsys, "--csv", str(_series(tmp_path, "value")))
    assert code == 2 and out == "" and not (tmp_path / "m.pt").exists()
    assert err.strip().splitlines() == [
        "forescale train: error: cannot tell from the column 'value' whether it is a latency or a request rate; "
        "pass --feature latency_ms, --feature rate or --feature value"]


def test_an_explicit_feature_wins(tmp_path, capsys):
    code, out, err = _train(tmp_path, capsys, "--csv", str(_series(tmp_path, "rate")), "--feature", "latency_ms")
    assert code == 0, err
    assert json.loads(out)["features"] == ["latency_ms"] and "told from" not in err


def test_a_request_trace_is_a_rate(tmp_path, capsys):
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i * 250, "input_length": 10, "output_length": 5}) + "\n"
                            for i in range(12_000)))
    code, out, err = _train(tmp_path, capsys, "--csv", str(path))
    assert code == 0, err
    assert json.loads(out)["features"] == ["rate"] and "request trace" in err
