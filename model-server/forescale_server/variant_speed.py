"""The record of the variants' measured speed and quality that the replay's pool B reads.

`python -m bench.variants --write-speed` turns a `forescale variants report`
result into `forescale_profiles/variant_speed.json` (read by
`forescale_profiles.variant_speed`, on the ground floor, because the
simulator reads it and never imports the server).
"""

from __future__ import annotations

import time

from forescale_profiles.variant_speed import LABEL


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
