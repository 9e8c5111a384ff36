"""Defect 7 of issue 19: a hostile model ConfigMap.

A 31 KB ConfigMap claiming hidden=6000 made the operator allocate ~580 MB and
spend 1-4 s on every tick, reloading each time. Now: the model's shape is
bounded and checked before any tensor is built; a failed model is remembered
per ConfigMap resourceVersion; a model over the forecast time budget is set aside.
"""

from __future__ import annotations

import base64
import io
import resource
import time

import numpy as np
import pytest
import torch

from forescale_operator.children import Owner
from forescale_operator.forecasting.forecaster import PredictorForecastSource
from forescale_operator.spec import parse_spec
from forescale_predictor import load_forecaster
from forescale_predictor.forecast_types import History
from forescale_predictor.model_config import ModelConfig
from forescale_predictor.trained_model import build_net

OWNER = Owner("chat", "default", "uid-1")


def _model_bytes(claim: dict, hidden: int = 8) -> bytes:
    """A model file whose weights are those of `hidden`, whose config claims `claim`."""
    config = ModelConfig(hidden=hidden).to_dict()
    payload = {"format": "forescale-forecaster", "version": 1, "config": {**config, **claim},
               "state_dict": build_net(ModelConfig(hidden=hidden)).state_dict(),
               "scalers": {"input": {"mean": [0.0, 0.0], "scale": [1.0, 1.0]}, "target": {"mean": [0.0, 0.0], "scale": [1.0, 1.0]}},
               "shrink": [1.0, 1.0]}
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


class _Api:
    def __init__(self, data: bytes, version: str = "1") -> None:
        self.data, self.version = data, version

    async def get(self, ref, namespace, name):
        return {"metadata": {"name": name, "resourceVersion": self.version},
                "binaryData": {"model.pt": base64.b64encode(self.data).decode()}}


class _CountingLoader:
    def __init__(self) -> None:
        self.custom_loads = 0

    def __call__(self, source=None):
        if source is not None:
            self.custom_loads += 1
        return load_forecaster(source)


def _spec(example):
    body = example("minimal")
    body["spec"]["forecast"] = {"modelRef": {"configMap": "my-model"}}
    return parse_spec(body["spec"])


HOSTILE = [
    ("claims hidden=6000 over small weights", {"hidden": 6000}, "hidden must be an integer from 1 to 1024"),
    ("claims hidden=1000 over small weights", {"hidden": 1000}, "do not have the shapes the config claims"),
    ("claims 12 layers", {"layers": 12}, "layers must be an integer from 1 to 4"),
    ("claims a horizon of 100000 steps", {"horizon": 100_000}, "horizon must be an integer from 1 to 1024"),
    ("claims 199 quantiles", {"quantiles": [i / 200 for i in range(1, 200)]}, "at most 16 features and 99 quantiles"),
]


@pytest.mark.parametrize("name,claim,message", HOSTILE, ids=[c[0] for c in HOSTILE])
async def test_a_hostile_model_is_refused_before_allocation_and_only_once_per_version(example, name, claim, message):
    loader = _CountingLoader()
    api = _Api(_model_bytes(claim))
    forecaster = PredictorForecastSource(api, loader=loader)
    spec = _spec(example)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    for _ in range(5):
        await forecaster.model_for(OWNER, spec)
    assert time.perf_counter() - started < 5.0
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) < 200 * 1024  # KiB: far from 580 MB
    assert loader.custom_loads == 1  # remembered for this resourceVersion
    problem = forecaster.report(OWNER.uid).problem  # what ForecastReady=False ModelRejected says
    assert message in problem and "packaged default" in problem
    api.version = "2"  # the user fixed (or changed) it: tried again, once
    for _ in range(3):
        await forecaster.model_for(OWNER, spec)
    assert loader.custom_loads == 2


class _SlowModel:
    """A model whose forecast spins the CPU for `seconds`; its forecast is itself (a `model` attribute is all the seam reads)."""

    model = "slow"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def forecast(self, history):
        end = time.thread_time() + self.seconds
        while time.thread_time() < end:
            pass
        return self


async def test_a_model_over_the_time_budget_is_set_aside_for_its_version(example):
    slow = _SlowModel(0.05)
    default = _SlowModel(0.0)
    forecaster = PredictorForecastSource(_Api(b"anything"), loader=lambda source=None: default if source is None else slow,
                                         budget_s=0.01)
    spec = _spec(example)
    history = History(5.0, np.array([0.0]), {"latency_ms": np.array([50.0]), "rate": np.array([10.0])})
    assert await forecaster.forecast(OWNER, spec, history) is slow
    report = forecaster.report(OWNER.uid)
    assert "over the budget of 0.01 s" in report.problem and report.seconds >= 0.05
    assert await forecaster.model_for(OWNER, spec) is default


async def test_the_operator_reads_a_model_configmap_once_a_minute_shared_by_the_resources_naming_it(example):
    """With a ttl (the operator's 60 s), resources naming one ConfigMap share one GET per ttl; a new version
    is used once the ttl has passed, and loaded once."""
    gets = []

    class Counting(_Api):
        async def get(self, ref, namespace, name):
            gets.append((namespace, name))
            return await super().get(ref, namespace, name)

    loader, now = _CountingLoader(), [0.0]
    api = Counting(_model_bytes({}))
    forecaster = PredictorForecastSource(api, loader=loader, config_map_ttl_s=60.0, clock=lambda: now[0])
    spec = _spec(example)
    others = [Owner(f"chat-{i}", "default", f"uid-{i}") for i in range(3)]
    for tick in range(4):
        now[0] = tick * 15.0
        for owner in others:
            await forecaster.model_for(owner, spec)
    assert gets == [("default", "my-model")] and loader.custom_loads == 1
    assert all(forecaster.report(o.uid).source.startswith("ConfigMap default/my-model") for o in others)
    api.version = "2"
    now[0] = 61.0
    await forecaster.model_for(others[0], spec)
    assert len(gets) == 2 and loader.custom_loads == 2
