"""Never worse than a baseline: per series, forecast with whichever model is ahead, with hysteresis.

The LSTM and one cheap baseline both forecast every tick. When a forecast's
target time arrives, each model's absolute error at the horizon is recorded,
per target (latency, rate). The *score* of a model is the mean over targets
of its rolling MAE divided by the two models' average rolling MAE for that
target, so latency in ms and rate in req/s weigh alike; lower is better.

Hysteresis: the leader changes only when the other model's score is below
the leader's by more than `margin` (5%), and only once both have `min_scores`
errors in the window. Near-ties therefore do not flap the forecast between
models tick after tick.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.0f} s"


@dataclass
class ModelSelector:
    """Rolling horizon errors of two models over `window` scored forecasts; see the module docstring."""

    models: tuple[str, str] = ("lstm", "ewm")
    targets: tuple[str, ...] = ("latency_ms",)
    window: int = 480
    margin: float = 0.05
    min_scores: int = 20
    step_seconds: float = 15.0
    leader: str = field(init=False)
    errors: dict = field(init=False)

    def __post_init__(self) -> None:
        if len(self.models) != 2 or self.models[0] == self.models[1]:
            raise ValueError(f"need two different models, got {self.models}")
        if not 0 <= self.margin < 1:
            raise ValueError(f"margin must be in [0, 1), got {self.margin}")
        self.leader = self.models[0]
        self.errors = {(m, t): deque(maxlen=self.window) for m in self.models for t in self.targets}

    def record(self, model: str, target: str, abs_error: float) -> None:
        """One horizon error of `model` on `target` (NaN is ignored)."""
        if np.isfinite(abs_error):
            self.errors[(model, target)].append(float(abs_error))

    def rescore(self, model: str, target: str, abs_errors: np.ndarray) -> None:
        """Replace `model`'s errors on `target` (oldest first): the model changed, and the errors of the one
        it replaced say nothing of it."""
        errs = np.asarray(abs_errors, dtype=np.float64)
        self.errors[(model, target)] = deque((float(e) for e in errs[np.isfinite(errs)]), maxlen=self.window)

    def _mae(self, model: str, target: str) -> float | None:
        errs = self.errors[(model, target)]
        return float(np.mean(errs)) if errs else None

    def _scored(self) -> int:
        return min(len(e) for e in self.errors.values())

    def scores(self) -> dict[str, float] | None:
        """Relative score per model (lower is better), or None before both have `min_scores` errors."""
        if self._scored() < self.min_scores:
            return None
        out = {m: 0.0 for m in self.models}
        for t in self.targets:
            maes = {m: self._mae(m, t) for m in self.models}
            mean = sum(maes.values()) / len(maes)
            for m in self.models:
                out[m] += (maes[m] / mean if mean > 0 else 1.0) / len(self.targets)
        return out

    def choose(self) -> str:
        """The model to forecast with now (changes the leader only past the margin)."""
        scores = self.scores()
        if scores is not None:
            other = self.models[1] if self.leader == self.models[0] else self.models[0]
            if scores[other] < scores[self.leader] * (1.0 - self.margin):
                self.leader = other
        return self.leader

    def reason(self) -> str:
        """Why the leader forecasts, e.g. "lstm: rolling MAE 4.1 vs ewm 4.6 over 2 h" (first target)."""
        n = self._scored()
        if n < self.min_scores:
            return f"{self.leader}: not yet scored ({n} of {self.min_scores} horizon errors)"
        other = self.models[1] if self.leader == self.models[0] else self.models[0]
        parts = []
        for t in self.targets:
            parts.append(f"{self._mae(self.leader, t):.3g} vs {other} {self._mae(other, t):.3g}"
                         + (f" ({t})" if len(self.targets) > 1 else ""))
        return f"{self.leader}: rolling MAE {', '.join(parts)} over {_duration(n * self.step_seconds)}"


def select_backtest(errors: dict[str, np.ndarray], at: np.ndarray, horizon: int, **selector) -> np.ndarray:
    """The model a ModelSelector picks at each origin of a backtest, learning only from outcomes already known.

    `errors` maps each of two models to its absolute error [N] at the final
    horizon step (NaN: unscored); origin o learns from o' with o' + horizon <= o.
    Returns the chosen model's index (0 or 1) per origin.
    """
    names = tuple(errors)
    chooser = ModelSelector(names, targets=("value",), **selector)
    chosen = np.zeros(len(at), dtype=np.int64)
    learned = 0
    for i, origin in enumerate(at):
        while learned < i and at[learned] + horizon <= origin:
            for name in names:
                chooser.record(name, "value", float(errors[name][learned]))
            learned += 1
        chosen[i] = names.index(chooser.choose())
    return chosen
