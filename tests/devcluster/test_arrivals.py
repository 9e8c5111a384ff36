"""Arrival patterns: the built-in one, trace files, scaling, and the Poisson arrivals drawn from them."""

from __future__ import annotations

import os

import pytest

from forescale_devcluster.arrivals import (
    AZURE_CONV_PER_MINUTE, RateProfile, SalesPeak, builtin_pattern, detect_format, from_trace, poisson_arrivals,
)

TRACES = os.environ.get("FORESCALE_TRACES", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared",
                                                         "traces"))


def needs_trace(relative: str) -> str:
    path = os.path.join(TRACES, relative)
    if not os.path.isfile(path):
        pytest.skip(f"real trace {relative} not found under FORESCALE_TRACES={TRACES}")
    return path


def test_stored_profile_is_normalised_to_mean_one():
    assert len(AZURE_CONV_PER_MINUTE) == 58
    assert sum(AZURE_CONV_PER_MINUTE) / 58 == pytest.approx(1.0, abs=0.01)


@pytest.mark.traces
def test_stored_profile_matches_the_azure_trace():
    """The numbers in the code are what the trace says, recomputed here."""
    profile = from_trace(needs_trace("azure-llm-2023/AzureLLMInferenceTrace_conv.csv"), bin_seconds=60)
    full = profile.rates[:58]  # the 59th minute is partial
    mean = sum(full) / len(full)
    assert mean == pytest.approx(5.55, abs=0.01)
    assert [round(r / mean, 2) for r in full] == pytest.approx(list(AZURE_CONV_PER_MINUTE), abs=0.011)


@pytest.mark.parametrize("mean_rate, seconds_per_minute, peak, duration, peak_over_mean", [
    (30.0, 5.0, SalesPeak(), 290.0, (2.2, 2.6)),
    (20.0, 2.0, None, 116.0, (1.45, 1.6)),
    (60.0, 1.0, SalesPeak(factor=3.0), 58.0, (3.0, 3.8)),
])
def test_builtin_pattern_shape(mean_rate, seconds_per_minute, peak, duration, peak_over_mean):
    profile = builtin_pattern(mean_rate, seconds_per_minute, peak)
    assert profile.duration == pytest.approx(duration)
    assert profile.mean == pytest.approx(mean_rate)
    low, high = peak_over_mean
    assert low <= profile.peak / profile.mean <= high


def test_sales_peak_ramps_holds_and_returns():
    peak = SalesPeak(start_fraction=0.5, ramp_fraction=0.1, hold_fraction=0.1, factor=3.0)
    assert [peak.multiplier(f) for f in (0.2, 0.55, 0.65, 0.75, 0.95)] == pytest.approx([1.0, 2.0, 3.0, 2.0, 1.0])


@pytest.mark.parametrize("t, rate", [(0.0, 10.0), (5.0, 10.0), (10.0, 15.0), (15.0, 20.0), (99.0, 20.0)])
def test_profile_interpolates_between_bin_centres(t, rate):
    assert RateProfile((10.0, 20.0), 10.0)(t) == pytest.approx(rate)


def test_compression_and_scaling():
    base = RateProfile((1.0, 3.0), 60.0)
    fast = base.compressed(12)
    assert fast.duration == pytest.approx(10.0) and fast.rates == base.rates
    assert base.scaled(2).rates == (2.0, 6.0)
    assert base.scaled_to_mean(40).rates == (20.0, 60.0)


