"""EngineParams refuses a tunable out of its range, naming it."""

from __future__ import annotations

import math

import pytest

from forescale_operator.engine import EngineParams


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


@pytest.mark.parametrize("prior_b, want_b", [(None, 12.0), (40.0, 40.0)])
def test_each_pool_has_its_prior(prior_b, want_b):
    params = EngineParams(fallback_capacity_rps=12.0, fallback_capacity_rps_b=prior_b)
    assert (params.prior_rps("a"), params.prior_rps("b")) == (12.0, want_b)
