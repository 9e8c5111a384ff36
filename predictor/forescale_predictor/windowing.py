"""Rolling windows over a series on a regular grid, kept apart from any model.

An *origin* is the index of the last grid step a window has seen. A window at
origin `o` takes inputs `values[o - lookback + 1 : o + 1]` and targets
`values[o + 1 : o + 1 + horizon]`. Splits are by time: every target of a
training window lies before the first input of a validation window, so
neither a window nor a scaler fitted on training windows ever sees a value
from the part it is judged on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import TrainingError


@dataclass(frozen=True)
class WindowSpec:
    """How many steps a window sees (`lookback`) and predicts (`horizon`)."""

    lookback: int
    horizon: int

    def __post_init__(self) -> None:
        if self.lookback < 2 or self.horizon < 1:
            raise ValueError(f"lookback must be >= 2 and horizon >= 1, got {self.lookback}, {self.horizon}")


def origins(n: int, spec: WindowSpec, *, first: int = 0, last: int | None = None, with_targets: bool = True) -> np.ndarray:
    """Every origin whose inputs start at or after `first` and whose targets (if any) end before `last`.

    `last` is exclusive and defaults to `n`: a training split passes its end
    so that no target crosses into the data it is tested on.
    """
    stop = n if last is None else min(last, n)
    lo = first + spec.lookback - 1
    hi = stop - 1 - (spec.horizon if with_targets else 0)
    if hi < lo:
        return np.empty(0, dtype=np.int64)
    return np.arange(lo, hi + 1, dtype=np.int64)


def input_windows(values: np.ndarray, at: np.ndarray, lookback: int) -> np.ndarray:
    """Inputs [N, lookback, F] for the origins `at` (a strided view gathered once)."""
    values = _as_2d(values)
    offsets = np.arange(-lookback + 1, 1)
    return values[at[:, None] + offsets[None, :]]


def target_windows(values: np.ndarray, at: np.ndarray, horizon: int) -> np.ndarray:
    """Targets [N, horizon, F] for the origins `at`."""
    values = _as_2d(values)
    offsets = np.arange(1, horizon + 1)
    return values[at[:, None] + offsets[None, :]]


def complete(values: np.ndarray, at: np.ndarray, spec: WindowSpec, *, with_targets: bool = True) -> np.ndarray:
    """The origins of `at` whose window (and targets) hold no NaN."""
    values = _as_2d(values)
    bad = (~np.isfinite(values)).any(axis=1).astype(np.int64)
    csum = np.concatenate([[0], np.cumsum(bad)])
    end = at + 1 + (spec.horizon if with_targets else 0)
    start = at - spec.lookback + 1
    return at[(csum[end] - csum[start]) == 0]


def time_split(n: int, spec: WindowSpec, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Training and validation origins: the first `fraction` of the grid for training.

    Training targets end before index `cut`; validation inputs start at `cut`,
    so the two never share a value.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    cut = int(n * fraction)
    train = origins(n, spec, last=cut)
    valid = origins(n, spec, first=cut)
    if train.size == 0:
        raise TrainingError(
            f"{n} steps give no training window of {spec.lookback} + {spec.horizon} steps; give a longer series"
        )
    return train, valid


def _as_2d(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values[:, None] if values.ndim == 1 else values
