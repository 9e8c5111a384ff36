"""Per-request stage timings for `POST /admin/profile`.

With torch the answer also carries torch's profiler table; in emulated mode
(no torch) this table of stage timings is the answer.
"""

from __future__ import annotations

import asyncio

from .metrics import STAGES


class StageProfile:
    """Collects the stage timings of the next `target` requests."""

    def __init__(self, target: int):
        self.target = target
        self.rows: list[dict[str, float]] = []
        self.done = asyncio.Event()

    def record(self, stages: dict[str, float]) -> None:
        if len(self.rows) < self.target:
            self.rows.append(stages)
            if len(self.rows) >= self.target:
                self.done.set()

    def summary(self) -> dict[str, dict[str, float]]:
        """Per stage: count, mean, p50, p99 and max, in milliseconds."""
        out = {}
        for stage in STAGES:
            values = sorted(r[stage] * 1000.0 for r in self.rows if stage in r)
            if not values:
                continue
            pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
            out[stage] = {
                "count": len(values),
                "mean_ms": round(sum(values) / len(values), 3),
                "p50_ms": round(pick(0.5), 3),
                "p99_ms": round(pick(0.99), 3),
                "max_ms": round(values[-1], 3),
            }
        return out

    def table(self) -> str:
        """The summary as a fixed-width text table."""
        lines = [f"{'stage':<12}{'count':>7}{'mean_ms':>11}{'p50_ms':>11}{'p99_ms':>11}{'max_ms':>11}"]
        for stage, s in self.summary().items():
            lines.append(f"{stage:<12}{s['count']:>7}{s['mean_ms']:>11.3f}{s['p50_ms']:>11.3f}{s['p99_ms']:>11.3f}{s['max_ms']:>11.3f}")
        return "\n".join(lines)
