"""The decision engine: pure functions from (spec, state, observations, forecast) to a Decision.

Imports neither kopf nor kubernetes and does no I/O, so the replay simulator and
the demo run exactly the code the operator runs. See docs/engine.md.
"""

from .engine import decide
from .latency_model import PoolModel
from .state import EngineState, IncidentState, Learned, StateError
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
    "Condition",
    "Decision",
    "EngineParams",
    "EngineState",
    "IncidentState",
    "Learned",
    "PoolModel",
    "Event",
    "Observations",
    "PoolObservation",
    "StateError",
    "decide",
]
