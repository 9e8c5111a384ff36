"""EngineParams refuses a tunable out of its range, naming it; its priors and speeds."""

from __future__ import annotations

import math

import pytest

from forescale_operator.engine import EngineParams
from forescale_operator.engine.types import PoolObservation


@pytest.mark.parametrize("field, value", [
    ("fallback_capacity_rps", 0.0),
    ("fallback_capacity_rps", -1.0),
    ("fallback_capacity_rps_b", 0.0),
    ("fallback_capacity_rps_b", -5.0),
    ("fallback_capacity_rps_b", math.nan),
    ("max_step", 1.5),
    ("burn_long_ticks", 1),
])
def test_out_of_range_is_named(field, value):
    with pytest.raises(ValueError, match=rf"EngineParams\.{field}: out of range, got"):
        EngineParams(**{field: value})


@pytest.mark.parametrize("prior_b, precision_b, want_b", [
    (None, "int8", 12.0),     # B serves A's model: A's prior (at the fp16 reference)
    (40.0, "fp16", 40.0),     # B's own load test at fp16
    (40.0, "int8", 24.0),     # B's own load test at int8, carried back to fp16 by int8's speed (1 / 0.6)
])
def test_each_pool_has_its_prior(prior_b, precision_b, want_b):
    params = EngineParams(fallback_capacity_rps=12.0, fallback_capacity_rps_b=prior_b)
    assert params.prior_rps("a", "fp16") == 12.0
    assert params.prior_rps("b", precision_b) == pytest.approx(want_b)


@pytest.mark.parametrize("case, precision, pods, want", [
    ("one precision reported", "int8", {}, 1 / 0.6),
    ("none reported: the template's", None, {}, 1.0),
    # five pods at 0.6 of fp16's time and one at 1: (5 x 0.6 + 1) / 6 = 2/3 of it, speed 1.5
    ("five at int8 beside one not yet switched", "fp16", {"int8": 5, "fp16": 1}, 1.5),
    ("half and half", "fp16", {"int8": 1, "fp16": 1}, 1 / 0.8),
    ("a count of zero is no pod", "fp16", {"int8": 3, "fp16": 0}, 1 / 0.6),
])
def test_a_pools_speed_is_its_pods_mix(case, precision, pods, want):
    pool = PoolObservation(replicas=6, ready_replicas=6, precision=precision, precision_pods=pods)
    assert EngineParams().pool_speed(pool, "fp16") == pytest.approx(want), case
