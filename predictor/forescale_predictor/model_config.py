"""What a trained forecaster model is: its shape and its data contract."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .forecast_types import LATENCY_MS, RATE


#: bounds on a model's shape, checked before any tensor is built: a model file (a ConfigMap a
#: user wrote) of 31 KB that says hidden=6000 made the operator allocate about 580 MB per load
LIMITS = {"hidden": 1024, "layers": 4, "lookback": 4096, "horizon": 1024, "ar_steps": 4096, "level_steps": 4096}
MAX_FEATURES = 16
MAX_QUANTILES = 99


@dataclass(frozen=True)
class ModelConfig:
    """Everything needed to rebuild the network and feed it.

    `features` are read from a History, in this order; `targets` (a subset of
    `features`) are forecast. `lookback` and `horizon` count steps of
    `step_seconds`. `level_steps` is how many recent steps set a window's
    level (see scaling.py). `time_features` adds the time of day as two
    inputs (sin, cos): useful on series that span days. `gap_channels` feeds
    each feature as its value carried forward plus a 1/0 "observed this step"
    indicator, so the model forecasts through idle steps and missing scrapes
    (gaps.py); models saved before it existed load with it off.
    """

    features: tuple[str, ...] = (LATENCY_MS, RATE)
    targets: tuple[str, ...] = (LATENCY_MS, RATE)
    step_seconds: float = 15.0
    lookback: int = 32
    horizon: int = 12
    quantiles: tuple[float, ...] = (0.1, 0.5, 0.9)
    hidden: int = 32
    layers: int = 1
    ar_steps: int = 8
    level_steps: int = 4
    time_features: bool = False
    gap_channels: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [t for t in self.targets if t not in self.features]
        if missing:
            raise ValueError(f"targets {missing} are not among the features {list(self.features)}")
        if 0.5 not in self.quantiles:
            raise ValueError(f"quantiles must include the median 0.5, got {self.quantiles}")
        if any(not 0 < q < 1 for q in self.quantiles) or list(self.quantiles) != sorted(set(self.quantiles)):
            raise ValueError(f"quantiles must be distinct, ascending and in (0, 1), got {self.quantiles}")
        if self.ar_steps > self.lookback or self.level_steps > self.lookback:
            raise ValueError("ar_steps and level_steps cannot exceed lookback")
        for key, most in LIMITS.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise ValueError(f"{key} must be an integer from 1 to {most}, got {value!r}")
        if not 1 <= len(self.features) <= MAX_FEATURES or len(self.quantiles) > MAX_QUANTILES:
            raise ValueError(f"at most {MAX_FEATURES} features and {MAX_QUANTILES} quantiles, got {len(self.features)} "
                             f"and {len(self.quantiles)}")

    @property
    def horizon_seconds(self) -> float:
        return self.horizon * self.step_seconds

    @property
    def n_inputs(self) -> int:
        per_feature = 2 if self.gap_channels else 1
        return per_feature * len(self.features) + (2 if self.time_features else 0)

    @property
    def target_index(self) -> tuple[int, ...]:
        return tuple(self.features.index(t) for t in self.targets)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["features"], data["targets"], data["quantiles"] = list(self.features), list(self.targets), list(self.quantiles)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelConfig":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for key in ("features", "targets", "quantiles"):
            if key in known:
                known[key] = tuple(known[key])
        return cls(**known)
