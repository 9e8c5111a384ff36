"""The decision engine's plain data: what goes in, what comes out, and its tunables.

Everything here is a frozen dataclass of plain values so that the operator, the
replay simulator and the demo can build inputs without kopf or kubernetes, and
so that a decision can be compared, logged or serialised as is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Mapping

from forescale_profiles.precision import PRECISION_SPEED

from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason, event_type
from forescale_operator.weights import Weights

from .latency_model import ModelParams
from .state import EngineState

POOLS = ("a", "b")

#: relative throughput per precision (fp16 = 1). int8 runs a batch in 0.6x the
#: fp16 time on the published TensorRT BERT rows, fp32 in ~2x:
#: the shared profiles' factors, inverted (fp32 0.5, fp16 1, bf16 1, int8 1/0.6).
DEFAULT_PRECISION_SPEED: Mapping[str, float] = PRECISION_SPEED


class ActionKind(str, Enum):
    """A playbook step the operator carries out through the model servers' admin API or itself."""

    #: patch the route weights (`ShiftTraffic`)
    SHIFT_TRAFFIC = "SHIFT_TRAFFIC"
    #: POST /admin/precision on pool A's ready pods (`DowngradePrecision`)
    DOWNGRADE_PRECISION = "DOWNGRADE_PRECISION"
    #: POST /admin/warmup on each of its pools (`WarmCache`)
    WARM_CACHE = "WARM_CACHE"
    #: POST /admin/log-level on each of its pools (`EnableDebugLogging`)
    ENABLE_DEBUG_LOGGING = "ENABLE_DEBUG_LOGGING"
    #: save the metrics window and the decisions, the incident "scene" (`SaveSnapshot`)
    SAVE_SNAPSHOT = "SAVE_SNAPSHOT"
    #: POST /admin/precision back to the template precision (`RestorePrecision`)
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
    #: ready pods per precision they run, where pods of the pool differ (a pod started during an incident
    #: runs its template's precision until it is switched); empty: every ready pod runs `precision`
    precision_pods: Mapping[str, int] = field(default_factory=dict)
    #: a recent measured start-up (scheduled -> ready), seconds
    startup_seconds: float | None = None
    #: the pods' own clock (pod_clock.py): mean device ms per unit of work (an encoder's
    #: batch, a decoder's prefill) and the unit's mean size (items, or prompt tokens)
    service_ms: float | None = None
    service_size: float | None = None


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
    #: share 0..1 of the step's requests over the SLO target, rejected and failed included
    #: (from a histogram bucket at the target); None when not measured (no burn-rate trigger)
    over_slo_fraction: float | None = None

    def pool(self, name: str) -> PoolObservation:
        """The observation of pool `a` or `b`."""
        if name == "a":
            return self.a
        if name == "b":
            return self.b
        raise KeyError(f"unknown pool {name!r}; expected 'a' or 'b'")


