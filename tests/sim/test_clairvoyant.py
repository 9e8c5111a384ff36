"""The clairvoyant forecaster: the trace's own arrivals, on the windows the engine observes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from forescale_cli.main import main
from forescale_predictor import History
from forescale_sim.clairvoyant import ClairvoyantForecaster

EPOCH0 = 1_000.0


def _history(now: float, step: float = 15.0, n: int = 8) -> History:
    times = EPOCH0 + now - step * np.arange(n)[::-1]
    return History(step_seconds=step, times=times, features={"rate": np.full(n, 2.0), "latency_ms": np.full(n, 50.0)})


# (arrivals per second, now, step, horizon, the rates it must forecast)
CASES = [
    # one request every second: 1 req/s in every window
    (np.ones(200), 60, 15, 45, [1.0, 1.0, 1.0]),
    # a burst in [75, 90): the second window holds it, the first and third do not
    (np.r_[np.zeros(75), np.full(15, 4.0), np.zeros(110)], 60, 15, 45, [0.0, 4.0, 0.0]),
    # the window is [t, t + step), as the recorder's observed rate [t - step, t) read a step later
    (np.r_[np.zeros(60), [30.0], np.zeros(139)], 60, 15, 30, [2.0, 0.0]),
    (np.r_[np.zeros(60), [30.0], np.zeros(139)], 61, 15, 30, [0.0, 0.0]),
    # past the trace's end nothing arrives
    (np.ones(70), 60, 15, 30, [10 / 15, 0.0]),
]


@pytest.mark.parametrize("per_second, now, step, horizon, expected", CASES)
def test_it_forecasts_what_will_arrive(per_second, now, step, horizon, expected) -> None:
    clair = ClairvoyantForecaster(per_second, epoch0=EPOCH0, step_seconds=step, horizon_seconds=horizon)
    fc = clair.forecast(_history(now, step))
    assert fc.model == "clairvoyant" and fc.generated_at == EPOCH0 + now
    for q in fc.quantiles:  # a band of no width: every quantile is the outcome
        assert np.asarray(fc.rate[q]) == pytest.approx(expected)
    assert np.isfinite(fc.median("latency_ms")).all()  # latency: the ewm baseline's


@pytest.mark.parametrize("step, horizon", [(0.0, 30.0), (15.0, 5.0), (2.5, 30.0), (0.4, 30.0)])
def test_a_bad_grid_is_named(step, horizon) -> None:
    with pytest.raises(ValueError, match="step_seconds"):
        ClairvoyantForecaster(np.ones(10), epoch0=EPOCH0, step_seconds=step, horizon_seconds=horizon)


def test_a_replay_with_it_reports_it(azure_slice: Path, capsys) -> None:
    code = main(["replay", "--trace", str(azure_slice), "--format", "azure", "--json", "--policies", "forescale",
                 "--incidents", "none", "--forecaster", "clairvoyant"])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["forecaster"].startswith("clairvoyant")
    models = data["policies"]["forescale"]["forecast_models"]
    assert set(models) == {"clairvoyant"} and sum(models.values()) > 0
