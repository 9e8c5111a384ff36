"""Forescale predictor: data loading, windowing, the LSTM forecaster, baselines and backtests."""
