"""The forescale.io/capacity-rps annotation: a load-tested capacity for the engine's fallback."""

from __future__ import annotations

import pytest

from forescale_operator.capacity_annotation import ANNOTATION, engine_params
from forescale_operator.engine import EngineParams


@pytest.mark.parametrize(
    "annotations, fallback",
    [
        pytest.param(None, EngineParams().fallback_capacity_rps, id="no-annotations"),
        pytest.param({"other": "1"}, EngineParams().fallback_capacity_rps, id="not-ours"),
        pytest.param({ANNOTATION: "22"}, 22.0, id="integer"),
        pytest.param({ANNOTATION: "0.5"}, 0.5, id="fraction"),
        pytest.param({ANNOTATION: " 1e3 "}, 1000.0, id="exponent-and-spaces"),
    ],
)
def test_good_values(annotations, fallback):
    params, problem = engine_params("chat", annotations)
    assert problem is None
    assert params.name == "chat" and params.fallback_capacity_rps == fallback


@pytest.mark.parametrize("value", ["", "fast", "0", "-3", "nan", "inf", "22 rps", "1e-320", "1e308"])
def test_bad_values_are_named_and_ignored(value):
    params, problem = engine_params("chat", {ANNOTATION: value})
    assert problem is not None and problem.startswith(f"annotation {ANNOTATION}: must be a positive number")
    assert repr(value) in problem
    assert params == EngineParams(name="chat")
