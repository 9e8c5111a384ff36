"""Shared fixtures of the predictor tests: small synthetic series, a tiny
trained model, and the real traces (skipped when FORESCALE_TRACES is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[2]


def traces_dir() -> Path:
    return Path(os.environ.get("FORESCALE_TRACES", REPO.parent / "shared" / "traces"))


@pytest.fixture(scope="session")
def traces() -> Path:
    path = traces_dir()
    if not path.is_dir():
        pytest.skip(f"real traces not found at {path}; set FORESCALE_TRACES to the traces folder")
    return path


@pytest.fixture(scope="session")
def tiny_model():
    """A small two-feature model trained for a few epochs (seconds)."""
    from forescale_predictor.model_config import ModelConfig
    from forescale_predictor.training import Segment, TrainOptions, train

    from predictor_fixtures import synthetic

    t, values = synthetic(900)
    config = ModelConfig(step_seconds=15.0, lookback=16, horizon=12, hidden=8, ar_steps=8)
    options = TrainOptions(max_epochs=3, windows_per_epoch=512, min_windows_per_epoch=512, progress=False, threads=1)
    return train([Segment(t, values, "synthetic")], config, options)
