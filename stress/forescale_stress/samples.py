"""What the generator records for each request, and a columnar view of it for
the analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np


@dataclass(slots=True)
class Sample:
    """One request. Times are seconds from the start of the load.

    Latency counts from the *scheduled* send time, not the moment the request
    left: an open-loop test must charge client-side queueing (a full
    connection pool, a late event loop) to the latency, or it hides exactly
    the slowdowns it is meant to find (coordinated omission).
    """

    step: int
    scheduled: float
    sent: float
    done: float
    ok: bool
    status: int = 0
    #: None for a 2xx answer; otherwise `http_<code>`, `timeout`, `connection`
    #: or `unfinished` (still in flight when the run's time was up)
    error: str | None = None

    @property
    def latency_ms(self) -> float:
        return (self.done - self.scheduled) * 1000.0


@dataclass(frozen=True)
class SampleTable:
    """Columns of all samples, sorted by scheduled time."""

    step: np.ndarray
    scheduled: np.ndarray
    done: np.ndarray
    lag_ms: np.ndarray
    latency_ms: np.ndarray
    ok: np.ndarray

    @classmethod
    def of(cls, samples: Iterable[Sample]) -> "SampleTable":
        rows = sorted(samples, key=lambda s: s.scheduled)
        return cls(
            step=np.array([s.step for s in rows], dtype=np.int64),
            scheduled=np.array([s.scheduled for s in rows], dtype=np.float64),
            done=np.array([s.done for s in rows], dtype=np.float64),
            lag_ms=np.array([(s.sent - s.scheduled) * 1000.0 for s in rows], dtype=np.float64),
            latency_ms=np.array([s.latency_ms for s in rows], dtype=np.float64),
            ok=np.array([s.ok for s in rows], dtype=bool),
        )

    def __len__(self) -> int:
        return len(self.scheduled)

    def window(self, start: float, end: float) -> np.ndarray:
        """Latencies (ms) of requests scheduled in [start, end), with failed
        requests counted as infinitely slow."""
        lo, hi = np.searchsorted(self.scheduled, [start, end], side="left")
        lat = self.latency_ms[lo:hi].copy()
        lat[~self.ok[lo:hi]] = np.inf
        return lat
