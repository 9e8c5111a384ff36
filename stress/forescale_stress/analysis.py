"""What a run means: the knee, the latency growth slope, the time to recover
after each fault and the effect of each degradation action. Pure functions
over the step summaries and the sample table; the definitions are in
docs/stress.md and repeated in each docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forescale_stress.percentiles import StepStats, nearest_rank
from forescale_stress.samples import SampleTable

#: sliding window over which the p99 must be back to normal after a fault
RECOVERY_WINDOW_SECONDS = 5.0
#: "back to normal" means within this factor of the pre-fault p99
RECOVERY_TOLERANCE = 1.2
#: the pre-fault p99 is taken over this long just before the fault starts
BASELINE_SECONDS = 10.0
#: the sliding window advances by this much
RECOVERY_STEP_SECONDS = 0.1


@dataclass(frozen=True)
class Knee:
    """The highest rate served under the SLO before the ramp first broke it."""

    rps: float | None  # achieved rate of the knee step
    offered_rps: float | None
    index: int | None
    #: True when some step went over the SLO, so the knee is a real bound;
    #: False when the ramp stopped for another reason first (a lower bound)
    crossed: bool
    under_knee: tuple[int, ...]  # the steps the slope is fitted on


def find_knee(steps: list[StepStats], slo_ms: float) -> Knee:
    """Walk the steps in order, skipping under-sampled steps, steps inside a
    fault window and breaches the repeat at the same rate did not confirm
    (noise), until one has p99 > SLO. The knee is the last step before it (the
    highest offered rate under the SLO), reported at the rate it *achieved*.
    Taking the last step rather than the largest achieved rate keeps
    step-to-step noise in the achieved rate from inflating the knee."""
    under: list[StepStats] = []
    crossed = False
    for step in steps:
        if step.during_fault or step.p99_ms is None or step.slo_unconfirmed:
            continue
        if step.p99_ms > slo_ms:
            crossed = True
            break
        under.append(step)
    if not under:
        return Knee(None, None, None, crossed, ())
    best = max(under, key=lambda s: (s.rate, s.index))
    return Knee(best.achieved_rate, best.rate, best.index, crossed, tuple(s.index for s in under))


def least_squares_slope(xs: list[float], ys: list[float]) -> float | None:
    """Slope of the least-squares line through (xs, ys); None with fewer than
    two distinct x values."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    x = np.asarray(xs, dtype=np.float64)
    y = np.asarray(ys, dtype=np.float64)
    x0 = x - x.mean()
    return float((x0 * (y - y.mean())).sum() / (x0 * x0).sum())


def latency_slope(steps: list[StepStats], knee: Knee) -> float | None:
    """Latency growth slope in ms per rps: least squares of p99 against the
    achieved rate over the steps under the knee (`knee.under_knee`). None
    unless those steps offered at least two different rates: with a held
    rate the achieved rates differ only by noise, and a line through noise
    is no slope."""
    chosen = [s for s in steps if s.index in knee.under_knee]
    if len({round(s.rate, 9) for s in chosen}) < 2:
        return None
    return least_squares_slope([s.achieved_rate for s in chosen], [s.p99_ms for s in chosen])


def window_p99(table: SampleTable, start: float, end: float, min_samples: int) -> tuple[float | None, int]:
    """p99 (ms) of the requests scheduled in [start, end), failures counted as
    infinitely slow; None when fewer than `min_samples` were sent there. With
    under 100 samples the nearest-rank p99 is the window's maximum, which errs
    on the slow side."""
    lat = table.window(start, end)
    if len(lat) < min_samples:
        return None, len(lat)
    return nearest_rank(lat, 0.99), len(lat)


@dataclass(frozen=True)
class Recovery:
    """Time to recover after one fault, or why there is none."""

    seconds: float | None
    baseline_p99_ms: float | None
    note: str | None = None


def recovery_time(
    table: SampleTable,
    fault_start: float,
    fault_end: float,
    load_end: float,
    min_samples: int,
    *,
    window: float = RECOVERY_WINDOW_SECONDS,
    tolerance: float = RECOVERY_TOLERANCE,
    baseline_seconds: float = BASELINE_SECONDS,
    step: float = RECOVERY_STEP_SECONDS,
) -> Recovery:
    """Seconds from the fault's end (its start for instantaneous faults and
    kills) to the start of the first `window`-second window whose p99 is at
    most `tolerance` x the pre-fault p99. The pre-fault p99 is taken over the
    `baseline_seconds` before the fault started. Failed requests count as
    infinitely slow, so a window with more than 1% failures never counts as
    recovered. Only windows that end before the load stopped are considered."""
    baseline, n = window_p99(table, max(0.0, fault_start - baseline_seconds), fault_start, min_samples)
    if baseline is None:
        return Recovery(None, None, f"only {n} requests in the {baseline_seconds:g}s before the fault (need {min_samples})")
    if not math.isfinite(baseline):
        return Recovery(None, None, "more than 1% of requests failed before the fault")
    limit = tolerance * baseline
    k = 0
    while fault_end + k * step + window <= load_end + 1e-9:
        t = fault_end + k * step
        p99, _ = window_p99(table, t, t + window, min_samples)
        if p99 is not None and p99 <= limit:
            return Recovery(round(k * step, 3), baseline)
        k += 1
    return Recovery(None, baseline, f"p99 not back within {tolerance:g}x of {baseline:.1f} ms before the load ended")


@dataclass(frozen=True)
class Effect:
    """p99 in equal windows before and after a degradation action."""

    p99_before_ms: float | None
    p99_after_ms: float | None
    samples_before: int
    samples_after: int
    note: str | None = None


def degradation_effect(
    table: SampleTable, called_at: float, answered_at: float, load_end: float, window: float, min_samples: int
) -> Effect:
    """p99 over [called_at - window, called_at) and over
    [answered_at, answered_at + window): equal lengths, the admin call itself
    left out. A window that ran past the end of the load, or held too few
    requests, gives None and says why."""
    before, nb = window_p99(table, called_at - window, called_at, min_samples)
    notes = []
    if called_at - window < -1e-9:
        before = None
        notes.append(f"action at {called_at:.1f}s leaves less than a {window:g}s window before it")
    if answered_at + window > load_end + 1e-9:
        after, na = None, len(table.window(answered_at, load_end))
        notes.append(f"the load ended less than {window:g}s after the action")
    else:
        after, na = window_p99(table, answered_at, answered_at + window, min_samples)
    for name, value, n in (("before", before, nb), ("after", after, na)):
        if value is None and n < min_samples:
            notes.append(f"only {n} requests in the window {name} (need {min_samples})")
        elif value is not None and not math.isfinite(value):
            notes.append(f"more than 1% of requests failed in the window {name}")
    clean = [v if v is not None and math.isfinite(v) else None for v in (before, after)]
    return Effect(clean[0], clean[1], nb, na, "; ".join(dict.fromkeys(notes)) or None)
