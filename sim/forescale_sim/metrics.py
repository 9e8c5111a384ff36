"""The replay's measurements, exactly as docs/replay.md defines them.

- Latency quantiles are taken over 10 s windows (by arrival time).
- A window is over the SLO when its SLO quantile is: equivalently, when more
  than `1 - quantile` of its requests are over the SLO, rejected and failed
  requests counted as over. A window without requests is under.
- An episode is a run of windows over the SLO.
- Time to recover: from an episode's first window over the SLO to the start
  of the first 60 s that stay under it. A stretch cut short by the end of
  the trace counts when no window after it is over; an episode still open at
  the end recovers at the end of the trace (censored, and said so).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WINDOW_SECONDS = 10.0
STABLE_SECONDS = 60.0


def windows_over(requests: np.ndarray, over: np.ndarray, quantile: float) -> np.ndarray:
    """Boolean per window: is its SLO quantile over the SLO?"""
    requests = np.asarray(requests, dtype=float)
    over = np.asarray(over, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(requests > 0, over / np.maximum(requests, 1e-12), 0.0)
    return share > (1.0 - quantile) + 1e-12


def episodes(flags: np.ndarray) -> list[tuple[int, int]]:
    """(first, last + 1) window indices of each run of windows over the SLO."""
    flags = np.asarray(flags, dtype=bool)
    padded = np.concatenate([[False], flags, [False]]).astype(int)
    edges = np.diff(padded)
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


def recovery_seconds(flags: np.ndarray, window_seconds: float = WINDOW_SECONDS,
                     stable_seconds: float = STABLE_SECONDS) -> list[tuple[float, bool]]:
    """(seconds to recover, censored) for each episode.

    `censored` is True when the episode never recovered before the trace ended;
    its time then runs to the end of the trace."""
    flags = np.asarray(flags, dtype=bool)
    need = int(round(stable_seconds / window_seconds))
    n = flags.size
    out = []
    for first, end in episodes(flags):
        j = end
        while j < n and flags[j : j + need].any():
            j += int(np.flatnonzero(flags[j : j + need])[-1]) + 1
        out.append(((j - first) * window_seconds, j >= n))
    return out


@dataclass(frozen=True)
class SloSummary:
    """The SLO side of one policy's report."""

    requests: int
    requests_over_slo: int
    violation_seconds: float
    episodes: int
    mttr_seconds: float
    censored_episodes: int

    @property
    def over_fraction(self) -> float:
        return self.requests_over_slo / self.requests if self.requests else 0.0


def summarize(requests: np.ndarray, over: np.ndarray, quantile: float,
              window_seconds: float = WINDOW_SECONDS) -> SloSummary:
    """Per-window request and over-SLO counts -> the report's SLO numbers."""
    flags = windows_over(requests, over, quantile)
    ttr = recovery_seconds(flags, window_seconds)
    return SloSummary(
        requests=int(round(float(np.sum(requests)))),
        requests_over_slo=int(round(float(np.sum(over)))),
        violation_seconds=float(flags.sum() * window_seconds),
        episodes=len(ttr),
        mttr_seconds=float(np.mean([t for t, _ in ttr])) if ttr else 0.0,
        censored_episodes=sum(1 for _, c in ttr if c),
    )
