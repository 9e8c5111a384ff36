"""The forecaster seam: modelRef loading, refusal of a bad or incompatible model (ForecastReady=False with the
reason), which model is in use, and the rolling coverage and MAE in status and metrics."""

from __future__ import annotations

import base64
import copy
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from forescale_operator.actuators import Actuators
from forescale_operator.events import RecordingEvents
from forescale_operator.forecast_loop.binding import Bindings
from forescale_operator.forecasting.forecaster import PredictorForecastSource, model_mismatch
from forescale_operator.forecast_loop.loop import ForecastLoop
from forescale_operator.handlers.deps import HandlerDeps
from forescale_operator.handlers.reconcile import reconcile
from forescale_operator.handlers.tick import TickContext, TickDeps, tick
from forescale_operator.kube.refs import CONFIG_MAPS
from forescale_operator.telemetry import OperatorMetrics
from forescale_predictor import DEFAULT_MODEL_PATH, load_forecaster
from forescale_predictor.model_config import ModelConfig
from forescale_predictor.model_file import to_bytes
from forescale_predictor.scaling import Standardiser
from forescale_predictor.trained_model import TrainedModel, build_net

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "forecast_loop"))
from test_loop_scenario import Clock, ScriptedSource  # noqa: E402


def untrained(features: tuple[str, ...], targets: tuple[str, ...] | None = None) -> bytes:
    """A well-formed model file of the given features (weights at their zero start: it forecasts the last value)."""
    targets = targets or features
    config = ModelConfig(features=features, targets=targets, step_seconds=15.0, lookback=16, horizon=12, hidden=8)
    model = TrainedModel(config, build_net(config), Standardiser(np.zeros(len(features)), np.ones(len(features))),
                         Standardiser(np.zeros(len(targets)), np.ones(len(targets))), shrink=np.ones(len(targets)),
                         metadata={"source": "http://prometheus:9090 'p99 of chat'"})
    return to_bytes(model)


@pytest.mark.parametrize("features, targets, problem", [
    (("latency_ms", "rate"), None, None),
    (("rate",), None, None),
    (("value",), None, "reads features ['value'] that the 'vllm' preset does not give the loop"),
    (("latency_ms", "rate", "queue_depth"), ("latency_ms", "rate"), "reads features ['queue_depth']"),
])
def test_model_mismatch_names_the_features(features, targets, problem):
    model = load_forecaster(untrained(features, targets))
    got = model_mismatch(model, "vllm")
    assert (got is None) if problem is None else (problem in got)


def _configmap(data: bytes | None, key: str = "model.pt") -> dict:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "chat-model"}}
    if data is not None:
        body["binaryData"] = {key: base64.b64encode(data).decode()}
    return body


@pytest.fixture
def run_loop(cluster, api, example):
    clock, source, telemetry = Clock(), ScriptedSource(), OperatorMetrics()
    events = RecordingEvents()
    deps = TickDeps(
        api=api, actuators=Actuators(api), events=events,
        loop=ForecastLoop(bindings=Bindings(prometheus_url="http://prom:9090", build=lambda url: source),
                          forecasts=PredictorForecastSource(api=api), telemetry=telemetry, clock=clock),
    )

    async def start(model_ref: bool = True):
        body = example("minimal")
        body["spec"]["forecast"] = {"stepSeconds": 15}
        if model_ref:
            body["spec"]["forecast"]["modelRef"] = {"configMap": "chat-model", "key": "model.pt"}
        await reconcile(cluster.put(body), HandlerDeps(api=api, actuators=Actuators(api), events=events))

    async def ticks(n: int):
        for i in range(n):
            clock.t += 15.0
            source.rate = 40.0 + 10.0 * math.sin(i / 5.0)
            source.latency_ms = 60.0 + 0.2 * source.rate
            await tick(TickContext(copy.deepcopy(cluster.get("inferencedeployments", "default", "chat"))), deps)
        return cluster.get("inferencedeployments", "default", "chat")["status"]

    return start, ticks, telemetry, deps


def _condition(status, ctype="ForecastReady"):
    return next(c for c in status["conditions"] if c["type"] == ctype)


@pytest.mark.parametrize("content, key, reason", [
    (None, "model.pt", "has no binaryData key 'model.pt'"),
    (b"not a torch file", "model.pt", "is not a forecaster model"),
    (("value",), "model.pt", "reads features ['value']"),
    ("absent", "model.pt", "ConfigMap chat-model not found"),
])
async def test_bad_model_is_forecast_ready_false_with_the_reason(api, run_loop, content, key, reason):
    start, ticks, _, _ = run_loop
    if content != "absent":
        data = untrained(content) if isinstance(content, tuple) else content
        await api.create(CONFIG_MAPS, "default", _configmap(data, key))
    await start()
    status = await ticks(3)
    ready = _condition(status)
    assert ready["status"] == "False" and ready["reason"] == "ModelRejected"
    assert reason in ready["message"] and "using the packaged default model" in ready["message"]
    assert status["forecast"]["modelSource"] == "packaged default model"


async def test_good_model_is_used_and_status_says_which(api, run_loop):
    start, ticks, telemetry, _ = run_loop
    await api.create(CONFIG_MAPS, "default", _configmap(DEFAULT_MODEL_PATH.read_bytes()))
    await start()
    status = await ticks(40)  # 40 ticks: the first 12 outcomes at the 180 s horizon are scored
    assert _condition(status)["status"] == "True"
    forecast = status["forecast"]
    assert forecast["modelSource"].startswith("ConfigMap default/chat-model key model.pt")
    assert forecast["model"] == "lstm" and forecast["selection"].startswith("lstm: not yet scored")
    assert forecast["nominalCoverage"] == 0.8 and 0 <= forecast["bandCoverage"] <= 1
    assert forecast["recentErrorMs"] >= 0 and forecast["recentErrorRate"] >= 0
    labels = {"namespace": "default", "name": "chat"}
    assert telemetry.registry.get_sample_value("forescale_operator_forecast_model", {**labels, "model": "lstm"}) == 1.0
    coverage = telemetry.registry.get_sample_value("forescale_operator_forecast_band_coverage", {**labels, "target": "latency_ms"})
    assert coverage == forecast["bandCoverage"] or coverage == pytest.approx(forecast["bandCoverage"], abs=1e-3)
    mae = telemetry.registry.get_sample_value("forescale_operator_forecast_rolling_mae", {**labels, "target": "rate"})
    assert mae == pytest.approx(forecast["recentErrorRate"], abs=1e-3)


async def test_without_model_ref_the_packaged_default_forecasts(run_loop):
    start, ticks, _, deps = run_loop
    await start(model_ref=False)
    status = await ticks(2)
    assert _condition(status)["status"] == "True"
    assert status["forecast"]["modelSource"] == "packaged default model"
    assert deps.loop.forecasts.report("nope").problem is None
