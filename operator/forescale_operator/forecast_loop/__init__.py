"""The forecast loop: what `handlers/tick.py` keeps between ticks, and the tick's load step.

- `loop.py`: `ForecastLoop`, the seams and per-resource state the loop holds
  (the forecast source of `forecasting/`, the diagnosis of `act/`), and
  `forget(owner)`;
- `binding.py`: a resource bound once per generation (spec, engine parameters,
  metric source, router, admin Secret);
- `saved_state.py`, `clock_jumps.py`, `memory.py`: the engine's state from
  status, and what the loop remembers in memory.

The tick's other steps each have their folder: `observe/`, `readings/`,
`forecasting/`, `engine/`, `act/`, `report/`.

Nothing is imported here, so that the tick can name these modules without loading the predictor's model code.
"""
