"""The read-only view of the simulated cluster that a policy decides from."""

from __future__ import annotations

from .cluster import Pool
from .recorder import Recorder


class ClusterView:
    """Measurements at `now`, drawn from the past only."""

    def __init__(self, pools: dict[str, Pool], recorder: Recorder) -> None:
        self.pools = pools
        self.recorder = recorder
        self.now = 0.0

    def replicas(self, pool: str) -> int:
        return self.pools[pool].replicas()

    def ready(self, pool: str) -> int:
        return len(self.pools[pool].ready_pods(self.now))

    def rate(self, pool: str | None, seconds: float) -> float:
        return self.recorder.rate(pool, self.now, seconds)

    def latency_ms(self, pool: str | None, seconds: float) -> float | None:
        return self.recorder.latency_q(pool, self.now, seconds)

    def error_rate(self, pool: str | None, seconds: float) -> float | None:
        return self.recorder.error_rate(pool, self.now, seconds)

    def over_slo_fraction(self, pool: str | None, seconds: float) -> float | None:
        return self.recorder.over_slo_fraction(pool, self.now, seconds)

    def service(self, pool: str, seconds: float) -> tuple[float | None, float | None]:
        return self.recorder.service(pool, self.now, seconds)

    def queue_depth(self, pool: str) -> float:
        return self.recorder.queue_depth(pool, self.now)

    def startups(self, pool: str) -> list[float]:
        return list(self.pools[pool].startups_seen)

    def precision(self, pool: str) -> str:
        return self.pools[pool].effective_precision
