"""The forecast seam's implementation: the predictor, with the model a resource names or the packaged default.

A model named by `spec.forecast.modelRef` is read from the ConfigMap's
binaryData and cached by the ConfigMap's resourceVersion. It is checked at
load: a file that is not a model, or whose features the loop cannot feed
(the loop's history holds latency_ms and rate, whatever the preset), is
refused with the mismatch named; the resource then shows ForecastReady=False
ModelRejected with that reason (the reporter reads `report`) and the packaged
default forecasts.

Each resource gets its own `OnlineForecaster` (predictor): the LSTM or the
`ewm` baseline, whichever is ahead on rolling horizon MAE, with bands
calibrated online. `report(uid)` says which model file is in use, which model
forecast and why, and the rolling coverage and MAE at the horizon.

The operator reads each (namespace, ConfigMap) at most once per `config_map_ttl_s` (60 s there), shared by
every resource naming it: the GET returns the whole model (tens of KB) and was made on every tick of every
such resource. A changed ConfigMap is used within that time. Constructed directly, the source reads on
every call (ttl 0), as it always did.

A hostile or broken model costs at most one load per ConfigMap version: a
failure is remembered by resourceVersion (a 31 KB ConfigMap claiming
hidden=6000 was reloaded, 1 to 4 s each, on every tick), and a model whose
forecast takes longer than `budget_s` of CPU is set aside for that version too.

The forecasts run one at a time on a worker thread of their own, not on the
event loop's shared pool. Why: a forecast is CPU-bound Python and small torch
calls, so more threads cannot run more of them at once under the GIL; they
only contend for it. Measured with 100 `OnlineForecaster`s of the benchmark's
shape, one tick each: one forecast took 1.04 ms of thread CPU at p50 (1.13 ms
p99) run one after another, and 2.21 ms (3.64 ms p99) handed to
`asyncio.to_thread` all at once (its pool ran 6 threads on the 2 cores). At 1,000 resources and a 15 s step the forecasts need
about a tenth of a core, so one thread keeps up and a tick waits for at most
the few forecasts queued ahead of it.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from forescale_predictor import load_forecaster
from forescale_predictor.errors import ModelFormatError
from forescale_predictor.forecast_types import LATENCY_MS, RATE, Forecast, History
from forescale_predictor.online_forecaster import OnlineForecaster

from ..children import Owner
from ..kube.refs import CONFIG_MAPS
from ..spec import InferenceSpec
from .forecast_source import DEFAULT_SOURCE, ForecastReport

logger = logging.getLogger(__name__)
#: what the loop's history holds (readings/history_buffer.py), for every preset
LOOP_FEATURES = (LATENCY_MS, RATE)


def model_mismatch(model: Any, preset: str) -> str | None:
    """Why the loop cannot feed `model`, or None. Baselines (no config) read whatever the loop has."""
    config = getattr(model, "config", None)
    if config is None:
        return None
    unfed = [f for f in config.features if f not in LOOP_FEATURES]
    if unfed:
        return (f"the model reads features {unfed} that the {preset!r} preset does not give the loop "
                f"(it gives {', '.join(LOOP_FEATURES)}); train it with --latency-column/--rate-column or "
                f"--query/--rate-query so its features are latency_ms and rate")
    if not any(t in LOOP_FEATURES for t in config.targets):
        return f"the model forecasts {list(config.targets)}, none of {', '.join(LOOP_FEATURES)}"
    return None


def describe(model: Any, where: str) -> str:
    """`where`, plus what the model says it was trained on and when (from its metadata)."""
    meta = getattr(model, "metadata", None) or {}
    parts = [where]
    source = meta.get("source") or meta.get("trained_by")
    if source:
        parts.append(f"trained on {source}" if meta.get("source") else f"trained by {source}")
    created = meta.get("created_at")
    if isinstance(created, (int, float)):
        parts.append(dt.datetime.fromtimestamp(created, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return ", ".join(parts)[:300]


#: CPU seconds one resource's forecast may take before its custom model is set aside (the default takes ~10 ms)
DEFAULT_BUDGET_S = 1.0


class PredictorForecastSource:
    """A `ForecastSource`: per resource, its model (modelRef or the packaged default) in an `OnlineForecaster`."""

    def __init__(self, api: Any = None, loader: Callable[..., Any] = load_forecaster,
                 budget_s: float = DEFAULT_BUDGET_S, config_map_ttl_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        #: the Kubernetes API client, for models kept in ConfigMaps (set once the operator has one)
        self.api = api
        self._load = loader
        self._default: Any = None
        self._custom: dict[tuple[str, str, str], tuple[Any, str]] = {}
        #: the last problem with a resource's model, by uid (shown in ForecastReady)
        self.problems: dict[str, str] = {}
        #: which model file each resource uses, by uid
        self.sources: dict[str, str] = {}
        #: each resource's OnlineForecaster and the model it wraps, by uid
        self._online: dict[str, tuple[Any, OnlineForecaster]] = {}
        #: CPU seconds this tick's forecast took, by uid (part of the decision time in the operator's metrics)
        self.seconds: dict[str, float] = {}
        self.budget_s = budget_s
        #: (namespace, ConfigMap) -> (resourceVersion, problem) of a model that failed: not tried again until it changes
        self._failed: dict[tuple[str, str], tuple[str, str]] = {}
        #: uid -> the (namespace, ConfigMap, resourceVersion) of the custom model its last forecast used
        self._in_use: dict[str, tuple[str, str, str]] = {}
        #: (namespace, ConfigMap) -> (when read, the ConfigMap or None), kept `config_map_ttl_s` and shared
        self._config_maps: dict[tuple[str, str], tuple[float, dict[str, Any] | None]] = {}
        self._config_map_ttl_s, self._clock = config_map_ttl_s, clock
        #: the forecasts' own worker (module docstring: one at a time costs half the CPU of many at once)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forescale-forecast")

    def _default_model(self) -> Any:
        if self._default is None:
            self._default = self._load(None)
        return self._default

    async def model_for(self, owner: Owner, spec: InferenceSpec) -> Any:
        ref, api = spec.forecast, self.api
        self._in_use.pop(owner.uid, None)
        if not ref.model_config_map or api is None:
            self.problems.pop(owner.uid, None)
            self.sources[owner.uid] = DEFAULT_SOURCE
            return await asyncio.to_thread(self._default_model)
        problem = None
        try:
            cm = await self._config_map(api, owner.namespace, ref.model_config_map)
        except Exception as exc:  # noqa: BLE001 - any API failure falls back to the default model
            cm, problem = None, f"cannot read ConfigMap {ref.model_config_map}: {exc}"
        if cm is not None:
            version = (cm.get("metadata") or {}).get("resourceVersion", "")
            key = (owner.namespace, ref.model_config_map, version)
            where = f"ConfigMap {owner.namespace}/{ref.model_config_map} key {ref.model_key}"
            cached = self._custom.get(key)
            failed = self._failed.get(key[:2])
            if cached is not None and cached[1] == ref.model_key:
                problem = model_mismatch(cached[0], spec.metrics.preset)
                if problem is None:
                    self._in_use[owner.uid] = key
                    return self._use(owner, cached[0], describe(cached[0], where))
                problem = f"{where}: {problem}"
            elif failed is not None and failed[0] == version:
                problem = failed[1]
            else:
                raw = (cm.get("binaryData") or {}).get(ref.model_key)
                if raw is None:
                    problem = f"ConfigMap {ref.model_config_map} has no binaryData key {ref.model_key!r}"
                else:
                    try:
                        model = await asyncio.to_thread(self._load, base64.b64decode(raw))
                    except (ModelFormatError, ValueError) as exc:
                        problem = f"{where} is not a forecaster model: {exc}"
                        self._failed[key[:2]] = (version, problem)
                    else:
                        self._custom = {k: v for k, v in self._custom.items() if k[:2] != key[:2]}
                        self._custom[key] = (model, ref.model_key)
                        self._failed.pop(key[:2], None)
                        mismatch = model_mismatch(model, spec.metrics.preset)
                        if mismatch is None:
                            self._in_use[owner.uid] = key
                            return self._use(owner, model, describe(model, where))
                        problem = f"{where}: {mismatch}"
        elif problem is None:
            problem = f"ConfigMap {ref.model_config_map} not found"
        # cut the cause, not the conclusion: a condition message holds 300 characters
        full = (problem if len(problem) <= 240 else problem[:239] + "…") + f"; using the {DEFAULT_SOURCE}"
        if self.problems.get(owner.uid) != full:
            logger.warning("%s/%s: %s", owner.namespace, owner.name, full)
        self.problems[owner.uid] = full
        self.sources[owner.uid] = DEFAULT_SOURCE
        return await asyncio.to_thread(self._default_model)

    async def _config_map(self, api: Any, namespace: str, name: str) -> dict[str, Any] | None:
        """The ConfigMap as read within the last `config_map_ttl_s`, else read now (an error is raised, not kept)."""
        now = self._clock()
        held = self._config_maps.get((namespace, name))
        if held is not None and now - held[0] < self._config_map_ttl_s:
            return held[1]
        found = await api.get(CONFIG_MAPS, namespace, name)
        if self._config_map_ttl_s > 0:
            self._config_maps[(namespace, name)] = (now, found)
        return found

    def _use(self, owner: Owner, model: Any, source: str) -> Any:
        self.problems.pop(owner.uid, None)
        self.sources[owner.uid] = source
        return model

    def _online_for(self, owner: Owner, model: Any) -> Any:
        """The resource's OnlineForecaster over `model` (a new one when the model changed); a baseline is used as is."""
        if getattr(model, "name", None) != "lstm":
            self._online.pop(owner.uid, None)
            return model
        held = self._online.get(owner.uid)
        if held is None or held[0] is not model:
            held = (model, OnlineForecaster(model))
            self._online[owner.uid] = held
        return held[1]

    def report(self, uid: str) -> ForecastReport:
        held = self._online.get(uid)
        return ForecastReport(problem=self.problems.get(uid), source=self.sources.get(uid, DEFAULT_SOURCE),
                              online=held[1].status() if held is not None else {}, seconds=self.seconds.get(uid, 0.0))

    def forget(self, owner: Owner) -> None:
        """Drop a deleted resource's model state (ForecastLoop.forget, on deletion)."""
        for table in (self.problems, self.sources, self._online, self.seconds, self._in_use):
            table.pop(owner.uid, None)

    async def forecast(self, owner: Owner, spec: InferenceSpec, history: History) -> Forecast | None:
        self.seconds.pop(owner.uid, None)
        if len(history) == 0:
            return None
        model = self._online_for(owner, await self.model_for(owner, spec))
        try:
            forecast, seconds = await asyncio.get_running_loop().run_in_executor(self._worker, _timed, model, history)
        except Exception as exc:  # noqa: BLE001 - a forecast failure must never stop the loop
            self.problems[owner.uid] = f"forecast failed: {exc}"
            logger.warning("forecast for %s/%s failed: %s", owner.namespace, owner.name, exc)
            return None
        self.seconds[owner.uid] = seconds
        self._check_budget(owner, seconds)
        # nothing observed yet (all gaps): the engine sizes on the observed rate; status carries the reason
        return None if forecast.model == "none" else forecast

    def _check_budget(self, owner: Owner, seconds: float) -> None:
        """A custom model over the budget is set aside until its ConfigMap changes (this forecast is still used)."""
        key = self._in_use.get(owner.uid)
        if key is None or seconds <= self.budget_s:
            return
        problem = (f"ConfigMap {key[0]}/{key[1]}: the model's forecast took {seconds:.2f} s of CPU, over the budget of "
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
