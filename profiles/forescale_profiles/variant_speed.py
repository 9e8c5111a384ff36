"""Pool B's lighter model, as measured: the speed and quality of the built variants.

`variant_speed.json` beside this module is written by
`python -m bench.variants --write-speed` from a `forescale variants report`
run (its commit and date are in it). The figures are measured on this
project's CPU and carried to the GPU profiles: everything that uses them
says so (`LABEL`).

A pool-B variant is a model served at pool B's precision, int8: `int8` is the
teacher at int8, `distilled-int8` the 4-layer student at int8. Its service
time on a GPU profile, relative to A's fp16, is the profiles' own int8 factor
(TensorRT's, `precision.INT8_OVER_FP16`) times the student's model-compute
time relative to the teacher's (both fp32 on the CPU: the layer count's
effect, which a GPU keeps). The CPU's own int8 speed-up is not carried: a
GPU's int8 is the TensorRT figure. Its agreement is the measured mean cosine
of its embeddings to the fp32 teacher's on held-out sentences: what
`emergency.minAgreement` is compared with before traffic moves to B.

Here, not in the model server, because the simulator reads it and the
simulator never imports the server. Pure Python: no numpy, no torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .precision import INT8_OVER_FP16

SPEED_FILE = Path(__file__).with_name("variant_speed.json")
LABEL = "measured on CPU, carried to the GPU profile"
#: the pool-B variants: the model's name in the measurement, served at int8
POOL_B_VARIANTS = {"int8": None, "distilled-int8": "distilled"}


@dataclass(frozen=True)
class PoolBVariant:
    """One pool-B variant as the replay and the engine's prior see it."""

    name: str
    #: service time relative to pool A's fp16 on the same GPU profile (int8 alone: 0.6)
    service_factor: float
    #: the service time of its model relative to the teacher's at the same precision (1 for the teacher)
    model_factor: float
    #: mean cosine to the fp32 teacher on held-out sentences (what minAgreement is checked against)
    agreement: float
    label: str = LABEL


@lru_cache(maxsize=4)
def measured(path: Path = SPEED_FILE) -> dict:
    """The recorded measurement; ValueError when none was recorded or it is unreadable."""
    if not path.is_file():
        raise ValueError(f"{path} is missing: run `python -m bench.variants --write-speed`")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("variants"), dict):
        raise ValueError(f"{path}: no 'variants' table")
    return data


def speed_ratio(variant: str = "distilled-int8", key: str = "speedup_vs_fp32_b32", path: Path = SPEED_FILE) -> float:
    """A recorded figure of `variant` against the fp32 teacher (a ratio: higher is faster)."""
    rows = measured(path)["variants"]
    if variant not in rows:
        raise ValueError(f"{path} has no variant {variant!r}; it has {', '.join(sorted(rows))}")
    value = rows[variant].get(key)
    if not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{path}: {variant!r} has no positive {key!r} (got {value!r})")
    return float(value)


def pool_b_variant(name: str, path: Path = SPEED_FILE) -> PoolBVariant:
    """The pool-B variant `name` (one of POOL_B_VARIANTS) from the recorded measurement."""
    if name not in POOL_B_VARIANTS:
        raise ValueError(f"unknown pool-B variant {name!r}; known: {', '.join(POOL_B_VARIANTS)}")
    model = POOL_B_VARIANTS[name]
    model_factor = 1.0 if model is None else 1.0 / speed_ratio(model, "compute_speedup_vs_fp32_b32", path)
    return PoolBVariant(name=name, service_factor=INT8_OVER_FP16 * model_factor, model_factor=model_factor,
                        agreement=speed_ratio(name, "mean_cosine", path))
