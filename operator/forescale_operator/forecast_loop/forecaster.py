"""The tick's forecaster seam: the predictor, with the model a resource names or the packaged default.

A model named by `spec.forecast.modelRef` is read from the ConfigMap's
binaryData and cached by the ConfigMap's resourceVersion. A model that cannot
be read is reported (ForecastReady=False with the reason) and the packaged
default is used instead; a history too short for the LSTM gets the
predictor's declared baseline fallback (`Forecast.model` names it).

A hostile or broken model costs at most one load per ConfigMap version: a
failure is remembered by resourceVersion (a 31 KB ConfigMap claiming
hidden=6000 was reloaded, 1 to 4 s each, on every tick), and a model whose
forecast takes longer than `budget_s` of CPU is set aside for that version too.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from typing import Any, Callable

from forescale_predictor import load_forecaster
from forescale_predictor.errors import ModelFormatError
from forescale_predictor.forecast_types import Forecast

from ..children import Owner
from ..kube.refs import Ref
from ..spec import InferenceSpec
from .metrics import LoopReadings

logger = logging.getLogger(__name__)
CONFIG_MAPS = Ref("", "v1", "configmaps", "ConfigMap")


#: CPU seconds one resource's forecast may take before its custom model is set aside (the default takes ~10 ms)
DEFAULT_BUDGET_S = 1.0


class LoopForecaster:
    def __init__(self, api: Any = None, loader: Callable[..., Any] = load_forecaster,
                 budget_s: float = DEFAULT_BUDGET_S) -> None:
        #: the Kubernetes API client, for models kept in ConfigMaps (set once the operator has one)
        self.api = api
        self._load = loader
        self._default: Any = None
        self._custom: dict[tuple[str, str, str], Any] = {}
        #: the last problem with a resource's model, by uid (shown in ForecastReady)
        self.problems: dict[str, str] = {}
        #: seconds the last forecast computed, by uid (the Actor adds it to the decision time)
        self.seconds: dict[str, float] = {}
        self.budget_s = budget_s
        #: (namespace, ConfigMap) -> (resourceVersion, problem) of a model that failed: not tried again until it changes
        self._failed: dict[tuple[str, str], tuple[str, str]] = {}
        #: uid -> the (namespace, ConfigMap, resourceVersion) of the custom model its last forecast used
        self._in_use: dict[str, tuple[str, str, str]] = {}

    def _default_model(self) -> Any:
        if self._default is None:
            self._default = self._load(None)
        return self._default

    async def model_for(self, owner: Owner, spec: InferenceSpec) -> Any:
        ref, api = spec.forecast, self.api
        self._in_use.pop(owner.uid, None)
        if not ref.model_config_map or api is None:
            self.problems.pop(owner.uid, None)
            return await asyncio.to_thread(self._default_model)
        problem = None
        try:
            cm = await api.get(CONFIG_MAPS, owner.namespace, ref.model_config_map)
        except Exception as exc:  # noqa: BLE001 - any API failure falls back to the default model
            cm, problem = None, f"cannot read ConfigMap {ref.model_config_map}: {exc}"
        if cm is not None:
            version = (cm.get("metadata") or {}).get("resourceVersion", "")
            key = (owner.namespace, ref.model_config_map, version)
            failed = self._failed.get(key[:2])
            if key in self._custom:
                self.problems.pop(owner.uid, None)
                self._in_use[owner.uid] = key
                return self._custom[key]
            raw = (cm.get("binaryData") or {}).get(ref.model_key)
            if failed is not None and failed[0] == version:
                problem = failed[1]
            elif raw is None:
                problem = f"ConfigMap {ref.model_config_map} has no binaryData key {ref.model_key!r}"
            else:
                try:
                    model = await asyncio.to_thread(self._load, base64.b64decode(raw))
                    self._custom = {k: v for k, v in self._custom.items() if k[:2] != key[:2]}
                    self._custom[key] = model
                    self._failed.pop(key[:2], None)
                    self.problems.pop(owner.uid, None)
                    self._in_use[owner.uid] = key
                    return model
                except (ModelFormatError, ValueError) as exc:
                    problem = f"ConfigMap {ref.model_config_map}/{ref.model_key} is not a forecaster model: {exc}"
                    self._failed[key[:2]] = (version, problem)
        elif problem is None:
            problem = f"ConfigMap {ref.model_config_map} not found"
        self.problems[owner.uid] = problem + "; using the packaged default model"
        return await asyncio.to_thread(self._default_model)

    async def forecast(self, owner: Owner, spec: InferenceSpec, observations: LoopReadings | None) -> Forecast | None:
        if observations is None or not observations.sample.available or len(observations.history) == 0:
            return None
        model = await self.model_for(owner, spec)
        try:
            forecast, seconds = await asyncio.to_thread(_timed, model, observations.history)
            self.seconds[owner.uid] = seconds
            self._check_budget(owner, seconds)
            return forecast
        except Exception as exc:  # noqa: BLE001 - a forecast failure must never stop the loop
            self.problems[owner.uid] = f"forecast failed: {exc}"
            logger.warning("forecast for %s/%s failed: %s", owner.namespace, owner.name, exc)
            return None


    def _check_budget(self, owner: Owner, seconds: float) -> None:
        """A custom model over the budget is set aside until its ConfigMap changes (this forecast is still used)."""
        key = self._in_use.get(owner.uid)
        if key is None or seconds <= self.budget_s:
            return
        problem = (f"ConfigMap {key[1]}: the model's forecast took {seconds:.2f} s of CPU, over the budget of "
                   f"{self.budget_s:g} s")
        logger.warning("%s/%s: %s; using the packaged default model", owner.namespace, owner.name, problem)
        self._custom.pop(key, None)
        self._failed[key[:2]] = (key[2], problem)
        self.problems[owner.uid] = problem + "; using the packaged default model from the next tick"


def _timed(model: Any, history: Any) -> tuple[Forecast, float]:
    """The forecast and its compute time: this thread's CPU time, so neither the wait for a free
    worker nor for the GIL (handed over every 5 ms among busy threads) counts as forecasting."""
    started = time.thread_time()
    forecast = model.forecast(history)
    return forecast, time.thread_time() - started
