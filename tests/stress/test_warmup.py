"""The probe that picks the first rate and the warm-up before the ramp, whose
requests are sent but never counted."""

from __future__ import annotations

import pytest

from forescale_stress.errors import StressError
from forescale_stress.warmup import start_rate_from_probe

from stress_server import start_fake_server


@pytest.mark.parametrize("answered, seconds, rate", [
    (500, 5.0, 25.0),   # a quarter of the 100 req/s the probe got through
    (101, 2.0, 12.6),
    (3, 5.0, 1.0),      # never below 1 req/s
])
def test_start_rate_is_a_quarter_of_the_probed_throughput(answered, seconds, rate):
    assert start_rate_from_probe(answered, seconds) == rate


def test_a_probe_without_answers_is_a_clear_error():
    with pytest.raises(StressError, match="the probe got no successful answer"):
        start_rate_from_probe(0, 5.0)


@pytest.mark.parametrize("args, message", [
    (["--warmup-seconds", "-1"], "--warmup-seconds must be >= 0"),
    (["--probe-seconds", "0"], "--probe-seconds must be > 0"),
    (["--probe-warmup-seconds", "-2"], "--probe-warmup-seconds must be >= 0"),
    (["--probe-warmup-seconds", "30", "--warmup-seconds", "0", "--max-seconds", "40"],
     "leaves no room for one step after the probe"),
    (["--warmup-seconds", "60", "--max-seconds", "40"], "leaves no room for one step after the probe"),
])
def test_bad_warmup_options(stress, tmp_path, args, message):
    result = stress("--url", "http://127.0.0.1:9/v1/embeddings", "--quiet", *args)
    assert result.code == 2 and message in result.err


def test_probe_then_uncounted_warmup_then_the_ramp(stress, tmp_path):
    server = start_fake_server(tmp_path, service_ms=20.0, workers=1)
    try:
        result = stress("--url", server.url, "--probe-seconds", "1", "--probe-warmup-seconds", "0.5",
                        "--warmup-seconds", "2", "--step-percent", "0",
                        "--step-seconds", "1", "--max-step-seconds", "2", "--min-samples", "10", "--max-seconds", "9",
                        "--request-timeout", "2", "--quiet", "--json")
    finally:
        server.stop()
    assert result.code == 0, result.err
    report = result.json()
    assert report["start_rate_from"] == "probe"
    # one worker, 20 ms a request: the probe gets at most 50 req/s through, so the start is at most 12.5
    assert 1.0 <= report["start_rate"] <= 12.5
    assert report["warmup_seconds"] == 2.0 and report["warmup_requests"] == round(report["start_rate"] * 2)
    assert report["before_ramp_seconds"] >= 3.5
    assert report["probe_warmup_seconds"] == 0.5 and report["start_rate"] == max(1.0, round(report["probe_rps"] / 4, 1))
    # the report counts the ramp's requests only
    assert report["requests"] == sum(step["sent"] for step in report["steps"]) and report["steps"]


def _probed_start(stress, tmp_path, probe_warmup: str) -> float:
    tmp_path.mkdir()
    # A cold start: 10x slower for its first 3 s; warm, one worker at 20 ms gets 50 req/s through.
    server = start_fake_server(tmp_path, service_ms=20.0, workers=1, cold_seconds=3.0, cold_factor=10.0)
    try:
        result = stress("--url", server.url, "--probe-seconds", "2", "--probe-warmup-seconds", probe_warmup,
                        "--warmup-seconds", "0", "--step-percent", "0", "--step-seconds", "0.5",
                        "--max-step-seconds", "1", "--min-samples", "5", "--max-seconds", "8.5",
                        "--request-timeout", "2", "--quiet", "--json")
    finally:
        server.stop()
    assert result.code == 0, result.err
    return result.json()["start_rate"]


def test_the_probe_warms_the_server_before_it_counts(stress, tmp_path):
    """The known problem: a probe of a cold server reads it too slow and starts the ramp far too low."""
    warmed = _probed_start(stress, tmp_path / "warmed", "3.5")
    cold = _probed_start(stress, tmp_path / "cold", "0")
    assert warmed >= 7.5, warmed  # ~12.5: a quarter of the warm 50 req/s (a loaded CI machine gets less through)
    assert cold <= 3.0, cold  # ~1.2: a quarter of the cold 5 req/s


def test_a_breach_is_confirmed_by_a_repeat_before_the_ramp_ends(stress, tmp_path):
    """A stall of a shared machine (here a cold start that ends during the first step) puts one step over the
    SLO: the repeat at the same rate is under it, so the ramp goes on; --no-confirm-slo stops at once."""
    def run(*extra):
        server = start_fake_server(tmp_path, service_ms=5.0, workers=4, cold_seconds=0.6, cold_factor=80.0)
        try:
            result = stress("--url", server.url, "--start-rate", "100", "--warmup-seconds", "0", "--step-percent", "10",
                            "--step-seconds", "1", "--max-step-seconds", "1", "--min-samples", "20",
                            "--max-seconds", "14", "--max-rate", "150", "--slo-ms", "200", "--request-timeout", "5",
                            "--quiet", "--json", *extra)
        finally:
            server.stop()
        assert result.code == 0, result.err
        return result.json()

    confirmed = run()
    first, repeat = confirmed["steps"][:2]
    assert first["p99_ms"] > 200 and first["slo_unconfirmed"]
    assert repeat["rate"] == first["rate"] and repeat["p99_ms"] <= 200 and not repeat["slo_unconfirmed"]
    assert confirmed["stopped_because"] == "max_rate" and len(confirmed["steps"]) >= 5
    assert confirmed["knee_step"] == len(confirmed["steps"]) - 1 and 0 not in confirmed["slope_steps"]
    unconfirmed = run("--no-confirm-slo")
    assert unconfirmed["stopped_because"] == "slo" and len(unconfirmed["steps"]) == 1
