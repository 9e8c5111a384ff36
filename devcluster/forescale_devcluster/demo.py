"""`forescale demo`: the main job on an embedded default, on this machine.

It starts the stack (emulated API, pod runner, real Prometheus, real
operator), applies one InferenceDeployment, starts the gateway, replays a real
arrival pattern through it, injects one incident (pool A slows down 2.5x
through the servers' fault API) at a seeded random time, shows the operator's
events and a live line as they happen, and ends with a summary.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from forescale_devcluster.arrivals import RateProfile, builtin_pattern, from_trace
from forescale_devcluster.demo_scenario import DemoSettings, demo_resource
from forescale_devcluster.demo_stack import DemoStack, StackSettings, wait_until
from forescale_devcluster.loadgen import LoadGenerator, RequestRecord

API = "forescale.io/v1alpha1"


@dataclass
class Sample:
    """One second of the demo as the live line shows it."""

    t: float
    offered: float
    p99_ms: float | None
    forecast_p99_ms: float | None
    ready: dict[str, int]
    desired: dict[str, int]
    pods: dict[str, int]
    weights: dict[str, int]
    phase: str


@dataclass
class DemoRun:
    settings: DemoSettings
    started_at: float = 0.0
    records: list[RequestRecord] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    #: (seconds since start, reason, message) in posting order
    events: list[tuple[float, str, str]] = field(default_factory=list)
    incident: dict[str, Any] | None = None
    final_weights: dict[str, int] = field(default_factory=lambda: {"a": 100, "b": 0})
    final_phase: str = ""


def live_line(s: Sample) -> str:
    """One line of the demo's live view. The forecast is the upper band of the p99 forecast over the horizon
    (status.forecast.peakLatencyMs): what the engine sizes for, not the median."""
    p99 = "   -  " if s.p99_ms is None else ("  err " if s.p99_ms == float("inf") else f"{s.p99_ms:6.0f}")
    fc = "   -  " if s.forecast_p99_ms is None else f"{s.forecast_p99_ms:6.0f}"
    return (f"t={s.t:5.0f}s rate {s.offered:5.1f}/s  p99 {p99} ms  forecast upper band {fc} ms  "
            f"A {s.ready['a']}/{s.desired['a']}  B {s.ready['b']}/{s.desired['b']}  "
            f"weights {s.weights['a']}/{s.weights['b']}  {s.phase}")


#: seconds between live lines while nothing the operator writes changes
LIVE_EVERY_SECONDS = 5.0


def line_due(sample: Sample, shown: Sample | None, since_shown_s: float) -> bool:
    """Whether the live line is printed for this sample.

    At once when the state the operator just wrote changed since the last line shown (phase, weights,
    desired replicas), so that the line follows its events within one watch tick; otherwise every
    LIVE_EVERY_SECONDS, to keep the terminal readable. Printing only on the cadence made the line lag
    the events it explains by up to ~6 s (the cadence plus a tick).
    """
    if shown is None or since_shown_s >= LIVE_EVERY_SECONDS:
        return True
    return (sample.phase, sample.weights, sample.desired) != (shown.phase, shown.weights, shown.desired)


def _p99(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def load_pattern(s: DemoSettings) -> RateProfile:
    """The load to offer: the trace compressed to the demo's length, or the built-in pattern stretched
    to it; ValueError naming the trace when it cannot be read (the CLI asks before starting anything)."""
    if s.trace:
        pattern = from_trace(s.trace, "auto", time_compression=1.0, mean_rate=s.mean_rate)
        return from_trace(s.trace, "auto", time_compression=pattern.duration / s.duration_seconds, mean_rate=s.mean_rate)
    return builtin_pattern(s.mean_rate, seconds_per_minute=s.duration_seconds / 58.0)


class Demo:
    def __init__(self, settings: DemoSettings, stack: DemoStack, *, echo: Callable[[str], None] | None = None,
                 live: bool = True, pattern: RateProfile | None = None) -> None:
        self.settings = settings
        #: the load to offer, read once (by the CLI, before the stack starts); None: read at the run
        self.pattern = pattern
        self.stack = stack
        self.echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
        self.live = live
        self.run = DemoRun(settings)
        self._seen_events: set[str] = set()

    # -- the parts -----------------------------------------------------------

    def _poll_events(self) -> None:
        for event in self.stack.events(self.settings.name):
            uid = event["metadata"].get("uid") or event["metadata"]["name"]
            if uid in self._seen_events:
                continue
            self._seen_events.add(uid)
            at = time.time() - self.run.started_at
            reason, message = event.get("reason", ""), event.get("message", "")
            self.run.events.append((round(at, 1), reason, message))
            if self.live:
                self.echo(f"[{at:6.1f}s] {event.get('type', 'Normal'):7} {reason}: {message}")

    def _sample(self, gen: LoadGenerator) -> Sample:
        now = time.time() - self.run.started_at
        recent = [r for r in self.run.records if r.scheduled_s >= now - 10.0]
        latencies = [r.latency_s * 1000 for r in recent if r.latency_s is not None]
        errors = sum(1 for r in recent if r.latency_s is None or (r.status or 0) >= 400)
        # a failed request counts as over the SLO, as in every report
        p99 = _p99(latencies + [float("inf")] * errors) if recent else None
        body = self.stack.infd(self.settings.name) or {}
        status = body.get("status") or {}
        pools = status.get("pools") or {}
        pods = {p: len(self.stack.pods(p, self.settings.name)) for p in ("a", "b")}
        return Sample(
            t=round(now, 1),
            offered=len(recent) / 10.0,
            p99_ms=p99,
            forecast_p99_ms=(status.get("forecast") or {}).get("peakLatencyMs"),
            ready={p: int((pools.get(p) or {}).get("readyReplicas") or 0) for p in ("a", "b")},
            desired={p: int((pools.get(p) or {}).get("desiredReplicas") or 0) for p in ("a", "b")},
            pods=pods,
            weights={p: int((status.get("weights") or {}).get(p, 100 if p == "a" else 0)) for p in ("a", "b")},
            phase=status.get("phase", "?"),
        )

    async def _inject(self, start: float) -> None:
        """Slow pool A down through the servers' fault API, pod by pod, for the incident's length.

        The slowdown is pool-wide (a bad driver, a fragmented cache on every A
        server): A pods that become ready during the incident get it too, for
        the time that remains."""
        s = self.settings
        await asyncio.sleep(max(0.0, start - (time.time() - self.run.started_at)))
        began = time.time()
        self.run.incident = {"kind": "slowdown", "pool": "a", "factor": s.incident_factor,
                             "start": round(began - self.run.started_at, 1), "seconds": s.incident_length()}
        if self.live:
            self.echo(f"[{began - self.run.started_at:6.1f}s] INCIDENT: pool a slows down {s.incident_factor}x for {s.incident_length():.0f} s")
        slowed: set[str] = set()
        while (left := s.incident_length() - (time.time() - began)) > 1.0:
            urls = await asyncio.to_thread(self.stack.pod_urls, s.name, "a")
            for url in urls:
                if url in slowed:
                    continue
                try:
                    await asyncio.to_thread(self.stack.admin, url, "/admin/faults",
                                            {"slowdown": s.incident_factor, "seconds": round(left, 1)})
                    slowed.add(url)
                except OSError as exc:
                    self.echo(f"incident: could not slow {url} down: {exc}")
            await asyncio.sleep(1.0)

    async def _watch(self, gen: LoadGenerator, until: Callable[[], bool]) -> None:
        shown: Sample | None = None
        shown_at = 0.0
        while not until():
            await asyncio.to_thread(self._poll_events)
            sample = await asyncio.to_thread(self._sample, gen)
            self.run.samples.append(sample)
            if self.live and line_due(sample, shown, time.monotonic() - shown_at):
                self.echo(live_line(sample))
                shown, shown_at = sample, time.monotonic()
            await asyncio.sleep(1.0)

    # -- the run ---------------------------------------------------------------

    async def execute(self) -> DemoRun:
        s, stack = self.settings, self.stack
        ns = stack.settings.namespace
        stack.apply(demo_resource(s, ns))
        if self.live:
            self.echo(f"applied InferenceDeployment {ns}/{s.name}; waiting for pool a's pods")
        await asyncio.to_thread(wait_until, lambda: len(stack.pod_urls(s.name, "a")) >= 2, 120, 1.0, "pool a's pods to be ready")
        await asyncio.to_thread(stack.start_gateway, s.name)
        pattern = self.pattern or load_pattern(s)
        gen = LoadGenerator(stack.gateway_url, pattern, duration_seconds=s.duration_seconds, seed=s.seed,
                            max_concurrency=256, timeout_seconds=10.0, on_record=self.run.records.append)
        self.run.started_at = time.time()
        if self.live:
            self.echo(f"load: {pattern.source}, {s.duration_seconds:.0f} s at a mean of {s.mean_rate:g} req/s; SLO p99 {s.slo_ms:g} ms")
        load = asyncio.create_task(gen.run())
        tasks = [asyncio.create_task(self._inject(s.incident_start()))] if s.incident else []
        await self._watch(gen, load.done)
        await load
        for task in tasks:
            task.cancel()
        # Let an open cut-back finish (no load: latency is under the SLO), bounded.
        deadline = time.monotonic() + s.settle_seconds
        def settled() -> bool:
            body = stack.infd(s.name) or {}
            return (body.get("status") or {}).get("phase") not in ("Emergency", "Recovering", "CuttingBack") or time.monotonic() > deadline
        await self._watch(gen, settled)
        await asyncio.to_thread(self._poll_events)
        status = (stack.infd(s.name) or {}).get("status") or {}
        self.run.final_weights = {p: int((status.get("weights") or {}).get(p, 0)) for p in ("a", "b")}
        self.run.final_phase = status.get("phase", "")
        return self.run


def run_demo(settings: DemoSettings, *, live: bool = True, workdir: str | None = None,
             pattern: RateProfile | None = None) -> DemoRun:
    """Start the stack, run the demo, stop everything; returns what was recorded. `pattern`: the load,
    already read (`load_pattern`); None reads it at the run."""
    stack = DemoStack(StackSettings(startup_seconds=settings.startup_seconds, workdir=workdir, profile=settings.profile,
                                    operator_env=settings.operator_env()))
    try:
        stack.start()
        return asyncio.run(Demo(settings, stack, live=live, pattern=pattern).execute())
    finally:
        stack.stop()
