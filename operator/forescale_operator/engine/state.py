"""What the engine remembers between ticks, and its round trip through status.

Two parts, kept apart because they change for different reasons:
- `IncidentState`, the incident's state machine: its stage, what triggered it,
  the split, the cut-back step, A's runtime precision, an overload shift;
- `Learned`, what the engine has learned of the service: each pool's latency
  model and clock, the stabilization history, start-up times, the trigger windows.

The operator stores `EngineState.to_status()` in the resource's status and
passes `EngineState.from_status(...)` back in at the next tick, so an operator
restart resumes the same incident, the same cut-back step, the same fitted
model. Both directions are derived from the dataclass fields (`codec.py`):
a new field needs no serialisation code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from forescale_operator.phase import Phase

from .codec import StateError, decode, encode
from .ejection import Ejection
from .latency_model import PoolModel
from .pod_clock import PodClock

__all__ = ["EngineState", "IncidentState", "Learned", "StateError"]


@dataclass(frozen=True)
class IncidentState:
    """The incident's state machine (rules 3 and 4), and an overload shift (rule 2)."""

    #: Emergency, Recovering or CuttingBack; None outside an incident
    stage: Phase | None = None
    #: what started the incident, with its numbers
    trigger: str | None = None
    started_at: float | None = None
    #: B's weight chosen when the emergency started; a cut-back abort returns to it
    emergency_weight_b: int = 0
    #: since when latency has stayed under the target
    under_slo_since: float | None = None
    cutback_step: int = 0
    cutback_next_at: float | None = None
    #: pool A's runtime precision while downgraded; None = its template precision
    runtime_precision_a: str | None = None
    #: pool A at int8 reported agreement under minAgreement: never downgrade it again
    int8_rejected: bool = False
    #: traffic is on B because A's ready pods cannot carry the load yet (not an incident)
    overload: bool = False


@dataclass(frozen=True)
class Learned:
    """What the engine has learned of the service and its recent past."""

    #: the latency model per pool ("a", "b"); absent until the first tick
    models: Mapping[str, PoolModel] = field(default_factory=dict)
    #: pool A's clock under "a" (device time per unit of work); absent until A's pods report device time
    clocks: Mapping[str, PodClock] = field(default_factory=dict)
    #: recent raw replica recommendations per pool, ((time, replicas), ...), for stabilization
    history: Mapping[str, tuple[tuple[float, int], ...]] = field(default_factory=lambda: {"a": (), "b": ()})
    #: the last measured start-up per pool, seconds
    startup: Mapping[str, float | None] = field(default_factory=lambda: {"a": None, "b": None})
    #: each pool's ready replicas at the last tick: a tick at which they moved is no model sample
    last_ready: Mapping[str, int] = field(default_factory=lambda: {"a": 0, "b": 0})
    #: the replicas the engine last asked for; None before the first decision
    last_desired: Mapping[str, int] | None = None
    #: recent total queue depths, oldest first (queue-growth trigger)
    queue: tuple[float, ...] = ()
    #: A's latency over its model's prediction at each recent tick, oldest first (0: unknown, or
    #: the load explained it): the deviation trigger's window
    ratios: tuple[float, ...] = ()
    #: A's per-pod load over its model's capacity at each recent tick, oldest first: requests
    #: queued in an overload finish slow for a while after the load has dropped
    loads: tuple[float, ...] = ()
    #: share of requests over the SLO at each recent tick, oldest first (burn-rate trigger)
    burn: tuple[float, ...] = ()
    #: A's device time per unit of work over its clock's at each recent tick, oldest first (0: no clock, or
    #: within its line): the device trigger's window
    slow: tuple[float, ...] = ()
    #: the forecast upper latency band was over the trigger line at the last tick
    forecast_spike: bool = False
    metrics_unavailable: bool = False
    #: pools whose fitted capacity was reported to contradict its prior (once each)
    contradicted: tuple[str, ...] = ()
    #: how much more per pod than its latency model's capacity A is sized for (budget.py, >= 1)
    stretch: float = 1.0
    #: share of requests over the SLO at each recent tick outside incidents, oldest first (budget.py)
    spent: tuple[float, ...] = ()
    #: B out of the shifts for a while after its pods failed the requests a shift gave them (ejection.py)
    ejection: Ejection = field(default_factory=Ejection)


@dataclass(frozen=True)
class EngineState:
    """Everything the engine must remember between ticks (persisted in status).

    The phase is not remembered: each decision derives it (report.phase_for). A state saved
    with a `phase` key still loads; the codec ignores keys that are no field.
    """

    #: the route weights in force
    weights: Mapping[str, int] = field(default_factory=lambda: {"a": 100, "b": 0})
    incident: IncidentState = field(default_factory=IncidentState)
    learned: Learned = field(default_factory=Learned)

    def to_status(self) -> dict[str, Any]:
        """A small JSON-safe dict for the resource's status (floats unrounded: a restart decides exactly alike)."""
        return encode(self)

    @classmethod
    def from_status(cls, raw: Mapping[str, Any] | None) -> "EngineState":
        """Rebuild the state from `to_status()` output; None or {} gives the initial state.

        Missing keys take their initial values; a value of the wrong type raises
        StateError naming the field. A state written by an operator before the
        latency model (a flat dict with `capacity`) keeps its phase, weights and
        incident; what it had learned is relearned from the prior.
        """
        if not raw:
            return cls()
        if not isinstance(raw, Mapping):
            raise StateError("", f"must be an object, got {type(raw).__name__}")
        if "capacity" in raw or isinstance(raw.get("incident"), (str, type(None))) and "learned" not in raw:
            raw = _from_flat(raw)
        return decode(cls, raw, "")


def _from_flat(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The pre-model flat state mapped onto the split one."""
    cutback = raw.get("cutback") if isinstance(raw.get("cutback"), Mapping) else {}
    incident = {
        "stage": raw.get("incident"),
        "trigger": raw.get("trigger"),
        "startedAt": raw.get("emergencyStartedAt"),
        "emergencyWeightB": raw.get("emergencyWeightB", 0),
        "underSloSince": raw.get("underSloSince"),
        "cutbackStep": cutback.get("step", 0),
        "cutbackNextAt": cutback.get("nextAt"),
        "runtimePrecisionA": raw.get("runtimePrecisionA"),
        "int8Rejected": raw.get("int8Rejected", False),
    }
    learned = {k: raw[k] for k in ("history", "startup", "lastDesired", "queue", "forecastSpike", "metricsUnavailable")
               if k in raw}
    out: dict[str, Any] = {"incident": incident, "learned": learned}
    if "weights" in raw:
        out["weights"] = raw["weights"]
    return out
