"""The demand A is sized for: the forecast's upper band at the first step a pod asked for now would serve.

Why it matters: a step's rate is the load of the 15 s ending at its time. A pod ready at now + 90 s serves
the step ending at now + 105 s; sized on the step ending at now + 90 s, every pod of a burst the forecast
saw coming was one step late."""

import numpy as np
import pytest

from forescale_operator.engine import sizing
from forescale_predictor import Forecast

NOW, STEP, H = 1_000.0, 15.0, 12


def forecast(upper: np.ndarray) -> Forecast:
    flat = np.full(H, 1.0)
    return Forecast(NOW, STEP, STEP * H, (0.1, 0.5, 0.9), {0.1: flat, 0.5: flat, 0.9: flat},
                    {0.1: np.zeros(H), 0.5: upper / 2, 0.9: upper}, "lstm")


# the upper band of step i (ending at NOW + 15 (i + 1)) is 10 (i + 1): the step sized on reads off its value
@pytest.mark.parametrize("startup, at_ready, lead", [
    (90.0, 70.0, 105.0),    # on the grid: the step ending 90 s out is load from before the pod is ready
    (95.0, 70.0, 105.0),    # inside a step: the step the pod becomes ready in
    (0.0, 10.0, 15.0),      # ready at once: the next step
    (14.0, 10.0, 15.0),
    (180.0, 120.0, 180.0),  # a start-up as long as the horizon: the last step known
    (600.0, 120.0, 180.0),  # longer: the last step
])
def test_the_step_sized_on_is_the_first_a_new_pod_serves(startup, at_ready, lead):
    dem = sizing.demand(forecast(10.0 * np.arange(1, H + 1)), 3.0, NOW, startup)
    assert (dem.at_ready, dem.lead_seconds) == (at_ready, lead)
    assert dem.peak == 120.0 and dem.observed == 3.0


def test_without_a_forecast_the_observed_rate_is_all_three():
    dem = sizing.demand(None, 4.0, NOW, 90.0)
    assert (dem.at_ready, dem.peak, dem.observed, dem.source) == (4.0, 4.0, 4.0, "observed")
    assert sizing.demand(None, None, NOW, 90.0) is None
