"""What the engine remembers between ticks, and its round trip through status.

The operator stores `EngineState.to_status()` in the resource's status and
passes `EngineState.from_status(...)` back in at the next tick, so an operator
restart resumes the same emergency, the same cut-back step and the same
stabilization window. The dict is small (a window of recommendations, a few
capacity estimates) and JSON-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from forescale_operator.phase import Phase

#: the phases of an active incident, in the order they are passed through
INCIDENT_STAGES = (Phase.EMERGENCY, Phase.RECOVERING, Phase.CUTTING_BACK)


class StateError(ValueError):
    """A persisted engine state that cannot be read back. `field` is its dotted path."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(f"engine state {field}: {reason}")


@dataclass(frozen=True)
class CapacityEstimate:
    """Learned per-pod capacity at the SLO for one (pool, precision).

    `rps` is the current estimate (None before the first sample), `ceiling` the
    highest rate the estimate may relax back to, `samples` the count of valid
    observations that shaped it.
    """

    rps: float | None = None
    ceiling: float = 0.0
    samples: int = 0
    #: an over-SLO sample has bounded it: it has found the knee, so no more probing upwards
    overloaded: bool = False


@dataclass(frozen=True)
class EngineState:
    """Everything the engine must remember between ticks (persisted in status)."""

    #: the phase reported at the last tick
    phase: Phase = Phase.PENDING
    #: the incident stage (Emergency, Recovering, CuttingBack) or None outside an incident
    incident: Phase | None = None
    #: the route weights in force
    weights: Mapping[str, int] = field(default_factory=lambda: {"a": 100, "b": 0})
    #: pool A's runtime precision while downgraded; None = its template precision
    runtime_precision_a: str | None = None
    #: what started the current incident, with its numbers
    trigger: str | None = None
    emergency_started_at: float | None = None
    #: B's weight chosen when the emergency started; a cut-back abort returns to it
    emergency_weight_b: int = 0
    #: since when latency has stayed under the target (during an incident)
    under_slo_since: float | None = None
    cutback_step: int = 0
    cutback_next_at: float | None = None
    #: recent raw replica recommendations per pool, ((time, replicas), ...), for stabilization
    history: Mapping[str, tuple[tuple[float, int], ...]] = field(default_factory=lambda: {"a": (), "b": ()})
    #: learned capacity per "pool/precision", e.g. "a/fp16"
    capacity: Mapping[str, CapacityEstimate] = field(default_factory=dict)
    metrics_unavailable: bool = False
    #: recent total queue depths, oldest first (queue-growth trigger)
    queue: tuple[float, ...] = ()
    #: whether latency was over the target at each recent tick, oldest first (sustained-breach trigger)
    breaches: tuple[bool, ...] = ()
    #: the replicas the engine last asked for; None before the first decision
    last_desired: Mapping[str, int] | None = None
    #: the forecast upper latency band was over the trigger line at the last tick
    forecast_spike: bool = False
    #: pool A at int8 reported agreement under minAgreement: never downgrade it again
    int8_rejected: bool = False
    #: the last measured start-up per pool, seconds
    startup: Mapping[str, float | None] = field(default_factory=lambda: {"a": None, "b": None})
    #: A's ready replicas at the last tick (new ready pods get the runtime precision)
    last_ready_a: int = 0

    def to_status(self) -> dict[str, Any]:
        """A small JSON-safe dict for the resource's status."""
        return {
            "phase": self.phase.value,
            "incident": self.incident.value if self.incident else None,
            "weights": {"a": int(self.weights["a"]), "b": int(self.weights["b"])},
            "runtimePrecisionA": self.runtime_precision_a,
            "trigger": self.trigger,
            "emergencyStartedAt": _round(self.emergency_started_at),
            "emergencyWeightB": self.emergency_weight_b,
            "underSloSince": _round(self.under_slo_since),
            "cutback": {"step": self.cutback_step, "nextAt": _round(self.cutback_next_at)},
            "history": {pool: [[_round(t), n] for t, n in self.history.get(pool, ())] for pool in ("a", "b")},
            "capacity": {
                key: {"rps": _round(est.rps), "ceiling": _round(est.ceiling), "samples": est.samples,
                      "overloaded": est.overloaded}
                for key, est in sorted(self.capacity.items())
            },
            "metricsUnavailable": self.metrics_unavailable,
            "queue": [_round(q) for q in self.queue],
            "breaches": [int(b) for b in self.breaches],
            "lastDesired": dict(self.last_desired) if self.last_desired is not None else None,
            "forecastSpike": self.forecast_spike,
            "int8Rejected": self.int8_rejected,
            "startup": {pool: _round(self.startup.get(pool)) for pool in ("a", "b")},
            "lastReadyA": self.last_ready_a,
        }

    @classmethod
    def from_status(cls, raw: Mapping[str, Any] | None) -> "EngineState":
        """Rebuild the state from `to_status()` output; None or {} gives the initial state.

        Missing keys take their initial values (an older operator wrote less);
        a value of the wrong type raises StateError naming the field.
        """
        if not raw:
            return cls()
        if not isinstance(raw, Mapping):
            raise StateError("", f"must be an object, got {type(raw).__name__}")
        return _build(cls, _Reader(raw), raw)


