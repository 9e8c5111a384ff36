"""The probe that picks the first rate and the warm-up before the ramp, whose
requests are sent but never counted."""

from __future__ import annotations

import pytest

from forescale_stress.errors import StressError
from forescale_stress.warmup import start_rate_from_probe

from conftest import start_fake_server


@pytest.mark.parametrize("answered, seconds, rate", [
    (500, 5.0, 50.0),   # half of the 100 req/s the probe got through
    (101, 2.0, 25.2),
    (3, 5.0, 1.0),      # never below 1 req/s
])
def test_start_rate_is_half_the_probed_throughput(answered, seconds, rate):
    assert start_rate_from_probe(answered, seconds) == rate


def test_a_probe_without_answers_is_a_clear_error():
    with pytest.raises(StressError, match="the probe got no successful answer"):
        start_rate_from_probe(0, 5.0)


@pytest.mark.parametrize("args, message", [
    (["--warmup-seconds", "-1"], "--warmup-seconds must be >= 0"),
    (["--probe-seconds", "0"], "--probe-seconds must be > 0"),
    (["--warmup-seconds", "60", "--max-seconds", "40"], "leaves no room for one step after the probe"),
])
def test_bad_warmup_options(stress, tmp_path, args, message):
    result = stress("--url", "http://127.0.0.1:9/v1/embeddings", "--quiet", *args)
    assert result.code == 2 and message in result.err


def test_probe_then_uncounted_warmup_then_the_ramp(stress, tmp_path):
    server = start_fake_server(tmp_path, service_ms=20.0, workers=1)
    try:
        result = stress("--url", server.url, "--probe-seconds", "1", "--warmup-seconds", "2", "--step-percent", "0",
                        "--step-seconds", "1", "--max-step-seconds", "2", "--min-samples", "10", "--max-seconds", "9",
                        "--request-timeout", "2", "--quiet", "--json")
    finally:
        server.stop()
    assert result.code == 0, result.err
    report = result.json()
    assert report["start_rate_from"] == "probe"
    # one worker, 20 ms a request: the probe gets at most 50 req/s through, so the start is at most 25
    assert 1.0 <= report["start_rate"] <= 25.0
    assert report["warmup_seconds"] == 2.0 and report["warmup_requests"] == round(report["start_rate"] * 2)
    assert report["before_ramp_seconds"] >= 3.0
    # the report counts the ramp's requests only
    assert report["requests"] == sum(step["sent"] for step in report["steps"]) and report["steps"]
