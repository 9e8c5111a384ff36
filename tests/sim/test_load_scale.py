"""`--load-scale X` (sim/forescale_sim/load_scale.py): counts scale by X, the shape is kept."""

from __future__ import annotations

import numpy as np
import pytest

from forescale_sim.errors import SimError
from forescale_sim.load_scale import check_load_scale, circular_offsets, scale_load
from forescale_sim.trace_types import RateTrace, RequestTrace


def _request_trace(n: int = 600, seconds: float = 600.0, seed: int = 7) -> RequestTrace:
    """Arrivals bunched in the first third (a shape a shift would have to keep per copy)."""
    rng = np.random.default_rng(seed)
    times = np.sort(np.concatenate([rng.uniform(0, seconds / 3, n - 1), [seconds]]))
    return RequestTrace("t", times, rng.integers(10, 100, n), rng.integers(1, 50, n))


@pytest.mark.parametrize("x", [1, 2, 3, 10])
def test_request_trace_becomes_x_shifted_copies(x: int) -> None:
    trace = _request_trace()
    out = scale_load(trace, x, seed=0)
    assert len(out) == x * len(trace)
    assert out.duration_seconds == trace.duration_seconds  # the span is kept
    assert np.all(np.diff(out.arrivals) >= 0)  # still sorted
    assert out.arrivals.min() >= 0 and out.arrivals.max() <= trace.duration_seconds
    # each request's tokens travel with it: the token mix is X copies of the original
    for tokens, base in ((out.input_tokens, trace.input_tokens), (out.output_tokens, trace.output_tokens)):
        assert np.array_equal(np.sort(tokens), np.sort(np.tile(base, x)))
    # the shape: undoing copy k's circular shift finds the whole original trace in the output
    offsets = circular_offsets(x, trace.duration_seconds, 0)
    period = trace.duration_seconds
    for off in offsets:
        # rounded, then wrapped again: 599.9999999 and 0 are the same instant on the circle
        back = np.mod(np.round(np.mod(out.arrivals - off, period), 6), period)
        assert np.isin(np.mod(np.round(trace.arrivals, 6), period), back).all()
    if x > 1:
        assert out.notes[-1].startswith(f"load scaled x{x}: {x} copies")


@pytest.mark.parametrize("seed, other", [(0, 1), (3, 4)])
def test_offsets_are_seeded(seed: int, other: int) -> None:
    trace = _request_trace()
    a, b, c = scale_load(trace, 4, seed), scale_load(trace, 4, seed), scale_load(trace, 4, other)
    assert np.array_equal(a.arrivals, b.arrivals)
    assert not np.array_equal(a.arrivals, c.arrivals)
    offsets = circular_offsets(4, 600.0, seed)
    assert offsets[0] == 0.0 and np.all((offsets >= 0) & (offsets < 600.0))


@pytest.mark.parametrize("x", [1.0, 2.5, 10.0])
def test_rate_trace_counts_are_multiplied(x: float) -> None:
    counts = np.array([0.0, 5.0, 40.0, 0.0, 12.0])
    out = scale_load(RateTrace("r", 1.0, counts), x)
    assert np.allclose(out.counts, counts * x)  # shape kept exactly: idle stays idle, peaks stay where they were
    assert out.tick_seconds == 1.0 and out.duration_seconds == 5.0


def test_scale_one_is_the_trace_itself() -> None:
    trace = _request_trace()
    assert scale_load(trace, 1) is trace


@pytest.mark.parametrize("x, words", [
    (0, ">= 1"), (-2, ">= 1"), (0.5, ">= 1"), (float("nan"), ">= 1"), (float("inf"), ">= 1"), ("3", ">= 1"),
])
def test_bad_scales_are_refused(x, words: str) -> None:
    with pytest.raises(SimError, match="--load-scale") as err:
        check_load_scale(x)
    assert words in str(err.value)


def test_fractional_scale_of_a_request_trace_is_refused() -> None:
    with pytest.raises(SimError, match="whole number for a request trace"):
        scale_load(_request_trace(), 2.5)
