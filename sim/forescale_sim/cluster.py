"""The simulated cluster: two pools of pods with start-up, removal, crashes,
runtime precision, incidents and GPU-time accounting.

GPU time counts from the moment a pod is scheduled until it is
removed, weighted by its pool's `costWeight`. A pod removed by a scale-down
stops receiving traffic at once and its GPU time stops at removal: its
in-flight requests still complete (a simplification of graceful termination,
which keeps the GPU a few seconds longer).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .incidents import Incident
from .llm_pod import LlmPod

POOLS = ("a", "b")


@dataclass
class Pod:
    """One pod of a pool; `server` is its LLM state (None for fluid encoder pools)."""

    scheduled_at: float
    ready_at: float
    server: LlmPod | None = None
    removed_at: float | None = None

    def ready(self, now: float) -> bool:
        return self.ready_at <= now and self.removed_at is None


@dataclass
class Pool:
    """One pool (Deployment) of identical pods."""

    name: str
    precision: str
    cost_weight: float
    startup_seconds: float
    make_server: object = None  # callable () -> LlmPod, or None for fluid pools
    runtime_precision: str | None = None
    pods: list[Pod] = field(default_factory=list)
    gpu_seconds: float = 0.0
    #: start-up seconds of every pod that became ready so far (the engine reads them)
    startups_seen: list[float] = field(default_factory=list)
    backlog: float = 0.0  # fluid pools only

    @property
    def effective_precision(self) -> str:
        return self.runtime_precision or self.precision

    def replicas(self) -> int:
        """Pods scheduled and not removed (the Deployment's `.spec.replicas`)."""
        return len(self.pods)

    def ready_pods(self, now: float) -> list[Pod]:
        return [p for p in self.pods if p.ready_at <= now]

    def note_ready(self, now: float, dt: float) -> None:
        """Record start-ups that completed during the last tick."""
        for p in self.pods:
            if now - dt < p.ready_at <= now:
                self.startups_seen.append(p.ready_at - p.scheduled_at)

    def scale_to(self, n: int, now: float) -> None:
        """Schedule or remove pods to reach `n`. Removal takes pods still
        starting first (newest first), then the least busy ready ones, as the
        ReplicaSet controller prefers unready and younger pods."""
        n = max(0, int(n))
        while len(self.pods) < n:
            self.pods.append(Pod(now, now + self.startup_seconds, self.make_server() if self.make_server else None))
        if len(self.pods) > n:
            def rank(p: Pod):
                starting = p.ready_at > now
                load = p.server.outstanding(now) if p.server else 0
                return (0 if starting else 1, -p.scheduled_at if starting else load)
            for pod in sorted(self.pods, key=rank)[: len(self.pods) - n]:
                self._remove(pod, now)

    def crash(self, count: int, now: float) -> list[int]:
        """Kill `count` ready pods; the Deployment reschedules each at once
        (start-up again). Returns the indices of requests that failed."""
        failed: list[int] = []
        for pod in self.ready_pods(now)[:count]:
            if pod.server is not None:
                failed += pod.server.unfinished(now)
            self._remove(pod, now)
            self.pods.append(Pod(now, now + self.startup_seconds, self.make_server() if self.make_server else None))
        return failed

    def _remove(self, pod: Pod, now: float) -> None:
        pod.removed_at = now
        self.gpu_seconds += (now - pod.scheduled_at) * self.cost_weight
        self.pods.remove(pod)

    def close(self, now: float) -> None:
        """Account GPU time of the pods still running at the end of the replay."""
        for pod in list(self.pods):
            self._remove(pod, now)


def slowdown_at(incidents: list[Incident], pool: str, now: float) -> float:
    """The product of the slowdown factors active on `pool` at `now`."""
    factor = 1.0
    for inc in incidents:
        if inc.kind == "slowdown" and inc.pool == pool and inc.start <= now < inc.start + inc.seconds:
            factor *= inc.factor
    return factor