@dataclass(frozen=True, kw_only=True)
class Action:
    """One playbook step, in the order it must be carried out.

    One subclass per kind, whose fields are what that step needs: the executor
    reads typed fields, and `to_dict` is only for status and the snapshot."""

    kind: ClassVar[ActionKind]
    message: str

    @property
    def pool(self) -> str | None:
        """The pool the step acts on, when it is one pool."""
        return None

    def params(self) -> dict[str, Any]:
        """The step's fields as JSON values."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "pool": self.pool, "params": self.params(), "message": self.message}


@dataclass(frozen=True, kw_only=True)
class ShiftTraffic(Action):
    """Patch the route to `weights`."""

    kind: ClassVar[ActionKind] = ActionKind.SHIFT_TRAFFIC
    weights: Weights

    def params(self) -> dict[str, Any]:
        return {"weights": self.weights.as_dict()}


@dataclass(frozen=True, kw_only=True)
class _SetPrecision(Action):
    """POST /admin/precision {"precision": precision} on the ready pods of pool A."""

    precision: str
    #: for the runtime precision kept on A's new pods: how many became ready since the last tick
    new_pods: int | None = None

    @property
    def pool(self) -> str:
        return "a"

    def params(self) -> dict[str, Any]:
        return {"precision": self.precision, **({"new_pods": self.new_pods} if self.new_pods is not None else {})}


@dataclass(frozen=True, kw_only=True)
class DowngradePrecision(_SetPrecision):
    """The playbook's switch of A to a lighter precision (and of A's new pods while it holds)."""

    kind: ClassVar[ActionKind] = ActionKind.DOWNGRADE_PRECISION


@dataclass(frozen=True, kw_only=True)
class RestorePrecision(_SetPrecision):
    """A back to its template precision."""

    kind: ClassVar[ActionKind] = ActionKind.RESTORE_PRECISION


@dataclass(frozen=True, kw_only=True)
class WarmCache(Action):
    """POST /admin/warmup {"top": top} on each pool in `pools`."""

    kind: ClassVar[ActionKind] = ActionKind.WARM_CACHE
    top: int
    pools: tuple[str, ...] = ("a", "b")

    def params(self) -> dict[str, Any]:
        return {"top": self.top, "pools": list(self.pools)}


@dataclass(frozen=True, kw_only=True)
class EnableDebugLogging(Action):
    """POST /admin/log-level {"level": level, "seconds": seconds} on each pool in `pools`."""

    kind: ClassVar[ActionKind] = ActionKind.ENABLE_DEBUG_LOGGING
    seconds: int
    level: str = "DEBUG"
    pools: tuple[str, ...] = ("a", "b")

    def params(self) -> dict[str, Any]:
        return {"level": self.level, "seconds": self.seconds, "pools": list(self.pools)}


@dataclass(frozen=True, kw_only=True)
class SaveSnapshot(Action):
    """Save the last `window_seconds` of metrics and the decisions: the incident's scene."""

    kind: ClassVar[ActionKind] = ActionKind.SAVE_SNAPSHOT
    window_seconds: float
    started_at: float
    trigger: str

    def params(self) -> dict[str, Any]:
        return {"window_seconds": self.window_seconds, "started_at": self.started_at, "trigger": self.trigger}


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
    """Tunables of the engine. Every default is documented, with its reason, in docs/engine.md."""

    #: the resource's metadata.name; messages name pools `<name>-a`/`<name>-b`
    name: str = ""
    #: pool -> its Deployment's name where that is not `<name>-<pool>` (a targetRef)
    pool_names: Mapping[str, str] = field(default_factory=dict)
    #: scale-down stabilization window (HPA behavior); None -> one measured start-up of pool A
    stabilization_seconds: float | None = None
    #: the latency model's prior: per-pod capacity at the SLO at fp16 (requests/s), from a load
    #: test (the forescale.io/capacity-rps annotation) or this default
    fallback_capacity_rps: float = 10.0
    #: pool B's prior where its pods serve a lighter model than A's (a distilled variant): what one
    #: B pod serves at the SLO at B's own precision, from B's own load test (the
    #: forescale.io/capacity-rps-b annotation). None: B serves A's model, so A's prior, carried to B's precision
    fallback_capacity_rps_b: float | None = None
    #: relative throughput per precision, used to carry the latency curve across precisions
    precision_speed: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PRECISION_SPEED))
    #: an innovation beyond this many standard deviations is an outlier, not learned
    gate_sigmas: float = 3.0
    #: one sample moves L0 or mu by at most this share
    max_step: float = 0.10
    #: the largest slowdown h the model tracks: a pod slower than this is a fault that added pods do not fix
    max_slowdown: float = 6.0
    #: how far one sample moves the tracked health towards what it shows
    health_smoothing: float = 0.5
    #: relative process noise per sample (lets the curve follow a slow drift)
    model_drift: float = 0.001
    #: samples before a pool's fitted curve is reported as its own rather than the prior's
    min_model_samples: int = 10
    #: a fitted capacity this far (relative) from the prior's, after min_model_samples, is reported once
    contradiction_ratio: float = 0.25
    #: start-up (scheduled -> ready) assumed before one is measured, seconds (DESIGN §6)
    default_startup_seconds: float = 90.0
    #: the SLO is judged on windows of this many seconds: sizing adds the Poisson noise of a window's count
    slo_window_seconds: float = 10.0
    #: scale-up policy per tick, as the HPA's default behavior: the larger of +100% and +4 pods
    scale_up_percent: float = 100.0
    scale_up_pods: int = 4
    #: consecutive ticks of growing queue depth that trigger the playbook
    queue_growth_ticks: int = 3
    #: a growing queue only triggers once it holds at least this many requests
    queue_min_depth: float = 1.0
    #: latency beyond triggerRatio x the model's prediction at this many ticks running, not
    #: draining, starts the playbook; `breach_window_ticks` is how long an overload explains a symptom
    breach_ticks: int = 2
    breach_window_ticks: int = 3
    #: multi-window burn rate: the share of requests over the SLO, in units of the error
    #: budget (1 - quantile), over a short and a long window of ticks; both must reach `burn_rate`
    burn_short_ticks: int = 4
    burn_long_ticks: int = 20
    burn_rate: float = 2.0
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
            ("fallback_capacity_rps_b", self.fallback_capacity_rps_b is None or self.fallback_capacity_rps_b > 0),
            ("gate_sigmas", self.gate_sigmas > 0),
            ("max_step", 0 < self.max_step <= 1),
            ("max_slowdown", self.max_slowdown >= 1),
            ("health_smoothing", 0 < self.health_smoothing <= 1),
            ("model_drift", 0 <= self.model_drift <= 1),
            ("min_model_samples", self.min_model_samples >= 0),
            ("contradiction_ratio", self.contradiction_ratio > 0),
            ("default_startup_seconds", self.default_startup_seconds >= 0),
            ("slo_window_seconds", self.slo_window_seconds > 0),
            ("scale_up_percent", self.scale_up_percent >= 0),
            ("scale_up_pods", self.scale_up_pods >= 1),
            ("queue_growth_ticks", self.queue_growth_ticks >= 1),
            ("breach_ticks", self.breach_ticks >= 0),
            ("breach_window_ticks", self.breach_window_ticks >= 1),
            ("burn_short_ticks", self.burn_short_ticks >= 1),
            ("burn_long_ticks", self.burn_long_ticks >= self.burn_short_ticks),
            ("burn_rate", self.burn_rate >= 0),
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
        """The pool's Deployment (`chat-a`, or a targetRef's name) when the resource is named, else just `a`."""
        if pool in self.pool_names:
            return self.pool_names[pool]
        return f"{self.name}-{pool}" if self.name else pool

    def prior_rps(self, pool: str, precision: str) -> float:
        """The capacity at the SLO a pool's latency model starts from, per pod at the reference (fp16):
        B's own load test was taken at B's precision (`precision`), so it is carried back by its speed."""
        if pool == "b" and self.fallback_capacity_rps_b is not None:
            return self.fallback_capacity_rps_b / self.speed(precision)
        return self.fallback_capacity_rps

    def speed(self, precision: str) -> float:
        """Relative throughput of a precision (1.0 when unknown)."""
        return float(self.precision_speed.get(precision, 1.0))

    def pool_speed(self, pool: PoolObservation, precision: str) -> float:
        """Relative throughput of a pool whose ready pods may run different precisions: each pod
        takes its share of requests, so the pool's device time per unit is the mean of its pods'
        (1 / speed), and its speed the inverse. `precision` when the pool reports none.

        Why not one precision for the pool: in the demo (seed 1), a pod that became ready during the
        incident ran fp16 for a tick beside five at int8; the pool was read at fp16's speed, its clock
        took 2.5x the usual time at int8 for 1.25x at fp16, within its line, and A was sized healthy
        (6 pods to 3, back to 7 a tick later)."""
        mix = {p: n for p, n in pool.precision_pods.items() if n > 0}
        if not mix:
            return self.speed(pool.precision or precision)
        return sum(mix.values()) / sum(n / self.speed(p) for p, n in mix.items())

    @property
    def model(self) -> ModelParams:
        """The latency model's learning rates and bounds."""
        return ModelParams(self.gate_sigmas, self.max_step, self.max_slowdown, self.health_smoothing, self.model_drift)


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
    #: each pool's fitted latency model, for status and events: l0Ms, muRps, capacityRps, health, samples, ...
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
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
            "models": {k: dict(v) for k, v in self.models.items()},
            "preview": self.preview,
        }
        if self.would is not None:
            out["would"] = self.would.to_dict()
        return out
