"""Fixtures for the engine's tests: the builders of engine_inputs.py, and decide() with the test defaults."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from engine_inputs import PARAMS, build_forecast, build_obs, build_spec
from forescale_operator.engine import EngineParams, EngineState, Observations, decide
from forescale_operator.spec import InferenceSpec
from forescale_predictor.forecast_types import Forecast


@pytest.fixture
def spec_of() -> Callable[..., InferenceSpec]:
    return build_spec


@pytest.fixture
def obs_of() -> Callable[..., Observations]:
    return build_obs


@pytest.fixture
def forecast_of() -> Callable[..., Forecast]:
    return build_forecast


@pytest.fixture
def params() -> EngineParams:
    return PARAMS


@pytest.fixture
def tick() -> Callable[..., Any]:
    """decide() with the test defaults: tick(spec, state, obs, forecast=None, params=PARAMS)."""
    def run(spec: InferenceSpec, state: EngineState, obs: Observations, forecast: Forecast | None = None,
            params: EngineParams = PARAMS):
        return decide(spec, state, obs, forecast, obs.time, params)
    return run
