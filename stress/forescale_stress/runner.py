"""One stress run: the step ramp, its stop conditions, and the timeline of
faults and degradation actions running beside it. Returns raw results; the
analysis and the report are separate."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from dataclasses import dataclass, replace
from typing import Callable

import aiohttp

from forescale_stress import chaos
from forescale_stress.admin import AdminClient
from forescale_stress.faults import DegradeSpec, FaultSpec
from forescale_stress.inputs import InputPicker
from forescale_stress.loadgen import LoadGenerator
from forescale_stress.percentiles import StepWindow
from forescale_stress.samples import Sample
from forescale_stress.schedule import (
    STOP_INTERRUPTED,
    STOP_SLO,
    STOP_MAX_RATE,
    STOP_MAX_REQUESTS,
    STOP_MAX_SECONDS,
    Bounds,
    Ramp,
    arrival_offsets,
    step_stop_reason,
)
from forescale_stress.target import Target
from forescale_stress.warmup import probe, start_rate_from_probe, warm_up

#: the sender never sleeps longer than this at once, so Ctrl-C is prompt
_MAX_NAP = 0.25


@dataclass(frozen=True)
class RunConfig:
    """Everything one run needs, validated by the caller."""

    target: Target
    ramp: Ramp
    bounds: Bounds
    arrivals: str = "poisson"
    seed: int = 0
    connections: int = 64
    timeout_s: float = 10.0
    model: str = "minilm"
    distinct_inputs: int = 0
    zipf: float = 1.0
    #: every input this many times longer (`input_scale` faults change it for a while)
    input_scale: float = 1.0
    faults: tuple[FaultSpec, ...] = ()
    degradations: tuple[DegradeSpec, ...] = ()
    #: steps overlapping [fault start, fault end + grace] neither stop the
    #: ramp nor count for the knee
    fault_grace_s: float = 10.0
    degrade_window_s: float = 10.0
    #: sliding window of the recovery definition (docs/stress.md)
    recovery_window_s: float = 5.0
    #: fewest requests in a recovery or degradation window for its p99
    window_min_samples: int = 20
    #: seconds of load at the first step's rate before the ramp, not counted
    warmup_s: float = 0.0
    #: > 0: the first step's rate comes from a probe this long (`warmup.probe`),
    #: not from `ramp.start_rate`
    probe_s: float = 0.0
    #: seconds of the probe's closed-loop load before it counts (the server's cold path)
    probe_warmup_s: float = 0.0
    #: a step over the SLO ends the ramp only when the same rate, repeated at once, is over it too
    confirm_slo: bool = False


@dataclass
class TimelineEvent:
    """A fault or degradation action as it really happened (seconds from the
    load start); `called_at` None when the run ended before its time."""

    spec: FaultSpec | DegradeSpec
    called_at: float | None = None
    answered_at: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class Progress:
    """A snapshot for the progress bar."""

    elapsed: float
    max_seconds: float
    step: int
    rate: float
    sent: int
    in_flight: int


@dataclass
class RunResult:
    """Raw outcome of a run."""

    config: RunConfig
    windows: list[StepWindow]
    samples: list[Sample]
    faults: list[TimelineEvent]
    degradations: list[TimelineEvent]
    stopped_because: str
    load_end: float
    wall_seconds: float
    cpu_seconds: float
    #: seconds the probe and the warm-up took before the ramp (its clock starts after them)
    before_ramp_seconds: float = 0.0
    warmup_requests: int = 0
    #: successful answers per second the probe counted (None without a probe)
    probe_rps: float | None = None


def exempt_step(start: float, end: float, faults: tuple[FaultSpec, ...], grace: float) -> bool:
    """True when [start, end) overlaps a fault's window plus its grace."""
    return any(start < f.end + grace and end > f.at for f in faults)


def holds_rate(start: float, end: float, faults: tuple[FaultSpec, ...], degradations: tuple[DegradeSpec, ...],
               grace: float, window: float) -> bool:
    """True when the step [start, end) overlaps a fault window plus its grace,
    or a degradation action's before/after windows (one second is allowed for
    the admin call): the next step then offers the same rate."""
    if exempt_step(start, end, faults, grace):
        return True
    return any(start < d.at + window + 1.0 and end > d.at - window for d in degradations)


