"""The decision engine's plain data: what goes in, what comes out, and its tunables.

Everything here is a frozen dataclass of plain values so that the operator, the
replay simulator and the demo can build inputs without kopf or kubernetes, and
so that a decision can be compared, logged or serialised as is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason, event_type

from .state import EngineState

POOLS = ("a", "b")

#: relative throughput per precision (fp16 = 1). int8 runs a batch in 0.6x the
#: fp16 time on the published TensorRT BERT rows (PEERS.md §6), fp32 in ~2x.
DEFAULT_PRECISION_SPEED: Mapping[str, float] = {"fp32": 0.5, "fp16": 1.0, "bf16": 1.0, "int8": 1.0 / 0.6}


class ActionKind(str, Enum):
    """A playbook step the operator carries out through the model servers' admin API or itself."""

    #: patch the route weights to `params["weights"]`
    SHIFT_TRAFFIC = "SHIFT_TRAFFIC"
    #: POST /admin/precision {"precision": params["precision"]} on the pool's ready pods
    DOWNGRADE_PRECISION = "DOWNGRADE_PRECISION"
    #: POST /admin/warmup {"top": params["top"]} on each pool in params["pools"]
    WARM_CACHE = "WARM_CACHE"
    #: POST /admin/log-level {"level": params["level"], "seconds": params["seconds"]}
    ENABLE_DEBUG_LOGGING = "ENABLE_DEBUG_LOGGING"
    #: save the metrics window and the decisions (the incident "scene")
    SAVE_SNAPSHOT = "SAVE_SNAPSHOT"
    #: POST /admin/precision back to the template precision in params["precision"]
    RESTORE_PRECISION = "RESTORE_PRECISION"


@dataclass(frozen=True)
class PoolObservation:
    """What was measured of one pool at one tick. None means "not measured"."""

    replicas: int
    ready_replicas: int
    rate_rps: float | None = None
    latency_ms: float | None = None
    #: fraction 0..1 of requests rejected or failed
    error_rate: float | None = None
    queue_depth: float | None = None
    #: agreement with fp32 the pool's servers report (forescale_quality_agreement)
    agreement: float | None = None
    #: the precision the pool's servers report running
    precision: str | None = None
    #: a recent measured start-up (scheduled -> ready), seconds
    startup_seconds: float | None = None


@dataclass(frozen=True)
class Observations:
    """One tick's measurements of both pools."""

    time: float
    a: PoolObservation
    b: PoolObservation
    metrics_available: bool = True
    #: the SLO quantile of latency over both pools, ms
    latency_ms: float | None = None
    #: total request rate over both pools, requests per second
    rate_rps: float | None = None

    def pool(self, name: str) -> PoolObservation:
        """The observation of pool `a` or `b`."""
        if name == "a":
            return self.a
        if name == "b":
            return self.b
        raise KeyError(f"unknown pool {name!r}; expected 'a' or 'b'")


@dataclass(frozen=True)
class Action:
    """One playbook step, in the order it must be carried out."""

    kind: ActionKind
    pool: str | None
    params: Mapping[str, Any]
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "pool": self.pool, "params": dict(self.params), "message": self.message}


@dataclass(frozen=True)
class Event:
    """A Kubernetes event to post. The message states the numbers behind it."""

    reason: Reason
    message: str

    @property
    def type(self) -> str:
        """`Normal` or `Warning`."""
        return event_type(self.reason)

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason.value, "type": self.type, "message": self.message}


