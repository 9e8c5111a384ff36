"""Measured speed of the built variants, for the replay's pool B.

`variant_speed.json` beside this module is written by
`python -m bench.variants --write-speed` from a `forescale variants report`
run (the commit and the date are in it). The figures are measured on this
project's CPU and carried to the GPU profile: the replay labels them so.

`pool_b_factor()` is B's service time relative to A's fp16 time on the GPU
profile: the model-compute speed-up of the distilled student over the teacher
(both fp32, so it is the layer count's effect, which a GPU keeps) applied to
the profiles' own int8 factor (0.6 of fp16, TensorRT, `forescale_profiles.precision`).
This module imports neither torch nor numpy.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from pathlib import Path

from forescale_profiles.precision import INT8_OVER_FP16

SPEED_FILE = Path(__file__).with_name("variant_speed.json")
LABEL = "measured on CPU, carried to the GPU profile"


def speed_record(result: dict) -> dict:
    """The data file's content from a `variants report` result."""
    from .variant_build import git_commit

    base_compute = result["baseline"]["stages_ms_b32"].get("compute")
    variants = {}
    for row in result["variants"]:
        compute = row["stages_ms_b32"].get("compute")
        variants[row["name"]] = {
            "speedup_vs_fp32_b32": row["speedup_vs_fp32_b32"],
            "speedup_vs_fp32_b1": row["speedup_vs_fp32_b1"],
            "compute_speedup_vs_fp32_b32": round(base_compute / compute, 3) if base_compute and compute else None,
            "mean_cosine": row["mean_cosine"], "spearman": row["spearman"],
        }
    return {"label": LABEL, "source": "python -m bench.variants (forescale variants report: HTTP, batch 32, 1 thread, cache off)",
            "commit": git_commit(), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "rounds": result["rounds"], "variants": variants}


@lru_cache(maxsize=4)
def measured(path: Path = SPEED_FILE) -> dict:
    """The recorded measurement; ValueError when none was recorded."""
    if not path.is_file():
        raise ValueError(f"{path} is missing: run `python -m bench.variants --write-speed`")
    return json.loads(path.read_text())


def speed_ratio(variant: str = "distilled-int8", key: str = "speedup_vs_fp32_b32", path: Path = SPEED_FILE) -> float:
    """A recorded ratio of `variant` against the fp32 teacher (higher is faster)."""
    rows = measured(path)["variants"]
    if variant not in rows:
        raise ValueError(f"{path} has no variant {variant!r}; it has {', '.join(sorted(rows))}")
    value = rows[variant].get(key)
    if value is None:
        raise ValueError(f"{path}: {variant!r} has no {key!r}")
    return float(value)


def pool_b_factor(int8_over_fp16: float | None = None, path: Path = SPEED_FILE) -> float:
    """B (distilled student at int8) service time / A's fp16 service time on a GPU profile."""
    if int8_over_fp16 is None:
        int8_over_fp16 = INT8_OVER_FP16
    return int8_over_fp16 / speed_ratio("distilled", "compute_speedup_vs_fp32_b32", path)
