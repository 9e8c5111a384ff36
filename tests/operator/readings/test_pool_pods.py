"""A pool's pods: which precision they show, from the admin calls made to each incarnation."""

from __future__ import annotations

import pytest

from forescale_operator.readings.pods import PoolPods

PODS = PoolPods(endpoints={"a-1": "http://10.0.0.1:8080", "a-2": "http://10.0.0.2:8080"}, startup_seconds=None,
                restarts={"a-1": 0, "a-2": 1})


@pytest.mark.parametrize("case, switched, runtime, shown", [
    ("no runtime precision: the template's", {}, None, "fp16"),
    ("every incarnation switched", {"a-1#0": "int8", "a-2#1": "int8"}, "int8", "int8"),
    # a-2 restarted (restart count 1) after its switch: back at the template's, whatever the ready count says
    ("a pod restarted since its switch", {"a-1#0": "int8", "a-2#0": "int8"}, "int8", "fp16"),
    ("a switch that failed on one pod", {"a-1#0": "int8"}, "int8", "fp16"),
    ("switched to another precision", {"a-1#0": "fp32", "a-2#1": "fp32"}, "int8", "fp16"),
])
def test_the_precision_a_pool_shows(case, switched, runtime, shown):
    assert PODS.precision_shown(switched, runtime, "fp16") == shown, case


def test_a_pool_without_admin_endpoints_shows_the_runtime_precision():
    assert PoolPods(endpoints={}, startup_seconds=None).precision_shown({}, "int8", "fp16") == "int8"


@pytest.mark.parametrize("case, switched, runtime, pods", [
    ("no runtime precision: one precision, no mix", {}, None, {}),
    ("every incarnation switched: one precision, no mix", {"a-1#0": "int8", "a-2#1": "int8"}, "int8", {}),
    ("a pod restarted since its switch runs the template's", {"a-1#0": "int8", "a-2#0": "int8"}, "int8",
     {"int8": 1, "fp16": 1}),
    ("a pod not yet switched", {"a-1#0": "int8"}, "int8", {"int8": 1, "fp16": 1}),
    ("none switched yet: one precision, no mix", {}, "int8", {}),
])
def test_how_many_pods_run_each_precision(case, switched, runtime, pods):
    assert PODS.precision_pods(switched, runtime, "fp16") == pods, case