class Runner:
    """Runs one configured stress test. `admin` is needed when the config has
    admin faults or degradations; `kill` sends signals (injected in tests)."""

    def __init__(self, config: RunConfig, admin: AdminClient | None = None,
                 kill: Callable[[FaultSpec], str | None] = chaos.kill,
                 on_progress: Callable[[Progress], None] | None = None):
        self.config = config
        self._admin = admin
        self._kill = kill
        self._on_progress = on_progress
        self._stop = asyncio.Event()
        self._step = 0
        self._rate = config.ramp.start_rate
        self._picker: InputPicker | None = None

    async def run(self) -> RunResult:
        """Probe and warm up (when configured), then run the ramp to a stop condition."""
        cfg = self.config
        loop = asyncio.get_running_loop()
        started = loop.time()
        cpu_start = time.process_time()
        self._install_sigint(loop)
        picker = InputPicker(cfg.target.kind, cfg.model, cfg.distinct_inputs, cfg.zipf, cfg.seed, cfg.input_scale)
        self._picker = picker
        drain = cfg.bounds.drain_seconds(cfg.timeout_s)
        connector = aiohttp.TCPConnector(limit=cfg.connections, limit_per_host=cfg.connections)
        timeout = aiohttp.ClientTimeout(total=cfg.timeout_s)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            probe_rps = None
            if cfg.probe_s > 0:
                answered, took = await probe(session, cfg.target.url, picker.next, cfg.probe_s,
                                             warmup_seconds=cfg.probe_warmup_s)
                probe_rps = answered / took
                cfg = replace(cfg, ramp=replace(cfg.ramp, start_rate=start_rate_from_probe(answered, took)))
                self.config, self._rate = cfg, cfg.ramp.start_rate
            warmed = 0
            if cfg.warmup_s > 0:
                warmed = await warm_up(session, cfg.target.url, picker.next, cfg.ramp.rate(0), cfg.warmup_s,
                                       cfg.arrivals, random.Random(cfg.seed + 1), asyncio.sleep)
            # The samples' time base (and the faults' `at=`) starts with the ramp.
            t0 = loop.time()
            before_ramp = t0 - started
            clock = lambda: loop.time() - t0  # noqa: E731
            load_deadline = cfg.bounds.max_seconds - before_ramp - drain
            faults = [TimelineEvent(f) for f in cfg.faults]
            degradations = [TimelineEvent(d) for d in cfg.degradations]
            gen = LoadGenerator(session, cfg.target.url, picker.next, clock)
            side = [asyncio.ensure_future(self._at(ev, clock)) for ev in faults + degradations]
            ticker = asyncio.ensure_future(self._tick(gen, clock))
            try:
                windows, stopped = await self._ramp(gen, clock, load_deadline)
                load_end = clock()
                # After Ctrl-C the user wants the report now, not a full drain.
                budget = cfg.bounds.max_seconds - before_ramp - clock()
                await gen.drain(min(budget, 1.0) if stopped == STOP_INTERRUPTED else budget)
            finally:
                for task in side + [ticker]:
                    task.cancel()
                await asyncio.gather(*side, ticker, return_exceptions=True)
                self._remove_sigint(loop)
        return RunResult(
            config=cfg, windows=windows, samples=gen.samples, faults=faults, degradations=degradations,
            stopped_because=stopped, load_end=load_end, wall_seconds=clock(),
            cpu_seconds=time.process_time() - cpu_start, before_ramp_seconds=before_ramp, warmup_requests=warmed,
            probe_rps=probe_rps,
        )

    async def _ramp(self, gen: LoadGenerator, clock, load_deadline: float) -> tuple[list[StepWindow], str]:
        cfg = self.config
        rng = random.Random(cfg.seed)
        windows: list[StepWindow] = []
        index = level = 0
        confirming = False  # this step repeats the rate of a step that went over the SLO
        while True:
            rate = cfg.ramp.rate(level)
            if cfg.bounds.over_max_rate(rate):
                return windows, STOP_MAX_RATE
            self._step, self._rate = index, rate
            start = clock()
            length = cfg.ramp.duration(rate)
            offsets = arrival_offsets(rate, length, cfg.arrivals, rng)
            planned_end = start + length
            end_limit = min(planned_end, load_deadline)
            cpu0 = time.process_time()
            reason = await self._send_step(gen, index, offsets, start, end_limit, clock)
            end = clock()
            if reason is None and end_limit < planned_end:
                reason = STOP_MAX_SECONDS
            exempt = exempt_step(start, end, cfg.faults, cfg.fault_grace_s)
            windows.append(StepWindow(index, rate, start, end, time.process_time() - cpu0, exempt))
            if reason is not None:
                return windows, reason
            p99, error_rate = gen.step_check(index, cfg.ramp.min_samples)
            reason = step_stop_reason(p99, error_rate, cfg.bounds, exempt)
            if reason == STOP_SLO and cfg.confirm_slo and not confirming:
                # One step over the SLO on a shared machine may be a stall of the machine, not the
                # server's knee: repeat the rate once, and stop only if the repeat is over it too.
                confirming = True
                index += 1
                continue
            if reason is not None:
                return windows, reason
            if confirming:
                # The repeat was under the SLO: the breach before it was noise, not the knee.
                windows[-2] = replace(windows[-2], slo_unconfirmed=True)
                confirming = False
            # The ramp holds its rate through fault and degradation windows, so
            # "before" and "after" are measured at the same offered rate.
            if not holds_rate(start, end, cfg.faults, cfg.degradations, cfg.fault_grace_s, cfg.degrade_window_s):
                level += 1
            index += 1

    async def _send_step(self, gen: LoadGenerator, index: int, offsets: list[float], start: float, end: float,
                         clock) -> str | None:
        max_requests = self.config.bounds.max_requests
        for offset in offsets:
            if start + offset >= end:
                break
            if max_requests is not None and gen.sent_total >= max_requests:
                return STOP_MAX_REQUESTS
            if await self._nap_until(start + offset, clock):
                return STOP_INTERRUPTED
            gen.fire(index, start + offset)
        if max_requests is not None and gen.sent_total >= max_requests:
            return STOP_MAX_REQUESTS
        if await self._nap_until(end, clock):
            return STOP_INTERRUPTED
        return None

    async def _nap_until(self, when: float, clock) -> bool:
        """Sleep until `when`; True if the run was interrupted meanwhile."""
        while True:
            if self._stop.is_set():
                return True
            delay = when - clock()
            if delay <= 0:
                return False
            await asyncio.sleep(min(delay, _MAX_NAP))

    async def _at(self, event: TimelineEvent, clock) -> None:
        """Carry out one fault or degradation at its time."""
        spec = event.spec
        await asyncio.sleep(max(0.0, spec.at - clock()))
        event.called_at = clock()
        if isinstance(spec, FaultSpec) and spec.kind == "kill":
            event.error = self._kill(spec)
            event.answered_at = clock()
            return
        if isinstance(spec, FaultSpec) and spec.kind == "input_scale":
            await self._shift_inputs(event, clock)
            return
        if self._admin is None:  # the CLI refuses this earlier; kept as a guard
            event.error = "no admin token"
            event.answered_at = clock()
            return
        if isinstance(spec, FaultSpec):
            result = await self._admin.post("/admin/faults", spec.admin_body())
        else:
            result = await self._admin.post(spec.admin_path(), spec.admin_body())
        event.answered_at = clock()
        event.error = result.error

    async def _shift_inputs(self, event: TimelineEvent, clock) -> None:
        """A request-mix shift: inputs `value` times longer for `seconds`, then back to the run's own."""
        spec = event.spec
        if self._picker is None:  # not started by run(); kept as a guard
            event.error = "no load running"
            event.answered_at = clock()
            return
        self._picker.set_scale(spec.value)
        event.answered_at = clock()
        try:
            await asyncio.sleep(max(0.0, spec.end - clock()))
        finally:
            self._picker.set_scale(self.config.input_scale)

    async def _tick(self, gen: LoadGenerator, clock) -> None:
        if self._on_progress is None:
            return
        while True:
            self._on_progress(Progress(clock(), self.config.bounds.max_seconds, self._step, self._rate,
                                       gen.sent_total, gen.in_flight))
            await asyncio.sleep(0.5)

    def _install_sigint(self, loop: asyncio.AbstractEventLoop) -> None:
        # Ctrl-C ends the ramp and still prints the report of what ran.
        try:
            loop.add_signal_handler(signal.SIGINT, self._stop.set)
        except (RuntimeError, ValueError, NotImplementedError):
            pass  # not the main thread (tests) or no signal support

    def _remove_sigint(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (RuntimeError, ValueError, NotImplementedError):
            pass
