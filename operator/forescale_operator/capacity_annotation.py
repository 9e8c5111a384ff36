"""The per-resource capacity an SRE measured: the `forescale.io/capacity-rps` annotation.

The engine sizes pool A from a per-pod capacity at the SLO that it learns;
before it has learned, it uses a fallback. The annotation sets that fallback
for one InferenceDeployment from a load test (`forescale stress` prints the
knee), as requests per second one fp16 pod serves at the SLO:

    metadata:
      annotations:
        forescale.io/capacity-rps: "22"

A configured capacity is trusted: the engine no longer probes above it while
pods stay comfortable (EngineParams.capacity_probe), it only learns down from
overloads and back up to rates the pods sustained. Without the annotation the
engine starts from `EngineParams.fallback_capacity_rps` and probes upwards.
An annotation, rather than a spec field, like KEDA's and Flagger's per-object
knobs: it tunes the engine, not the workload.
"""

from __future__ import annotations

import math
from typing import Mapping

from forescale_operator.engine import EngineParams

ANNOTATION = "forescale.io/capacity-rps"
#: a value outside this range is a typo (1e-320 would ask for unbounded pods)
MIN_RPS, MAX_RPS = 0.001, 1_000_000.0


def engine_params(name: str, annotations: Mapping[str, str] | None) -> tuple[EngineParams, str | None]:
    """EngineParams for the resource `name`, and a problem with its annotation (None when fine or absent)."""
    raw = (annotations or {}).get(ANNOTATION)
    if raw is None:
        return EngineParams(name=name), None
    try:
        value = float(str(raw).strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not MIN_RPS <= value <= MAX_RPS:
        return EngineParams(name=name), (
            f"annotation {ANNOTATION}: must be a positive number of requests per second per pod "
            f"({MIN_RPS:g} to {MAX_RPS:g}), got {raw!r}; ignored, the engine starts from its default and probes"
        )
    return EngineParams(name=name, fallback_capacity_rps=value, capacity_probe=0.0), None
