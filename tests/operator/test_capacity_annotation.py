"""The forescale.io/capacity-rps annotations: load-tested capacities for the engine's priors."""

from __future__ import annotations

import pytest

from forescale_operator.capacity_annotation import ANNOTATION, ANNOTATION_B, engine_params, raw_values
from forescale_operator.engine import EngineParams

DEFAULT = EngineParams().fallback_capacity_rps


@pytest.mark.parametrize(
    "annotations, prior_a, prior_b",
    [
        pytest.param(None, DEFAULT, DEFAULT, id="no-annotations"),
        pytest.param({"other": "1"}, DEFAULT, DEFAULT, id="not-ours"),
        pytest.param({ANNOTATION: "22"}, 22.0, 22.0, id="integer-b-serves-a-s-model"),
        pytest.param({ANNOTATION: "0.5"}, 0.5, 0.5, id="fraction"),
        pytest.param({ANNOTATION: " 1e3 "}, 1000.0, 1000.0, id="exponent-and-spaces"),
        pytest.param({ANNOTATION: "22", ANNOTATION_B: "60"}, 22.0, 60.0, id="b-lighter-model"),
        pytest.param({ANNOTATION_B: "60"}, DEFAULT, 60.0, id="b-only"),
    ],
)
def test_good_values(annotations, prior_a, prior_b):
    params, problem = engine_params("chat", annotations)
    assert problem is None
    assert params.name == "chat"
    assert (params.prior_rps("a", "fp16"), params.prior_rps("b", "fp16")) == (prior_a, prior_b)


@pytest.mark.parametrize("key", [ANNOTATION, ANNOTATION_B])
@pytest.mark.parametrize("value", ["", "fast", "0", "-3", "nan", "inf", "22 rps", "1e-320", "1e308"])
def test_bad_values_are_named_and_ignored(key, value):
    params, problem = engine_params("chat", {key: value})
    assert problem is not None and problem.startswith(f"annotation {key}: must be a positive number")
    assert repr(value) in problem
    assert params == EngineParams(name="chat")


def test_a_bad_value_leaves_the_other_annotation_applied():
    params, problem = engine_params("chat", {ANNOTATION: "22", ANNOTATION_B: "fast"})
    assert problem.startswith(f"annotation {ANNOTATION_B}:") and ANNOTATION + ":" not in problem
    assert (params.prior_rps("a", "fp16"), params.prior_rps("b", "fp16")) == (22.0, 22.0)
    params, problem = engine_params("chat", {ANNOTATION: "0", ANNOTATION_B: "-1"})
    assert problem.count("annotation forescale.io/capacity-rps") == 2
    assert params == EngineParams(name="chat")


def test_raw_values_change_with_either_annotation():
    assert raw_values(None) == (None, None)
    assert raw_values({ANNOTATION: "22"}) != raw_values({ANNOTATION: "22", ANNOTATION_B: "60"})
