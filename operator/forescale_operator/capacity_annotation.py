"""The per-resource capacities an SRE measured: the `forescale.io/capacity-rps` annotations.

The engine sizes each pool from a latency model it learns online; its prior
is a per-pod capacity at the SLO. The annotation sets that prior for one
InferenceDeployment from a load test (`forescale stress` prints the knee), as
requests per second one fp16 pod serves at the SLO:

    metadata:
      annotations:
        forescale.io/capacity-rps: "22"
        forescale.io/capacity-rps-b: "60"   # only where pool B serves a lighter model

Pool B serves A's model at a lower precision unless its template says
otherwise; then its own load test sets B's prior with `capacity-rps-b`, per
pod at B's own precision, as `forescale stress` against B's server measures it
(a distilled student serves several times A's rate: without it, B's reserve
would be sized as if its pods were A's). The engine carries each to the
other precisions by their speeds.

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
ANNOTATION_B = "forescale.io/capacity-rps-b"
#: each annotation and the EngineParams field it sets
FIELDS = {ANNOTATION: "fallback_capacity_rps", ANNOTATION_B: "fallback_capacity_rps_b"}
#: a value outside this range is a typo (1e-320 would ask for unbounded pods)
MIN_RPS, MAX_RPS = 0.001, 1_000_000.0


def raw_values(annotations: Mapping[str, str] | None) -> tuple[str | None, ...]:
    """The raw text of each capacity annotation (None where absent): a change of any rebinds."""
    return tuple((annotations or {}).get(key) for key in FIELDS)


def engine_params(name: str, annotations: Mapping[str, str] | None) -> tuple[EngineParams, str | None]:
    """EngineParams for the resource `name`, and what is wrong with its annotations (None when fine or absent).
    A bad value is ignored on its own: the other annotation still applies."""
    values, problems = {}, []
    for key, field in FIELDS.items():
        raw = (annotations or {}).get(key)
        if raw is None:
            continue
        try:
            value = float(str(raw).strip())
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not MIN_RPS <= value <= MAX_RPS:
            problems.append(
                f"annotation {key}: must be a positive number of requests per second per pod "
                f"({MIN_RPS:g} to {MAX_RPS:g}), got {raw!r}; ignored, the engine's latency model starts from its default prior")
            continue
        values[field] = value
    return EngineParams(name=name, **values), "; ".join(problems) or None
