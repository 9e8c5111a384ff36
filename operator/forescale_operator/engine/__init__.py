"""The decision engine: pure functions from (spec, state, observations, forecast) to a Decision.

Imports neither kopf nor kubernetes and does no I/O, so the replay simulator and
the demo run exactly the code the operator runs. See docs/engine.md.
"""

from .engine import decide
from .state import CapacityEstimate, EngineState, StateError
from .types import (
    Action,
    ActionKind,
    Condition,
    Decision,
    EngineParams,
    Event,
    Observations,
    PoolObservation,
)

__all__ = [
    "Action",
    "ActionKind",
    "CapacityEstimate",
    "Condition",
    "Decision",
    "EngineParams",
    "EngineState",
    "Event",
    "Observations",
    "PoolObservation",
    "StateError",
    "decide",
]
