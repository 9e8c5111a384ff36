"""The operator's forecast loop in-process, as `tests/operator/forecast_loop` drives it, plus what the
fault campaign needs: swapping the metric source, "killing" the operator mid-tick and restarting it.

A restart means what it means for the real process: a fresh `ForecastLoop`
(bindings, metric history, memory), event sink and API client, and the same
objects and status in the API server.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from forescale_operator.actuators import Actuators
from forescale_operator.events import RecordingEvents
from forescale_operator.forecast_loop.binding import Bindings
from forescale_operator.forecasting.forecaster import PredictorForecastSource
from forescale_operator.forecast_loop.loop import ForecastLoop
from forescale_operator.handlers.deps import HandlerDeps
from forescale_operator.handlers.reconcile import reconcile
from forescale_operator.handlers.tick import TickContext, TickDeps, tick
from forescale_operator.readings.base import MetricSample, PoolSample
from forescale_predictor import make_baseline

NAME, NS = "chat", "default"


class Clock:
    """The wall clock (`t`) and a monotonic one (`mono`): a tick moves both, a jump only the wall clock."""

    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t
        self.mono = 1000.0

    def __call__(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.t += seconds
        self.mono += seconds

    def jump(self, seconds: float) -> None:
        self.t += seconds


class ScriptedSource:
    """Answers as Prometheus would, from `latency_ms` / `rate` / `up`."""

    name = "scripted"

    def __init__(self) -> None:
        self.latency_ms, self.rate, self.up = 60.0, 40.0, True

    def sample(self, namespace, name, spec, now):
        if not self.up:
            return MetricSample(time=now, available=False, error="cannot reach Prometheus at http://prom:9090: connection refused")
        pool = PoolSample(latency_ms=self.latency_ms, rate_rps=self.rate, error_rate=0.0, queue_depth=0.0, agreement=0.99)
        return MetricSample(time=now, available=True, pools={"a": pool, "b": PoolSample(latency_ms=30.0, rate_rps=0.0, agreement=0.99)},
                            latency_ms=self.latency_ms, rate_rps=self.rate)


class OperatorKilled(BaseException):
    """Raised at the chosen API call: a BaseException, so no `except Exception` in the operator swallows the 'kill'."""


class KillableApi:
    """Wraps the API client; the `kill_at`-th call (counting from 1) raises OperatorKilled instead of running."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls = 0
        self.kill_at: int | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name.startswith("_") or not callable(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.kill_at is not None and self.calls >= self.kill_at:
                self.kill_at = None
                raise OperatorKilled(f"killed at API call {self.calls} ({name})")
            return await attr(*args, **kwargs)

        return call


def spec_body(example: Callable[[str], dict], **cutback: Any) -> dict:
    body = example("minimal")
    body["spec"]["forecast"] = {"stepSeconds": 5}
    body["spec"]["traffic"]["cutback"] = {"stepPercent": 10, "intervalSeconds": 5, "stableSeconds": 10, **cutback}
    body["spec"]["pools"]["b"]["maxReplicas"] = 10
    return body


class LoopRig:
    """One resource's loop against an emulated API server; `restart()` is a new operator process."""

    def __init__(self, cluster: Any, api: Any, source: Any = None, *, step: float = 5.0) -> None:
        self.cluster = cluster
        self.api = KillableApi(api)
        self.clock = Clock()
        self.source = source if source is not None else ScriptedSource()
        self.step = step
        self.sinks: list[RecordingEvents] = []
        self.restarts = 0
        self.deps = self._deps()

    def _deps(self) -> TickDeps:
        events = RecordingEvents()
        self.sinks.append(events)
        source = self.source
        return TickDeps(
            api=self.api, actuators=Actuators(self.api), events=events,
            loop=ForecastLoop(
                bindings=Bindings(prometheus_url="http://prom:9090", build=lambda url: source),
                forecasts=PredictorForecastSource(loader=lambda _: make_baseline("last", step_seconds=5, horizon_seconds=30)),
                clock=self.clock, monotonic=self.clock.monotonic,
            ),
        )

    def restart(self) -> None:
        """A new operator: fresh memory, history and event sink; the API server keeps everything."""
        self.restarts += 1
        self.deps = self._deps()

    async def create(self, body: dict) -> None:
        await reconcile(self.cluster.put(body), HandlerDeps(api=self.api, actuators=Actuators(self.api), events=self.deps.events))

    async def tick(self, seconds: float | None = None) -> str:
        self.clock.advance(self.step if seconds is None else seconds)
        body = self.cluster.get("inferencedeployments", NS, NAME)
        return await tick(TickContext(copy.deepcopy(body)), self.deps)

    # -- what the assertions read -------------------------------------------

    @property
    def reasons(self) -> list[str]:
        """Every event reason posted, across all operator incarnations, in order."""
        return [r for sink in self.sinks for r in sink.reasons]

    def status(self) -> dict:
        return self.cluster.get("inferencedeployments", NS, NAME).get("status") or {}

    def phase(self) -> str | None:
        return self.status().get("phase")

    def condition(self, ctype: str) -> str | None:
        return next((c["status"] for c in self.status().get("conditions") or [] if c["type"] == ctype), None)

    def weights(self) -> dict[str, int]:
        route = self.cluster.get("httproutes", NS, NAME)
        return {r["name"][-1]: r.get("weight") for r in route["spec"]["rules"][0]["backendRefs"]}

    def replicas(self) -> dict[str, int]:
        return {p: self.cluster.get("deployments", NS, f"{NAME}-{p}")["spec"]["replicas"] for p in "ab"}

    def children(self) -> dict[str, list[str]]:
        """Names of the owned children, by kind: a duplicate would show up here."""
        out = {}
        for plural in ("deployments", "services", "httproutes"):
            out[plural] = sorted(o["metadata"]["name"] for o in self.cluster.objects(plural, NS)
                                 if (o["metadata"].get("labels") or {}).get("forescale.io/deployment") == NAME
                                 or o["metadata"]["name"] == NAME)
        return out

    def snapshots(self) -> list[dict]:
        return [c for c in self.cluster.objects("configmaps", NS) if c["metadata"]["name"].startswith(f"{NAME}-incident-")]
