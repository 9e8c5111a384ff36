"""Fine-tuning the packaged model on one service's own history (`forescale train --prometheus URL --deployment`).

The packaged model is a generic prior trained on other services' rates with
derived latency. A service's own latency and rate, read back from its
Prometheus, are what it will be asked to forecast. Fine-tuning keeps the
packaged model's shape and scalers (so the operator feeds it exactly as
before: latency_ms and rate at its step), starts from its weights, trains
with a smaller learning rate, and keeps the base weights unless the
service's own validation split (the last 25% by time) says the new ones are
better. Nothing at or after `until` is read at all: the leakage test changes
every value after it and gets the same model.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .errors import TrainingError
from .history_prep import raw_matrix
from .forecast_types import History
from .resample import resample_history
from .train_options import TrainOptions
from .trained_model import TrainedModel

#: fine-tuning moves the prior, it does not replace it
FINE_TUNE_LEARNING_RATE = 1e-3
VALID_FRACTION = 0.25


class NotEnoughHistory(TrainingError):
    """Fewer points than one window of the model (lookback + horizon)."""


def points_needed(base: TrainedModel) -> int:
    return base.config.lookback + base.config.horizon


def fine_tune(base: TrainedModel, history: History, *, until: float | None = None,
              options: TrainOptions = TrainOptions()) -> TrainedModel:
    """`base` trained further on `history` (before `until`, if given); see the module docstring."""
    from .training import Segment, train  # torch is imported only when training

    config = base.config
    history = resample_history(history, config.step_seconds)
    times = np.asarray(history.times, dtype=np.float64)
    keep = times < until if until is not None else np.ones(len(times), dtype=bool)
    values = raw_matrix(history, config.features)[keep]
    times = times[keep]
    seen = np.isfinite(values).any(axis=1)
    need = points_needed(base)
    if int(seen.sum()) < need:
        raise NotEnoughHistory(
            f"{int(seen.sum())} points of {config.step_seconds:g} s; fine-tuning needs at least {need} "
            f"(one window: lookback {config.lookback} + horizon {config.horizon} steps = "
            f"{need * config.step_seconds:g} s) with {', '.join(config.features)}; read a longer range (--start)")
    missing = [f for f in config.features if not np.isfinite(values[:, config.features.index(f)]).any()]
    if missing:
        raise TrainingError(f"the history has no {', '.join(missing)}; the model reads {', '.join(config.features)}")
    options = replace(options, learning_rate=min(options.learning_rate, FINE_TUNE_LEARNING_RATE),
                      valid_fraction=VALID_FRACTION)
    model = train([Segment(times, values, "service history")], config, options, init=base)
    model.metadata.update({
        "fine_tuned_from": base.metadata.get("trained_by") or base.metadata.get("source") or "a base model",
        "training_span": {"start": float(times[0]), "end": float(times[-1]), "steps": int(len(times))},
    })
    return model
