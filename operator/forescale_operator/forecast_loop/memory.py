"""What the loop remembers about one resource in memory (not in status: it may be lost on restart).

The metric history the forecaster reads, the clocks at the last tick (to tell
a wall-clock jump from time passing), the engine's state since status last
had it written (status.py refreshes it every few steps), recent decisions (for the incident
snapshot), the A pods already switched to the runtime precision, pod problems
and a bad annotation already reported, and past forecasts, scored against
what happened to give `status.forecast.recentErrorMs` and `bandCoverage`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..engine.state import EngineState
from ..readings import HistoryBuffer
from .clock_jumps import ClockWatch


@dataclass
class ResourceMemory:
    #: the samples read so far (an hour), resampled to the forecaster's step each tick
    history: HistoryBuffer = field(default_factory=HistoryBuffer)
    decisions: deque = field(default_factory=lambda: deque(maxlen=120))
    #: pod incarnation (`name#restarts`) -> precision it was last switched to through the admin API
    switched: dict[str, str] = field(default_factory=dict)
    #: (target time, median latency forecast, upper band) of past forecasts' first step
    pending: deque = field(default_factory=lambda: deque(maxlen=400))
    #: (absolute error ms, inside band) of scored forecasts
    scored: deque = field(default_factory=lambda: deque(maxlen=40))
    #: pod problems already reported with a Warning event, as (pod name, problem)
    pod_problems: set = field(default_factory=set)
    #: the clocks at the last tick, to tell a wall-clock jump from time passing
    clock: ClockWatch = field(default_factory=ClockWatch)
    #: held while a tick runs, and by the delete handler (ForecastLoop.acting)
    acting: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: the bad forescale.io/capacity-rps value already reported with a Warning event (None: none reported)
    reported_annotation: tuple[str | None, ...] | None = None
    #: the engine's state after the last tick, newer than `status.engine` while that is one of `state_over`
    state: EngineState | None = None
    state_over: tuple[Any, ...] = ()
    #: when (monotonic) the tick last wrote status (or found nothing to write): refreshed fields wait until a
    #: refresh is due
    status_written_at: float | None = None
    #: the phase the last tick moved to without writing it, and since when (`StatusUpdate.unwritten_transition`)
    unwritten_phase: tuple[str, str] | None = None

    def keep(self, state: EngineState, *over: Any) -> None:
        """The state the next tick starts from, as long as status still holds one of `over`: the engine JSON it
        supersedes, and after a write the JSON that write replaced (a watch event lagging behind our own write
        still shows it, and the older state it holds must not replace the newer one)."""
        self.state, self.state_over = state, over

    def kept_state(self, in_status: Any) -> EngineState | None:
        """The kept state, unless status has changed under it (another operator replica, a hand edit): then status
        is the truth."""
        return self.state if self.state is not None and in_status in self.state_over else None

    def carry(self, state: EngineState, in_status: Any) -> None:
        """Keep `state` after a tick that wrote nothing: it supersedes what the kept state did while status still
        holds that, else (status was the truth this tick) what status holds."""
        self.keep(state, *(self.state_over if in_status in self.state_over else (in_status,)))

    def refresh_due(self, mono: float, interval: float) -> bool:
        return self.status_written_at is None or mono - self.status_written_at >= interval

    def remember_forecast(self, target_time: float, median: float, upper: float) -> None:
        self.pending.append((target_time, median, upper))

    def score(self, now: float, observed_ms: float | None, tolerance: float) -> None:
        """Score every pending forecast whose target time has come (within `tolerance` s)."""
        while self.pending and self.pending[0][0] <= now + tolerance:
            target, median, upper = self.pending.popleft()
            if observed_ms is not None and abs(target - now) <= tolerance:
                self.scored.append((abs(observed_ms - median), observed_ms <= upper))

    def recent_error_ms(self) -> float | None:
        return sum(e for e, _ in self.scored) / len(self.scored) if self.scored else None

    def band_coverage(self) -> float | None:
        return sum(1 for _, inside in self.scored if inside) / len(self.scored) if self.scored else None

    def record(self, decision: Any, at: float) -> None:
        self.decisions.append({"at": at, **decision.to_dict()})