def _build(cls: type[EngineState], r: "_Reader", raw: Mapping[str, Any]) -> EngineState:
    incident = r.opt_str("incident")
    weights = r.mapping("weights")
    cutback = r.mapping("cutback")
    history = r.mapping("history")
    startup = r.mapping("startup")
    last_desired_raw = raw.get("lastDesired")
    last_desired = None
    if last_desired_raw is not None:
        ld = r.mapping("lastDesired")
        last_desired = {p: r.int(f"lastDesired.{p}", ld.get(p), 0, None) for p in ("a", "b")}
    return cls(
        phase=r.phase("phase", raw.get("phase", Phase.PENDING.value)),
        incident=r.phase("incident", incident) if incident else None,
        weights={p: r.int(f"weights.{p}", weights.get(p, 100 if p == "a" else 0), 0, 100) for p in ("a", "b")},
        runtime_precision_a=r.opt_str("runtimePrecisionA"),
        trigger=r.opt_str("trigger"),
        emergency_started_at=r.opt_float("emergencyStartedAt", raw.get("emergencyStartedAt")),
        emergency_weight_b=r.int("emergencyWeightB", raw.get("emergencyWeightB", 0), 0, 100),
        under_slo_since=r.opt_float("underSloSince", raw.get("underSloSince")),
        cutback_step=r.int("cutback.step", cutback.get("step", 0), 0, None),
        cutback_next_at=r.opt_float("cutback.nextAt", cutback.get("nextAt")),
        history={p: r.history(f"history.{p}", history.get(p, [])) for p in ("a", "b")},
        capacity=r.capacity("capacity", raw.get("capacity", {})),
        metrics_unavailable=r.bool("metricsUnavailable", False),
        queue=tuple(r.float(f"queue[{i}]", q) for i, q in enumerate(r.list("queue"))),
        breaches=tuple(bool(r.int(f"breaches[{i}]", b, 0, 1)) for i, b in enumerate(r.list("breaches"))),
        last_desired=last_desired,
        forecast_spike=r.bool("forecastSpike", False),
        int8_rejected=r.bool("int8Rejected", False),
        startup={p: r.opt_float(f"startup.{p}", startup.get(p)) for p in ("a", "b")},
        last_ready_a=r.int("lastReadyA", raw.get("lastReadyA", 0), 0, None),
    )


def _round(value: float | None) -> float | None:
    # Not rounded: a restored state must give exactly the decision the live one would.
    return None if value is None else float(value)


class _Reader:
    """Typed reads from a persisted dict; every error names the field."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    def mapping(self, key: str) -> Mapping[str, Any]:
        value = self.raw.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise StateError(key, f"must be an object, got {value!r}")
        return value

    def list(self, key: str) -> list[Any]:
        value = self.raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise StateError(key, f"must be a list, got {value!r}")
        return value

    def opt_str(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is not None and not isinstance(value, str):
            raise StateError(key, f"must be a string, got {value!r}")
        return value or None

    def bool(self, key: str, default: bool) -> bool:
        return self.flag(key, self.raw.get(key, default))

    @staticmethod
    def phase(key: str, value: Any) -> Phase:
        try:
            return Phase(value)
        except ValueError:
            raise StateError(key, f"must be one of {', '.join(p.value for p in Phase)}, got {value!r}") from None

    @staticmethod
    def flag(key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise StateError(key, f"must be true or false, got {value!r}")
        return value

    @staticmethod
    def float(key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise StateError(key, f"must be a number, got {value!r}")
        return float(value)

    @classmethod
    def opt_float(cls, key: str, value: Any) -> float | None:
        return None if value is None else cls.float(key, value)

    @staticmethod
    def int(key: str, value: Any, minimum: int | None, maximum: int | None) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise StateError(key, f"must be an integer, got {value!r}")
        value = int(value)
        if minimum is not None and value < minimum:
            raise StateError(key, f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise StateError(key, f"must be <= {maximum}, got {value}")
        return value

    @classmethod
    def history(cls, key: str, value: Any) -> tuple[tuple[float, int], ...]:
        if not isinstance(value, list):
            raise StateError(key, f"must be a list of [time, replicas], got {value!r}")
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise StateError(f"{key}[{i}]", f"must be [time, replicas], got {item!r}")
            out.append((cls.float(f"{key}[{i}][0]", item[0]), cls.int(f"{key}[{i}][1]", item[1], 0, None)))
        return tuple(out)

    @classmethod
    def capacity(cls, key: str, value: Any) -> dict[str, CapacityEstimate]:
        if not isinstance(value, Mapping):
            raise StateError(key, f"must be an object, got {value!r}")
        out = {}
        for name, est in value.items():
            where = f"{key}.{name}"
            if not isinstance(est, Mapping):
                raise StateError(where, f"must be an object, got {est!r}")
            out[str(name)] = CapacityEstimate(
                rps=cls.opt_float(f"{where}.rps", est.get("rps")),
                ceiling=cls.float(f"{where}.ceiling", est.get("ceiling", 0.0)),
                samples=cls.int(f"{where}.samples", est.get("samples", 0), 0, None),
                overloaded=cls.flag(f"{where}.overloaded", est.get("overloaded", False)),
            )
        return out
