"""Typed playbook actions: one class per kind, and the JSON that status and the snapshot keep."""

import pytest

from forescale_operator.engine.types import (ActionKind, DowngradePrecision, EnableDebugLogging, RestorePrecision,
                                              SaveSnapshot, ShiftTraffic, WarmCache)
from forescale_operator.weights import Weights


@pytest.mark.parametrize("action, kind, pool, params", [
    (ShiftTraffic(weights=Weights(70, 30), message="m"), ActionKind.SHIFT_TRAFFIC, None,
     {"weights": {"a": 70, "b": 30}}),
    (DowngradePrecision(precision="int8", message="m"), ActionKind.DOWNGRADE_PRECISION, "a", {"precision": "int8"}),
    # re-applied to new pods: how many, 0 included (the pods reported another precision)
    (DowngradePrecision(precision="int8", new_pods=0, message="m"), ActionKind.DOWNGRADE_PRECISION, "a",
     {"precision": "int8", "new_pods": 0}),
    (RestorePrecision(precision="fp16", message="m"), ActionKind.RESTORE_PRECISION, "a", {"precision": "fp16"}),
    (WarmCache(top=100, message="m"), ActionKind.WARM_CACHE, None, {"top": 100, "pools": ["a", "b"]}),
    (EnableDebugLogging(seconds=300, message="m"), ActionKind.ENABLE_DEBUG_LOGGING, None,
     {"level": "DEBUG", "seconds": 300, "pools": ["a", "b"]}),
    (SaveSnapshot(window_seconds=600.0, started_at=1.5, trigger="t", message="m"), ActionKind.SAVE_SNAPSHOT, None,
     {"window_seconds": 600.0, "started_at": 1.5, "trigger": "t"}),
])
def test_each_kind_has_its_class_and_its_json(action, kind, pool, params):
    assert action.kind is kind and action.pool == pool
    assert action.to_dict() == {"kind": kind.value, "pool": pool, "params": params, "message": "m"}


def test_a_shift_cannot_carry_weights_that_do_not_sum_to_100():
    with pytest.raises(ValueError, match="sum to 100"):
        ShiftTraffic(weights=Weights(70, 20), message="m")


def test_fields_are_keyword_only_and_frozen():
    with pytest.raises(TypeError):
        ShiftTraffic(Weights(70, 30), "m")  # positional: which is which would be a guess
    action = WarmCache(top=5, message="m")
    with pytest.raises(AttributeError):
        action.top = 6
