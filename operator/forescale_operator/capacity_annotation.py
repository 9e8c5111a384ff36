"""The per-resource capacity an SRE measured: the `forescale.io/capacity-rps` annotation.

The engine sizes each pool from a latency model it learns online; its prior
is a per-pod capacity at the SLO. The annotation sets that prior for one
InferenceDeployment from a load test (`forescale stress` prints the knee), as
requests per second one fp16 pod serves at the SLO:

    metadata:
      annotations:
        forescale.io/capacity-rps: "22"

The model's curve goes through that point until the pods show otherwise:
after enough samples the pods win, and a CapacityLearned event says so once.
Without the annotation the prior is `EngineParams.fallback_capacity_rps`.
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
            f"({MIN_RPS:g} to {MAX_RPS:g}), got {raw!r}; ignored, the engine's latency model starts from its default prior"
        )
    return EngineParams(name=name, fallback_capacity_rps=value), None
