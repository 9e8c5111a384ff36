"""The forecaster seam of the loop. The predictor-backed one arrives with the forecast loop (issue 6)."""

from __future__ import annotations

from typing import Any, Protocol

from .children import Owner
from .spec import InferenceSpec


class Forecaster(Protocol):
    async def forecast(self, owner: Owner, spec: InferenceSpec, observations: Any) -> Any | None:
        """A forecast of the next horizon, or None when none can be made."""


class NoForecaster:
    async def forecast(self, owner: Owner, spec: InferenceSpec, observations: Any) -> None:
        return None
