"""Wall-clock jumps between ticks, taken out of the engine's remembered times.

The engine state holds absolute wall-clock times (the cut-back's next step,
since when latency is under the SLO, when the incident started, the
stabilization window). After the clock jumped back an hour, `nextAt` lay an
hour ahead and the cut-back stood still at 80/20; a jump forward skipped the
stable period. The engine stays pure (it is given `now`); here, before each
decision:

- while the operator runs, a jump is the difference between how far the wall
  clock and the monotonic clock moved since the last tick; every remembered
  time is moved by it, so waits keep their length in both directions;
- after a restart there is no earlier tick to compare with, so times are only
  bounded: none lies in the future, and the next cut-back step is at most one
  interval away.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.state import EngineState

#: a difference between the two clocks below this is drift or NTP slewing, not a jump
TOLERANCE_S = 2.0


@dataclass
class ClockWatch:
    """The wall and monotonic readings of one resource's last tick."""

    wall: float | None = None
    mono: float | None = None

    def jump(self, wall: float, mono: float) -> float:
        """Seconds the wall clock jumped since the last reading (0 below `TOLERANCE_S`); remembers this one."""
        jumped = 0.0
        if self.wall is not None and self.mono is not None:
            jumped = (wall - self.wall) - (mono - self.mono)
        self.wall, self.mono = wall, mono
        return jumped if abs(jumped) >= TOLERANCE_S else 0.0


def _shift(t: float | None, seconds: float) -> float | None:
    return None if t is None else t + seconds


def _history(state: EngineState, move) -> dict:
    return {pool: tuple((move(t), n) for t, n in entries) for pool, entries in state.learned.history.items()}


def shift_times(state: EngineState, seconds: float) -> EngineState:
    """Every absolute time in `state` moved by `seconds` (the clock's jump)."""
    incident = state.incident
    return replace(
        state,
        incident=replace(incident, started_at=_shift(incident.started_at, seconds),
                         under_slo_since=_shift(incident.under_slo_since, seconds),
                         cutback_next_at=_shift(incident.cutback_next_at, seconds)),
        learned=replace(state.learned, history=_history(state, lambda t: t + seconds)),
    )


def bound_times(state: EngineState, now: float, interval_s: float) -> EngineState:
    """No remembered time after `now`, and the next cut-back step at most `interval_s` away."""
    def past(t: float | None) -> float | None:
        return None if t is None else min(t, now)

    incident = state.incident
    next_at = incident.cutback_next_at
    if next_at is not None:
        next_at = min(next_at, now + interval_s)
    bounded = replace(
        state,
        incident=replace(incident, started_at=past(incident.started_at), under_slo_since=past(incident.under_slo_since),
                         cutback_next_at=next_at),
        learned=replace(state.learned, history=_history(state, lambda t: min(t, now))),
    )
    return state if bounded == state else bounded
