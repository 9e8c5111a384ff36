"""The incident snapshot ConfigMap."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forescale_operator.snapshot import MAX_BYTES, snapshot_configmap, snapshot_name
from forescale_predictor.forecast_types import LATENCY_MS, RATE, Forecast, History


def _history(n):
    t = np.arange(n, dtype=float) * 5 + 1_700_000_000
    lat = np.linspace(50, 400, n)
    lat[3 % max(n, 1):4] = np.nan
    return History(5, t, {LATENCY_MS: lat, RATE: np.full(n, 20.0)})


def _forecast():
    return Forecast(1_700_000_100, 15, 45, (0.5, 0.9), {0.5: np.array([300.0, 310, 320]), 0.9: np.array([350.0, 360, 380])},
                    {0.5: np.array([20.0, 21, 22]), 0.9: np.array([25.0, 26, 27])}, "lstm")


@pytest.mark.parametrize("n", [0, 10, 500])
def test_snapshot_is_owned_labelled_and_valid_json(n):
    cm = snapshot_configmap(namespace="ml", name="chat", uid="u-1", at=1_764_670_500, history=_history(n),
                            decisions=[{"summary": "Shift 30% to chat-b"}], forecast=_forecast(),
                            spec={"slo": {"targetLatencyMs": 200}}, observations={"latency_ms": 412.0})
    assert cm["metadata"]["name"] == "chat-incident-20251202-101500"
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert cm["metadata"]["labels"]["forescale.io/deployment"] == "chat"
    scene = json.loads(cm["data"]["scene.json"])
    assert len(scene["window"]["times"]) == n
    assert scene["forecast"]["latencyMs"]["0.9"] == [350.0, 360.0, 380.0]
    assert scene["decisions"][0]["summary"] == "Shift 30% to chat-b"
    if n > 3:
        assert scene["window"]["latencyMs"][3] is None  # NaN is written as null, JSON stays valid


def test_huge_window_is_trimmed_from_the_oldest_end():
    n = 60_000
    cm = snapshot_configmap(namespace="ml", name="chat", uid="u", at=0, history=_history(n), decisions=[{"i": i} for i in range(100)],
                            forecast=None, spec={}, observations={})
    text = cm["data"]["scene.json"]
    assert len(text.encode()) <= MAX_BYTES
    scene = json.loads(text)
    assert scene["window"]["times"][-1] == _history(n).times[-1]  # the newest rows are kept
    assert 0 < len(scene["window"]["times"]) < n


def test_name_is_sortable_by_time():
    assert snapshot_name("chat", 0) < snapshot_name("chat", 3600)
