"""Online calibration of a forecast band: adaptive conformal inference (Gibbs & Candès, 2021).

A model's q0.1-q0.9 band is nominally 80%, but on a live series it is as
good as the data the model was trained on. ACI keeps it honest online, per
series, from the errors the loop sees anyway:

- The *score* of an outcome y against a raw band [lo, hi] is the conformalized
  quantile regression score of Romano et al. (2019), `max(lo - y, y - hi)`, in
  the target's own units (negative inside).
- The issued band is `[lo - Q, hi + Q]`, with Q the `1 - alpha_t` empirical
  quantile of the last `window` scores: Q > 0 widens, Q < 0 narrows (never
  past the median).
- After each outcome, `alpha_t += gamma * (alpha - miss)`, where `miss` is 1
  when y fell outside the band that was issued for it. Misses lower alpha_t
  (wider bands), hits raise it. Gibbs & Candès show the long-run miss rate
  then stays within (max(alpha_1, 1 - alpha) + gamma) / (gamma * T) of alpha
  whatever the data do; the window lets Q follow a drifting series.
- alpha_t is clipped to [0, 1]: clipping keeps a run of misses from piling
  up a debt that takes hundreds of hits to repay.
- Q is read at no level above `1 - (in_flight + 1) / window`: the largest
  `in_flight + 1` scores of the window never set it alone. `in_flight` is
  how many forecasts are outstanding at once (for the last step, the horizon
  in steps: 12 at 180 s and 15 s), and a change of regime makes every one of them miss
  together: a burst from idle misses each forecast issued in the horizon
  before it. Without the cap those misses drove alpha_t to 0, Q became the
  window's largest score, the burst's whole size, and it was added again to
  a raw band that had since risen to the burst (bench.unseen_traffic, the
  bursty family at seed 4: q0.9 45 req/s raw, 81 issued, 22 pods where the
  oracle used 14). A regime whose large scores are more than that share of
  the window still sets Q within that many outcomes. Measured on the
  frontier's 144 cases (docs/frontier.md, "The widening's cap").

Why absolute scores, not scores in band widths (this module's first form):
the loop sizes pods on the upper band, and on a bursty series a width-scaled
score runs away. At an idle step the raw band collapses towards [0, 0]; the
next burst then scores hundreds of widths, and that multiple is applied to
the next, normal, band. On a synthetic code-completion trace (mean 3.5 req/s,
bursts to 40, idle minutes) the LSTM's q0.9 rate band reached 394 req/s over
a median of 2.7, and the replay held 100 pods where the oracle needs 15. An
absolute score bounds the widening by misses the series really had.

Each forecast step is calibrated on its own outcomes (`HorizonConformal`):
step k's outcome comes k + 1 steps after its forecast was issued (the
outcome of a 180 s forecast is known 180 s later, of its first 15 s step
15 s later), and the caller scores each step when its target time arrives.
Until 7 December 2026 one state per series read Q from the last step's
scores and added it to every step; the loop sizes pods on the step a pod
started now would be ready at (about 90 s), whose band that widened by the
horizon's error (docs/predictor.md, "Calibration per step").
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

#: How many recent scores set Q: 120, half an hour of 15 s outcomes. The window is both the memory
#: and the cap's denominator: its largest `in_flight + 1` scores never set Q alone, so at 120 a
#: horizon's worth of misses (13 at 180 s and 15 s) is 10.8% of it, under the two-sided miss budget
#: (20%) that alpha_t keeps in steady state, and after a change of regime Q is read no higher than
#: the window's 89th percentile. At 300 (until 7 December 2026) the same misses were 4.3% and Q could
#: reach the 96th: the backtest's band held 0.75-0.85 on 35 of 38 series, on 37 at 120 (the short
#: series: 215 outcomes never fill 300); the frontier's 144 cases 348 -> 352 goals (GPU-h -0.7%,
#: violation s +1.8%); `bench.unseen_traffic` peak 49 -> 51 of 52, its other goals unchanged
#: (docs/predictor.md, "Calibration window").
WINDOW = 120


def linear_quantile(ordered: list[float], level: float) -> float:
    """`np.quantile(ordered, level)` (its default, linear method) of an ascending list, to the last bit: the same
    virtual index `level (n - 1)` and the same two-sided interpolation numpy's `_lerp` uses."""
    n = len(ordered)
    virtual = level * (n - 1)
    below = math.floor(virtual)
    if below >= n - 1:
        return float(ordered[-1])
    a, b = ordered[below], ordered[below + 1]
    t = virtual - below
    diff = b - a
    return float(b - diff * (1.0 - t)) if t >= 0.5 else float(a + diff * t)


