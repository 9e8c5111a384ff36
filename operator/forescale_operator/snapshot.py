"""The incident "scene" saved for the post-mortem: a ConfigMap owned by the resource.

It holds the metrics window the operator saw (latency and rate on its grid),
the recent decisions, the forecast at the time, and the spec, as JSON. Pure:
the loop creates the ConfigMap through its API client. Nothing secret goes in
(the admin token never reaches this module).
"""

from __future__ import annotations

import json
import math
import time as _time
from typing import Any, Mapping, Sequence

from forescale_predictor.forecast_types import LATENCY_MS, RATE, Forecast, History

#: ConfigMaps are capped at 1 MiB; stay far under it.
MAX_BYTES = 512 * 1024


def snapshot_name(resource: str, at: float) -> str:
    """`chat-incident-20261202-101500`: sortable and unique per second."""
    return f"{resource}-incident-{_time.strftime('%Y%m%d-%H%M%S', _time.gmtime(at))}"[:253]


def _clean(values) -> list[float | None]:
    return [None if (v is None or (isinstance(v, float) and not math.isfinite(v))) else round(float(v), 3) for v in values]


def snapshot_configmap(
    *,
    namespace: str,
    name: str,
    uid: str,
    at: float,
    history: History,
    decisions: Sequence[Mapping[str, Any]],
    forecast: Forecast | None,
    spec: Mapping[str, Any],
    observations: Mapping[str, Any],
) -> dict[str, Any]:
    """The ConfigMap body. Oldest rows are dropped first if the JSON grows too big."""
    scene: dict[str, Any] = {
        "resource": f"{namespace}/{name}",
        "savedAt": at,
        "observations": observations,
        "window": {
            "stepSeconds": history.step_seconds,
            "times": [float(t) for t in history.times],
            "latencyMs": _clean(history.features.get(LATENCY_MS, [])),
            "rateRps": _clean(history.features.get(RATE, [])),
        },
        "decisions": list(decisions),
        "spec": dict(spec),
    }
    if forecast is not None:
        scene["forecast"] = {
            "model": forecast.model,
            "fallbackReason": forecast.fallback_reason,
            "generatedAt": forecast.generated_at,
            "stepSeconds": forecast.step_seconds,
            "latencyMs": {f"{q:g}": _clean(v) for q, v in forecast.latency_ms.items()},
            "rateRps": {f"{q:g}": _clean(v) for q, v in forecast.rate.items()},
        }
    text = json.dumps(scene, separators=(",", ":"), default=str)
    while len(text.encode()) > MAX_BYTES and scene["window"]["times"]:
        cut = max(1, len(scene["window"]["times"]) // 4)
        for key in ("times", "latencyMs", "rateRps"):
            scene["window"][key] = scene["window"][key][cut:]
        scene["decisions"] = scene["decisions"][len(scene["decisions"]) // 4:]
        text = json.dumps(scene, separators=(",", ":"), default=str)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": snapshot_name(name, at),
            "namespace": namespace,
            "labels": {"forescale.io/deployment": name, "forescale.io/snapshot": "incident"},
            "ownerReferences": [{
                "apiVersion": "forescale.io/v1alpha1",
                "kind": "InferenceDeployment",
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }],
        },
        "data": {"scene.json": text},
    }
