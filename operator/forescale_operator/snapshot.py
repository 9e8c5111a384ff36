"""The incident "scene" saved for the post-mortem: a ConfigMap owned by the resource.

It holds the metrics window the operator saw (latency and rate on its grid),
the recent decisions, the forecast at the time, and the spec, as JSON. Pure:
the loop creates the ConfigMap through its API client. Nothing secret goes in
(the admin token never reaches this module).

`with_diagnosis` adds the root-cause diagnosis (docs/diagnosis.md): the
evidence, the ranked findings and, when one was taken, a profile of the
slowest pod (`slowest_pod` names it). It takes them as JSON (`Evidence.to_json`,
`Diagnosis.to_json`, the `/admin/profile` answer): this module sits below the
diagnosis package in the operator's layers and imports nothing of it.
"""

from __future__ import annotations

import json
import math
import time as _time
from typing import Any, Mapping, Sequence

from forescale_predictor.forecast_types import LATENCY_MS, RATE, Forecast, History

#: ConfigMaps are capped at 1 MiB; stay far under it.
MAX_BYTES = 512 * 1024
#: the diagnosis's share of the ConfigMap: evidence and findings (tens of KiB even for a thousand pods) ...
MAX_DIAGNOSIS_BYTES = 64 * 1024
#: ... and the profile, whose torch table is cut to fit; with the scene, under 1 MiB in all
MAX_PROFILE_BYTES = 256 * 1024


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


def slowest_pod(evidence: Mapping[str, Any] | None) -> str | None:
    """The pod with the highest p99 in the evidence's `pod_p99_ms` (the one to profile), or None."""
    pods = (evidence or {}).get("pod_p99_ms") if isinstance(evidence, Mapping) else None
    if not isinstance(pods, Mapping):
        return None
    usable = {str(pod): float(ms) for pod, ms in pods.items()
              if isinstance(ms, (int, float)) and not isinstance(ms, bool) and math.isfinite(ms)}
    return max(sorted(usable), key=usable.__getitem__) if usable else None


def with_diagnosis(configmap: Mapping[str, Any], *, evidence: Mapping[str, Any] | None, diagnosis: Mapping[str, Any] | None,
                   profile: Mapping[str, Any] | None = None, profiled_pod: str | None = None) -> dict[str, Any]:
    """A copy of the snapshot ConfigMap body with `evidence.json`, `diagnosis.json` and, when given,
    `profile.json` (`{"pod": ..., "profile": <the /admin/profile answer>}`) in its data.

    Never raises for what it is given: NaN and ±inf become null, a value JSON cannot hold becomes its
    text, a part over its byte budget is replaced by a note saying how big it was (the profile's table
    is cut first), so the ConfigMap stays under the 1 MiB limit.
    """
    body = dict(configmap)
    data = dict(body.get("data") or {})
    data["evidence.json"] = _bounded_json(evidence, MAX_DIAGNOSIS_BYTES, "evidence")
    data["diagnosis.json"] = _bounded_json(diagnosis, MAX_DIAGNOSIS_BYTES, "diagnosis")
    if profile is not None:
        scene = {"pod": profiled_pod, "profile": dict(profile) if isinstance(profile, Mapping) else profile}
        text = _json(scene)
        table = scene["profile"].get("table") if isinstance(scene["profile"], dict) else None
        while len(text.encode()) > MAX_PROFILE_BYTES and isinstance(table, str) and table:
            # JSON escapes make the text longer than the table: cut by a quarter until it fits
            table = table[:len(table) * 3 // 4]
            scene["profile"]["table"] = table + "\n[cut to fit the snapshot]"
            text = _json(scene)
        data["profile.json"] = text if len(text.encode()) <= MAX_PROFILE_BYTES else _too_big("profile", len(text.encode()))
    body["data"] = data
    return body


def _finite(value: Any) -> Any:
    """`value` with every NaN and ±inf replaced by None, containers rebuilt (tuples become lists)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json(value: Any) -> str:
    return json.dumps(_finite(value), separators=(",", ":"), default=str, allow_nan=False)


def _bounded_json(value: Any, limit: int, what: str) -> str:
    text = _json(value)
    return text if len(text.encode()) <= limit else _too_big(what, len(text.encode()))


def _too_big(what: str, size: int) -> str:
    return _json({"omitted": f"the {what} was {size} bytes, over its share of the snapshot ConfigMap"})
