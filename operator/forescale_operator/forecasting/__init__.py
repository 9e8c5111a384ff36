"""The tick's forecast step: the one seam between the operator and the predictor.

- `forecast_source.py`: the `ForecastSource` protocol the loop holds, its
  report, and the no-op (no forecasts);
- `forecaster.py`: the predictor's implementation (the LSTM per resource,
  through `forescale_predictor`, in a worker thread), the only operator module
  that loads model code.

Nothing is imported here, so that naming the seam never loads torch.
"""
