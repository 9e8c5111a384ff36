"""Property test: any History gives a forecast (LSTM or a declared fallback) or a SeriesError; never a crash."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forescale_predictor import LATENCY_MS, RATE, History
from forescale_predictor.errors import SeriesError
from forescale_predictor.lstm_forecaster import LSTMForecaster

VALUES = st.one_of(
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
    st.sampled_from([0.0, np.nan, np.inf, -1.0, 1e-9, 5.0]),
)


@st.composite
def histories(draw):
    n = draw(st.integers(0, 80))
    step = draw(st.sampled_from([1.0, 5.0, 15.0, 60.0]))
    times = 1_700_000_000.0 + step * np.arange(n)
    if n > 2 and draw(st.integers(0, 5)) == 0:
        times[draw(st.integers(1, n - 1))] = times[0]  # a timestamp out of order or repeated
    feats = {}
    for name in draw(st.sampled_from([(LATENCY_MS, RATE), (RATE,), (LATENCY_MS,), (LATENCY_MS, RATE, "queue_depth")])):
        feats[name] = np.array(draw(st.lists(VALUES, min_size=n, max_size=n)), dtype=float)
    return History(step, times, feats)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(h=histories())
def test_any_history_gives_a_forecast_or_a_clear_error(tiny_model, h):
    forecaster = LSTMForecaster(tiny_model)
    try:
        f = forecaster.forecast(h)
    except SeriesError as exc:
        assert str(exc)
        return
    assert f.steps == 12
    assert f.model == "lstm" or f.fallback_reason
    for target in (LATENCY_MS, RATE):
        upper, median = f.upper(target), f.median(target)
        assert upper.shape == (12,)
        finite = np.isfinite(upper)
        assert (upper[finite] >= median[finite] - 1e-6 * np.abs(median[finite])).all()