def widen(lo: np.ndarray, median: np.ndarray, hi: np.ndarray, q: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The band [lo - q, hi + q]; narrowing (q < 0) stops at the median: the band always holds the point forecast."""
    lo, median, hi = (np.asarray(a, dtype=np.float64) for a in (lo, median, hi))
    return np.minimum(lo - q, median), np.maximum(hi + q, median)


def score(lo: float, median: float, hi: float, y: float) -> float:
    """The CQR score of outcome y against the raw band: <= 0 inside, in the target's units."""
    return max(float(lo) - y, y - float(hi))


@dataclass
class AdaptiveConformal:
    """One series' (and target's) ACI state; see the module docstring.

    `coverage` is the nominal share of outcomes the band should hold,
    `gamma` the step size of alpha_t, `window` how many recent scores set Q,
    `in_flight` how many forecasts are outstanding at once (the horizon in
    steps; see the module docstring for the cap it sets).
    """

    coverage: float = 0.8
    gamma: float = 0.02
    window: int = WINDOW
    in_flight: int = 12
    alpha_t: float = field(init=False)
    scores: deque = field(init=False)

    def __post_init__(self) -> None:
        if not 0 < self.coverage < 1:
            raise ValueError(f"coverage must be in (0, 1), got {self.coverage}")
        if not 0 < self.gamma < 1 or self.window < 1:
            raise ValueError(f"need 0 < gamma < 1 and window >= 1, got {self.gamma}, {self.window}")
        if self.in_flight < 0:
            raise ValueError(f"in_flight must be >= 0, got {self.in_flight}")
        self.alpha_t = 1.0 - self.coverage
        self.scores = deque(maxlen=self.window)
        #: the same scores, kept sorted as they come and go: Q is read from it without sorting the window at every
        #: forecast (np.quantile over 300 scores was a third of a forecast's CPU in the loop)
        self._sorted: list[float] = []

    @property
    def alpha(self) -> float:
        return 1.0 - self.coverage

    def q(self) -> float:
        """The current widening, in the target's units (0 before any outcome)."""
        if not self._sorted:
            return 0.0
        # never below the nominal level, whatever the window: a short window caps nothing
        level = 1.0 - max(self.alpha_t, min((self.in_flight + 1) / self.window, self.alpha))
        return linear_quantile(self._sorted, level)  # in [0, 1): alpha_t is clipped to [0, 1], the cap is > 0

    def _add(self, value: float) -> None:
        """One score into the window, the oldest out once it is full (the deque and the sorted copy alike)."""
        if len(self.scores) == self.window:
            del self._sorted[bisect.bisect_left(self._sorted, self.scores[0])]
        self.scores.append(value)
        bisect.insort(self._sorted, value)

    def band(self, lo: np.ndarray, median: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The issued band for raw quantile arrays, every element widened by the same Q (one step's state)."""
        return widen(lo, median, hi, self.q())

    def update(self, raw: tuple[float, float, float], issued: tuple[float, float], y: float) -> None:
        """Learn from outcome y of a forecast whose raw band was `raw` (lo, median, hi) and issued band `issued`."""
        if not np.isfinite(y) or not all(np.isfinite(raw)):
            return
        hit = issued[0] <= y <= issued[1]
        self.alpha_t = min(max(self.alpha_t + self.gamma * (self.alpha - (0.0 if hit else 1.0)), 0.0), 1.0)
        self._add(score(raw[0], raw[1], raw[2], y))

    def seed(self, raw_bands: np.ndarray, outcomes: np.ndarray) -> None:
        """Start from errors seen before going live (validation windows): scores only, alpha_t untouched."""
        for (lo, median, hi), y in zip(np.asarray(raw_bands, dtype=np.float64), np.asarray(outcomes, dtype=np.float64)):
            if np.isfinite(y) and np.isfinite([lo, median, hi]).all():
                self._add(score(lo, median, hi, y))


class HorizonConformal:
    """One `AdaptiveConformal` per forecast step: step k's band is widened by step k's own errors.

    A forecast's errors grow with its lead time (a ramp's error at 90 s is half its error at 180 s;
    noise adds up). One widening read at the last step and added to every step widens the early
    steps by the horizon's error, and the loop sizes pods on an early step, the one a pod started
    now would be ready at. Step k (0-based) is scored k + 1 steps after its forecast was issued, so
    k + 1 forecasts are in flight for it (the cap on its widening, `AdaptiveConformal`).
    """

    def __init__(self, steps: int, coverage: float = 0.8, gamma: float = 0.02, window: int = WINDOW) -> None:
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        self.by_step = [AdaptiveConformal(coverage, gamma, window, in_flight=k + 1) for k in range(steps)]

    def q(self) -> np.ndarray:
        """Each step's widening, in the target's units."""
        return np.array([aci.q() for aci in self.by_step])

    def band(self, lo: np.ndarray, median: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The issued band for raw quantile arrays of one step per forecast step."""
        shapes = {np.shape(a) for a in (lo, median, hi)}
        if shapes != {(len(self.by_step),)}:
            raise ValueError(f"need {len(self.by_step)} steps per quantile, got shapes {sorted(shapes)}")
        return widen(lo, median, hi, self.q())

    def update(self, step: int, raw: tuple[float, float, float], issued: tuple[float, float], y: float) -> None:
        """Learn from outcome y of a forecast's step `step` (0-based), its raw (lo, median, hi) and issued band."""
        self.by_step[step].update(raw, issued, y)


def calibrate_backtest(pred: np.ndarray, truth: np.ndarray, at: np.ndarray, horizon: int, *, coverage: float = 0.8,
                       gamma: float = 0.02, window: int = WINDOW, seed: tuple[np.ndarray, np.ndarray] | None = None,
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Run ACI over a backtest's origins in time order, as the loop would: each step on its own errors.

    `pred` [N, Q, H] (lowest, median and highest quantile at indices 0, Q//2, -1),
    `truth` [N, H] the outcome of each origin `at` [N] (in steps) at each horizon step.
    Step k of the forecast at origin o only learns from origins o' whose step-k
    outcome was known by then, o' + k + 1 <= o (nothing later). `seed` (raw
    bands [M, 3, H], outcomes [M, H]) are errors from before the test part.
    Returns (the calibrated forecasts [N, Q, H], hits [N, H]: 1/0 inside the
    issued band at each step, NaN unscored).
    """
    aci = HorizonConformal(horizon, coverage, gamma, window)
    if seed is not None:
        bands, outcomes = seed
        for k, step in enumerate(aci.by_step):
            step.seed(bands[:, :, k], outcomes[:, k])
    out = np.array(pred, dtype=np.float64)
    n = len(at)
    hits = np.full((n, horizon), np.nan)
    m = pred.shape[1] // 2
    learned = [0] * horizon  # per step, how many origins (in time order) it has learned from
    for i, origin in enumerate(at):
        for k in range(horizon):
            while learned[k] < i and at[learned[k]] + k + 1 <= origin:
                j = learned[k]
                if np.isfinite(truth[j, k]):
                    # the band issued at origin j is out[j]'s lowest and highest quantile, calibrated already
                    aci.update(k, (pred[j, 0, k], pred[j, m, k], pred[j, -1, k]), (out[j, 0, k], out[j, -1, k]),
                               float(truth[j, k]))
                learned[k] += 1
        lo, hi = aci.band(pred[i, 0], pred[i, m], pred[i, -1])
        out[i, 0], out[i, -1] = lo, hi
        known = np.isfinite(truth[i])
        hits[i, known] = ((lo[known] <= truth[i, known]) & (truth[i, known] <= hi[known])).astype(np.float64)
    return out, hits