@dataclass(frozen=True)
class EngineParams:
    """Tunables of the engine. Every default is documented in docs/engine.md."""

    #: the resource's metadata.name; messages name pools `<name>-a`/`<name>-b`
    name: str = ""
    #: scale-down stabilization window (HPA behavior); None -> min(300, 20 x forecast.stepSeconds)
    stabilization_seconds: float | None = None
    #: per-pod capacity at the SLO at fp16 before enough samples exist (requests/s)
    fallback_capacity_rps: float = 10.0
    #: relative throughput per precision, used to carry a capacity across precisions
    precision_speed: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PRECISION_SPEED))
    #: valid samples of a (pool, precision) before its learned capacity is used
    min_capacity_samples: int = 5
    #: how far one over-SLO sample pulls the estimate towards its bound (0..1)
    capacity_smoothing: float = 0.3
    #: how far one comfortable sample relaxes the estimate back towards its ceiling (0..1)
    capacity_relax: float = 0.1
    #: latency / target at or under which a sample counts as comfortable
    relax_latency_ratio: float = 0.6
    #: until an over-SLO sample has found the knee, a sample of pods loaded to
    #: `probe_load_ratio` of the estimate raises it by this share: pods
    #: sized at `target_utilization` never carry more than the estimate, so an
    #: estimate that starts low (a fallback never set from a load test) would
    #: otherwise stay low for good (0 switches probing off)
    capacity_probe: float = 0.05
    probe_load_ratio: float = 0.75
    #: ... and whose latency is at most this share of the target
    probe_latency_ratio: float = 0.8
    #: an over-SLO sample never bounds capacity below this share of its per-pod rate
    min_overload_factor: float = 0.5
    #: nor below the proven ceiling / max_slowdown: a pod slower than that is a fault for the playbook
    max_slowdown: float = 3.0
    #: the same floor while an incident is open on pool A, where the estimate
    #: sizes A for the slowdown at hand (the incident bounds how long it lasts)
    incident_max_slowdown: float = 6.0
    #: during an incident, a sample whose latency is over this share of the target
    #: (and under it) sits at the knee: it lowers the estimate to rate x target / latency
    incident_knee_ratio: float = 0.8
    #: share of the learned capacity a pod is sized to carry: the capacity is the
    #: rate at which the SLO quantile reaches the target, but it is learned from
    #: short samples and a burst inside one tick cannot be forecast (docs/engine.md)
    target_utilization: float = 0.85
    #: start-up (scheduled -> ready) assumed before one is measured, seconds (DESIGN §6)
    default_startup_seconds: float = 90.0
    #: consecutive ticks of growing queue depth that trigger the playbook
    queue_growth_ticks: int = 3
    #: a growing queue only triggers once it holds at least this many requests
    queue_min_depth: float = 1.0
    #: latency over the SLO target at this many of the last `breach_window_ticks` ticks
    #: also starts the playbook (an extension of rule 3; 0 switches it off)
    breach_ticks: int = 2
    breach_window_ticks: int = 3
    #: inputs warmed per pool (POST /admin/warmup {"top": N})
    warm_top: int = 100
    #: seconds of metrics the incident snapshot covers
    snapshot_window_seconds: float = 600.0
    #: treat an unreported agreement as failing the minAgreement gate
    require_agreement: bool = False

    def __post_init__(self) -> None:
        checks = (
            ("stabilization_seconds", self.stabilization_seconds is None or self.stabilization_seconds >= 0),
            ("fallback_capacity_rps", self.fallback_capacity_rps > 0),
            ("min_capacity_samples", self.min_capacity_samples >= 0),
            ("capacity_smoothing", 0 < self.capacity_smoothing <= 1),
            ("capacity_relax", 0 <= self.capacity_relax <= 1),
            ("relax_latency_ratio", 0 < self.relax_latency_ratio <= 1),
            ("capacity_probe", 0 <= self.capacity_probe <= 1),
            ("probe_load_ratio", 0 < self.probe_load_ratio <= 1),
            ("probe_latency_ratio", 0 < self.probe_latency_ratio <= 1),
            ("min_overload_factor", 0 < self.min_overload_factor <= 1),
            ("max_slowdown", self.max_slowdown >= 1),
            ("incident_max_slowdown", self.incident_max_slowdown >= 1),
            ("incident_knee_ratio", 0 < self.incident_knee_ratio <= 1),
            ("target_utilization", 0 < self.target_utilization <= 1),
            ("default_startup_seconds", self.default_startup_seconds >= 0),
            ("queue_growth_ticks", self.queue_growth_ticks >= 1),
            ("breach_ticks", 0 <= self.breach_ticks <= self.breach_window_ticks),
            ("breach_window_ticks", self.breach_window_ticks >= 1),
            ("warm_top", self.warm_top >= 1),
            ("snapshot_window_seconds", self.snapshot_window_seconds > 0),
        )
        for name, ok in checks:
            if not ok:
                raise ValueError(f"EngineParams.{name}: out of range, got {getattr(self, name)!r}")
        for precision, speed in self.precision_speed.items():
            if not speed > 0:
                raise ValueError(f"EngineParams.precision_speed[{precision!r}]: must be > 0, got {speed!r}")

    def pool_name(self, pool: str) -> str:
        """`chat-a` when the resource is named, else just `a`."""
        return f"{self.name}-{pool}" if self.name else pool

    def speed(self, precision: str) -> float:
        """Relative throughput of a precision (1.0 when unknown)."""
        return float(self.precision_speed.get(precision, 1.0))


#: (status, reason, message) of one condition; status is "True", "False" or "Unknown"
Condition = tuple[str, str, str]


@dataclass(frozen=True)
class Decision:
    """What to do at this tick. In Preview, `actions` is empty, replicas are the
    minimums, weights are 100/0, and `would` holds the decision that Auto would take."""

    desired_replicas: Mapping[str, int]
    weights: Mapping[str, int]
    runtime_precision: Mapping[str, str]
    actions: tuple[Action, ...]
    phase: Phase
    events: tuple[Event, ...]
    state: EngineState
    capacity_rps: Mapping[str, float]
    conditions: Mapping[str, Condition]
    summary: str
    #: human reasons with numbers behind the current sizing (bounds, holds, waits)
    reasons: tuple[str, ...] = ()
    preview: bool = False
    would: "Decision | None" = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe view (for logs, the replay's traces and status.lastDecision details)."""
        out: dict[str, Any] = {
            "desired_replicas": dict(self.desired_replicas),
            "weights": dict(self.weights),
            "runtime_precision": dict(self.runtime_precision),
            "actions": [a.to_dict() for a in self.actions],
            "phase": self.phase.value,
            "events": [e.to_dict() for e in self.events],
            "capacity_rps": {k: round(v, 3) for k, v in self.capacity_rps.items()},
            "conditions": {k: list(v) for k, v in self.conditions.items()},
            "summary": self.summary,
            "reasons": list(self.reasons),
            "preview": self.preview,
        }
        if self.would is not None:
            out["would"] = self.would.to_dict()
        return out
