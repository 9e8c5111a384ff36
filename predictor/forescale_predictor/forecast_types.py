"""The predictor's public data types: what goes into a forecaster and what comes out.

These are the contract between the predictor and its users (the operator's
loop, the decision engine, the replay simulator and the CLI). Keep them plain:
numpy arrays and floats, no torch, so that importing them is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

#: The feature names every forecaster understands. `rate` is requests per
#: second; `latency_ms` is the SLO quantile of request latency in milliseconds.
#: Other features (for example `queue_depth`) may be present and are used by
#: models trained with them.
RATE = "rate"
LATENCY_MS = "latency_ms"
TARGETS: tuple[str, ...] = (LATENCY_MS, RATE)


@dataclass(frozen=True)
class History:
    """Recent observations of one service, aligned on one regular time grid.

    `times` are epoch seconds, ascending, `step_seconds` apart. Each feature is
    an array of the same length; NaN marks a missing sample (forecasters fill
    or fall back explicitly, never silently).
    """

    step_seconds: float
    times: np.ndarray
    features: Mapping[str, np.ndarray]

    def __post_init__(self) -> None:
        if self.step_seconds <= 0:
            raise ValueError(f"step_seconds must be > 0, got {self.step_seconds}")
        n = len(self.times)
        for name, values in self.features.items():
            if len(values) != n:
                raise ValueError(f"feature {name!r} has {len(values)} samples, times has {n}")

    def __len__(self) -> int:
        return len(self.times)


@dataclass(frozen=True)
class Forecast:
    """A forecast of the next `horizon_seconds`, one value per step and quantile.

    `latency_ms[q][i]` and `rate[q][i]` are the q-quantile forecasts for the
    time `generated_at + (i + 1) * step_seconds`. `model` names what actually
    produced the numbers: "lstm", or the baseline used as a fallback, in which
    case `fallback_reason` says why.
    """

    generated_at: float
    step_seconds: float
    horizon_seconds: float
    quantiles: tuple[float, ...]
    latency_ms: Mapping[float, np.ndarray]
    rate: Mapping[float, np.ndarray]
    model: str
    fallback_reason: str | None = None
    extras: Mapping[str, float] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        """Number of horizon steps."""
        return int(round(self.horizon_seconds / self.step_seconds))

    @property
    def upper_quantile(self) -> float:
        return max(self.quantiles)

    def upper(self, feature: str) -> np.ndarray:
        """The upper band of a target (`latency_ms` or `rate`)."""
        return np.asarray(self._target(feature)[self.upper_quantile])

    def median(self, feature: str) -> np.ndarray:
        """The quantile closest to 0.5 of a target."""
        q = min(self.quantiles, key=lambda x: abs(x - 0.5))
        return np.asarray(self._target(feature)[q])

    def step_times(self) -> np.ndarray:
        """Epoch seconds of each horizon step."""
        return self.generated_at + self.step_seconds * np.arange(1, self.steps + 1)

    @property
    def peak_latency_ms(self) -> float:
        return float(np.nanmax(self.upper(LATENCY_MS)))

    @property
    def peak_rate(self) -> float:
        return float(np.nanmax(self.upper(RATE)))

    def _target(self, feature: str) -> Mapping[float, np.ndarray]:
        if feature == LATENCY_MS:
            return self.latency_ms
        if feature == RATE:
            return self.rate
        raise KeyError(f"unknown forecast target {feature!r}; expected one of {TARGETS}")


@runtime_checkable
class Forecaster(Protocol):
    """Anything that turns a History into a Forecast."""

    name: str

    def forecast(self, history: History) -> Forecast:
        """Forecast the horizon after the last sample of `history`."""
        ...

    def forecast_many(self, histories: Sequence[History]) -> list[Forecast]:
        """Forecast many series at once (batched where the model allows)."""
        ...
