"""The forecast loop: the parts `handlers/tick.py` runs a tick through, in tick order.

- `loop.py`: `ForecastLoop`, what the loop keeps between ticks, and `forget(owner)`;
- `binding.py`: a resource bound once per generation (spec, engine parameters,
  metric source, router, admin Secret);
- `saved_state.py`, `clock_jumps.py`, `memory.py`: the engine's state from
  status, and what the loop remembers in memory;
- `pods.py`: the pools' pods (admin endpoints, start-up times);
- `forecast_source.py`, `forecaster.py`: the forecast seam and its predictor
  implementation (the only module here that loads model code);
- `executor.py`, `admin_token.py`: the act step (scaling, route weights,
  model-server admin calls, snapshots, events);
- `reporter.py`: the report step (status, the operator's metrics).

Nothing is imported here, so that the tick can name these modules without loading the predictor's model code.
"""
