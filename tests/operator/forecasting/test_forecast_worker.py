"""The forecasts run one at a time on a worker thread of their own (forecasting/forecaster.py): many resources'
ticks asking at once neither run forecasts side by side nor on the event loop's thread."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np

from forescale_operator.children import Owner
from forescale_operator.forecasting.forecaster import PredictorForecastSource
from forescale_operator.spec import parse_spec
from forescale_predictor.forecast_types import History


class _Watching:
    """A model that records the thread each forecast ran on and how many ran at once."""

    model = "watching"

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.running = self.most = 0
        self.lock = threading.Lock()

    def forecast(self, history):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.threads.append(threading.current_thread().name)
        time.sleep(0.005)  # long enough for a second thread, had there been one, to start beside it
        with self.lock:
            self.running -= 1
        return self


async def test_forecasts_of_many_resources_run_one_at_a_time_on_their_own_thread(example) -> None:
    model = _Watching()
    forecaster = PredictorForecastSource(loader=lambda source=None: model)
    spec = parse_spec(example("minimal")["spec"])
    history = History(15.0, np.array([0.0]), {"latency_ms": np.array([50.0]), "rate": np.array([10.0])})
    owners = [Owner(f"chat-{i}", "default", f"uid-{i}") for i in range(12)]
    results = await asyncio.gather(*(forecaster.forecast(owner, spec, history) for owner in owners))
    assert all(r is model for r in results)
    assert model.most == 1
    assert len(set(model.threads)) == 1 and model.threads[0].startswith("forescale-forecast")
    assert model.threads[0] != threading.current_thread().name
    assert all(forecaster.report(o.uid).seconds >= 0 for o in owners)
