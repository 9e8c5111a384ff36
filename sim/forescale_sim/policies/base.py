"""What a policy sees and what it answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol


@dataclass(frozen=True)
class Command:
    """Desired replicas per pool; weights (percent) and runtime precision when the policy sets them."""

    replicas: Mapping[str, int]
    weights: Mapping[str, int] | None = None
    precision: Mapping[str, str | None] | None = None


class View(Protocol):
    """The measurements a policy may read at `now` (the past only)."""

    now: float

    def replicas(self, pool: str) -> int: ...
    def ready(self, pool: str) -> int: ...
    def rate(self, pool: str | None, seconds: float) -> float: ...
    def latency_ms(self, pool: str | None, seconds: float) -> float | None: ...
    def error_rate(self, pool: str | None, seconds: float) -> float | None: ...
    def queue_depth(self, pool: str) -> float: ...
    #: (device ms per unit of work, mean unit size) over the last `seconds`: the pods' clock
    def service(self, pool: str, seconds: float) -> tuple[float | None, float | None]: ...
    def startups(self, pool: str) -> list[float]: ...
    def precision(self, pool: str) -> str: ...


class Policy(Protocol):
    """A scaler. `interval_seconds` is its control loop; `start` sizes the
    pools at time 0 (pods already warm), `decide` runs every interval."""

    name: str
    interval_seconds: float
    target_per_pod: float

    def start(self, view: View) -> Command: ...
    def decide(self, view: View) -> Command: ...