@pytest.mark.parametrize("call, message", [
    (lambda: RateProfile((), 1.0), "has no bins"),
    (lambda: RateProfile((1.0,), 0), "bin_seconds must be > 0"),
    (lambda: RateProfile((-1.0,), 1.0), "negative or non-finite"),
    (lambda: RateProfile((0.0, 0.0), 1.0).scaled_to_mean(5), "all zeros"),
    (lambda: RateProfile((1.0,), 1.0).scaled_to_mean(0), "target mean rate must be > 0"),
    (lambda: RateProfile((1.0,), 1.0).compressed(-2), "time compression must be > 0"),
    (lambda: RateProfile((1.0,), 1.0).scaled(0), "rate scale must be > 0"),
    (lambda: builtin_pattern(seconds_per_minute=0), "seconds_per_minute must be > 0"),
    (lambda: list(poisson_arrivals(lambda t: 1.0, 0)), "duration must be > 0"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name, text, fmt, rates", [
    ("a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,1,1\n"
              "2023-11-16 18:15:47.0,1,1\n2023-11-16 18:15:58.5,1,1\n", "azure", (0.2, 0.1)),
    ("m.jsonl", '{"timestamp": 0}\n{"timestamp": 3000}\n\n{"timestamp": 12000}\n', "mooncake", (0.2, 0.1)),
    ("r.csv", "TimeStamp,Value,Label\n2018-04-25T00:00:00Z,6,0\n2018-04-25T00:01:00Z,12,0\n", "rates", (6.0, 12.0)),
    ("r2.csv", "time,rate\n0,1.5\n10,2.5\n20,0\n", "rates", (1.5, 2.5, 0.0)),
])
def test_trace_formats(tmp_path, name, text, fmt, rates):
    path = write(tmp_path, name, text)
    assert detect_format(path) == fmt
    profile = from_trace(path, bin_seconds=10)
    assert profile.rates == pytest.approx(rates)
    doubled = from_trace(path, fmt, bin_seconds=10, time_compression=2, rate_scale=2)
    assert doubled.duration == pytest.approx(profile.duration / 2)
    assert doubled.rates == pytest.approx(tuple(2 * r for r in rates))
    assert from_trace(path, bin_seconds=10, mean_rate=40).mean == pytest.approx(40)


@pytest.mark.parametrize("name, text, fmt, message", [
    (None, "", "auto", "not found"),
    ("x.csv", "time,rate\n0,1\n", "nope", "unknown trace format 'nope'"),
    ("e.csv", "", "azure", "is empty"),
    ("h.csv", "TIMESTAMP,ContextTokens\n", "azure", "has no requests"),
    ("t.csv", "TIMESTAMP,ContextTokens\nyesterday,3\n", "azure", "line 2: cannot read time 'yesterday'"),
    ("m.jsonl", '{"timestamp": 0}\n{"ts": 5}\n', "auto", "line 2: want a JSON object"),
    ("c.csv", "when,howmany\n0,1\n1,2\n", "rates", "no timestamp or time column"),
    ("v.csv", "time,value\n0,abc\n", "rates", "line 2: cannot read a rate"),
    ("one.csv", "time,value\n0,1\n", "rates", "at least two rows"),
    ("dup.csv", "time,value\n0,1\n0,2\n0,3\n", "rates", "repeated timestamps"),
])
def test_bad_trace_files_are_named(tmp_path, name, text, fmt, message):
    path = write(tmp_path, name, text) if name else str(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match=message):
        from_trace(path, fmt)


def test_bad_bin_seconds(tmp_path):
    with pytest.raises(ValueError, match="bin_seconds must be > 0"):
        from_trace(write(tmp_path, "m.jsonl", '{"timestamp": 0}\n'), bin_seconds=0)


@pytest.mark.traces
@pytest.mark.parametrize("relative, mean_low, mean_high", [
    ("azure-llm-2023/AzureLLMInferenceTrace_conv.csv", 5.3, 5.7),
    ("mooncake/conversation_trace.jsonl", 3.2, 3.6),
])
def test_real_traces_give_their_published_mean_rate(relative, mean_low, mean_high):
    profile = from_trace(needs_trace(relative), bin_seconds=60)
    assert mean_low <= profile.mean <= mean_high
    assert 3300 <= profile.duration <= 3660


@pytest.mark.parametrize("rate, duration, expected", [
    (RateProfile((20.0,), 30.0), 30.0, 600),
    (RateProfile((10.0, 30.0), 15.0), 30.0, 600),
    (lambda t: 5.0 + t, 20.0, 5 * 20 + 200),
])
def test_poisson_arrivals_follow_the_rate(rate, duration, expected):
    times = list(poisson_arrivals(rate, duration, seed=7))
    assert times == sorted(times) and all(0 <= t < duration for t in times)
    assert abs(len(times) - expected) <= 4 * expected ** 0.5  # four standard deviations
    assert times == list(poisson_arrivals(rate, duration, seed=7))  # seeded: reproducible


def test_poisson_arrivals_track_a_step():
    times = list(poisson_arrivals(RateProfile((5.0, 50.0), 20.0), 40.0, seed=3))
    early = sum(t < 15 for t in times)
    late = sum(t >= 25 for t in times)
    assert late > 5 * early
