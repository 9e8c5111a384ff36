"""Pool B's model in the replay: A's model at int8, or a lighter variant at int8.

The variants' speed and agreement are the ones `forescale variants report`
measured on this project's CPU (`forescale_profiles.variant_speed`), carried
to the GPU profile: B's service time is the profile's int8 time times the
variant's model-compute time relative to the teacher. Its agreement is the
measured mean cosine to the fp32 teacher, which the engine compares with
`emergency.minAgreement` before it moves traffic to B. The engine's prior for
B is B's own load test: the calibrated capacity of a pod that slow
(`forescale.io/capacity-rps-b` in a cluster).
"""

from __future__ import annotations

from forescale_profiles.variant_speed import POOL_B_VARIANTS, PoolBVariant, pool_b_variant

from .errors import SimError

#: the replay's pool B: A's model at int8, the variant whose measured agreement (0.993) passes the
#: default minAgreement 0.97. The distilled student is faster but agrees less: see docs/replay.md.
DEFAULT_B_VARIANT = "int8"


def resolve(name: str) -> PoolBVariant:
    """The pool-B variant `name`; SimError naming --b-variant when unknown or not measured."""
    try:
        return pool_b_variant(name)
    except ValueError as exc:
        raise SimError(f"--b-variant {name!r}: {exc}" if name in POOL_B_VARIANTS else
                       f"--b-variant must be one of {', '.join(POOL_B_VARIANTS)}, got {name!r}") from None
