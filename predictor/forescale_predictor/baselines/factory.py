"""Make a baseline by name."""

from __future__ import annotations

from .base import Baseline
from .cycle import Cycle
from .ewm import EWMean
from .last_value import LastValue
from .linear_lags import LinearLags
from .seasonal_naive import SeasonalNaive

BASELINES: dict[str, type[Baseline]] = {
    "last": LastValue,
    "seasonal": SeasonalNaive,
    "ewm": EWMean,
    "linear": LinearLags,
    "cycle": Cycle,
}


def make_baseline_model(name: str, *, step_seconds: float, horizon: int, quantiles=(0.5, 0.9),
                        counts: bool = False) -> Baseline:
    """The array-level baseline called `name` (one of BASELINES); `counts` for a series of event counts
    (a request rate), whose band scales with the square root of its level (base.py)."""
    try:
        cls = BASELINES[name]
    except KeyError:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}") from None
    return cls(step_seconds=step_seconds, horizon=horizon, quantiles=tuple(quantiles), counts=counts)
