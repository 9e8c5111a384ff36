"""Regression (found while running the campaigns: tests/operator/engine/test_engine_properties.py hit it by
chance): a vanishing but positive rate from Prometheus made `shift_limit` overflow (float infinity to int)
and the engine raise instead of deciding."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from forescale_operator.engine.playbook import shift_limit
from forescale_operator.engine.types import EngineParams


def _obs(rate: float, b_ready: int):
    pool = SimpleNamespace(rate_rps=rate, ready_replicas=b_ready, agreement=0.99)
    return SimpleNamespace(a=SimpleNamespace(rate_rps=rate, ready_replicas=2, agreement=0.99), b=pool, rate_rps=rate)


@pytest.mark.parametrize("rate,b_ready,percent", [(1e-310, 1, 30), (5e-324, 2, 30), (1e-310, 0, 0), (100.0, 1, 10)])
def test_a_vanishing_rate_does_not_overflow_the_shift_limit(rate, b_ready, percent):
    spec = SimpleNamespace(traffic=SimpleNamespace(emergency_weight_percent=30), emergency=SimpleNamespace(min_agreement=0.97))
    limit = shift_limit(spec, _obs(rate, b_ready), 10.0, EngineParams(name="chat"))
    assert limit.percent == percent
