"""The pods' own clock: how long the device takes for a unit of work, learned online.

Latency alone cannot tell a change of the pods from a change of load near the
knee: a batching server's p99 at 90-98% of its capacity is several times what
any smooth curve predicts, and a burst inside a step queues the same way a
slowdown does. The device's time per unit of work can tell them apart:
- an encoder's batch of `n` items takes `T(n) = a + c n` ms (the shared
  profiles' form, `base_ms + per_item_ms x batch`); a decoder's prefill of a
  prompt of `n` tokens is, to first order, the same line;
- queueing moves the operating point (`n` grows with the load), never the
  line: at the knee the pods run fuller batches at their usual speed;
- pods that changed (a slowdown, a fragmented KV cache, a slower rollout) take
  longer for the same unit: `T_observed / T(n)` rises by their factor.

So `ratio(n, T)` is a second, load-independent witness. The triggers ask it
when latency says "worse than the model": a ratio within the clock's noise
means the pods run at their usual speed, and what latency shows is load
(answered by scaling and B's reserve); a ratio beyond it confirms a change of
the pods. Where the pods report no device time, nothing is asked (the
triggers judge on latency alone, as before the clock).

Prometheus gives both numbers for a pool: the model server's
`forescale_device_busy_seconds` over its `forescale_batch_size` count (ms per
batch) and sum over count (items per batch); a vLLM pod's
`vllm:request_prefill_time_seconds` over its prompt tokens.

Learning is a two-state Kalman filter on `(a, c)` (linear in both, so exact),
with a relative noise learned from its residuals, as the latency model:
- the first sample starts the line through it, both terms believed to 100%;
- a sample beyond `gate_sigmas` standard deviations of the prediction is not
  learned (a pod in trouble); each one widens the covariance a little, so a
  change that persists (a new model version) is learned after about 100
  samples (25 minutes at 15 s steps), and an incident is not;
- the pool in an incident learns nothing (the caller's rule);
- the clock speaks after `MIN_SAMPLES` learned samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

#: samples before the clock is asked: a line needs two points, its noise a few more
#: (one minute at the default 15 s step)
MIN_SAMPLES = 4
#: the relative noise assumed before any residual is seen, and the floor under the learned
#: one: a mean over hundreds of batches is steady to a few percent, and a floor of 5% keeps a
#: clock that happens to fit exactly from calling a 10% wobble a change of the pods
PRIOR_SIGMA = 0.10
MIN_SIGMA = 0.05
#: the residual variance is an average over about 20 samples (five minutes of 15 s steps)
RESID_WEIGHT = 0.05
#: each gated sample widens the covariance by 10%: a change 2.5x the clock's usual time passes
#: the gate after about 100 samples in a row (25 minutes at 15 s steps, measured), longer than the playbook
#: takes to relieve an incident, so that the clock still tells a slowdown the whole incident
#: through, and soon enough that a rollout of slower pods becomes the new usual within the half hour.
#: (Doubling, as the latency model does, learned an injected 2.5x slowdown as usual within 75 s.)
OUTLIER_WIDENING = 1.1
#: each term's standard deviation is capped at the time of a unit of one (no belief weaker than the first guess)
MAX_RELATIVE_SIGMA = 1.0


@dataclass(frozen=True)
class PodClock:
    """`T(n) = a + c n`: device ms for a unit of work of size `n`, at the reference precision."""

    #: a (ms), c (ms per item or token)
    x: tuple[float, float] = (0.0, 0.0)
    #: covariance, upper triangle: p_aa, p_ac, p_cc
    p: tuple[float, float, float] = (0.0, 0.0, 0.0)
    samples: int = 0
    outliers: int = 0
    #: the variance of log(observed / predicted) on learned samples
    resid_var: float = PRIOR_SIGMA ** 2

    @property
    def ready(self) -> bool:
        """Enough samples to be asked."""
        return self.samples >= MIN_SAMPLES

    @property
    def sigma(self) -> float:
        return max(math.sqrt(self.resid_var), MIN_SIGMA)

    def predict_ms(self, size: float) -> float:
        """Device ms for a unit of `size` (0 before the first sample)."""
        return max(self.x[0] + self.x[1] * size, 0.0)

    def ratio(self, size: float | None, ms: float | None, speed: float = 1.0) -> float | None:
        """Observed over predicted device time at this unit size (None before the clock is ready,
        or without a measurement this tick)."""
        if not self.ready or not _usable(size, ms):
            return None
        expected = self.predict_ms(size)
        return ms * speed / expected if expected > 0 else None

    def line(self, gate_sigmas: float) -> float:
        """The ratio past which the device is slower than its usual, beyond the clock's noise."""
        return math.exp(gate_sigmas * self.sigma)

    def learn(self, size: float, ms: float, speed: float, gate_sigmas: float, drift: float) -> "PodClock":
        """Fold one sample in (`ms` measured at a precision of relative `speed`)."""
        if not _usable(size, ms):
            return self
        ref = ms * speed
        if self.samples == 0 and self.outliers == 0:
            a, c = ref / 2.0, ref / (2.0 * size)
            return replace(self, x=(a, c), p=(a * a, 0.0, c * c), samples=1)
        grown = self._widened((1.0 + drift) ** 2)
        predicted = grown.predict_ms(size)
        h = (1.0, size)
        spread = grown._spread(h)
        noise = self.sigma ** 2 * predicted * predicted
        s = spread + noise
        innovation = ref - predicted
        if self.ready and innovation * innovation > gate_sigmas * gate_sigmas * s:
            return replace(self._widened(OUTLIER_WIDENING), outliers=self.outliers + 1)
        paa, pac, pcc = grown.p
        ph = (paa + pac * size, pac + pcc * size)
        k = (ph[0] / s, ph[1] / s)
        a = max(grown.x[0] + k[0] * innovation, 0.0)
        c = max(grown.x[1] + k[1] * innovation, 0.0)
        p = (max(paa - k[0] * ph[0], 1e-12), pac - k[0] * ph[1], max(pcc - k[1] * ph[1], 1e-18))
        # The noise is what the residual holds beyond the line's own uncertainty (as the latency model).
        resid2 = max(math.log(ref / predicted) ** 2 - spread / (predicted * predicted), 0.0) if predicted > 0 else 0.0
        var = self.resid_var + RESID_WEIGHT * (min(resid2, 1.0) - self.resid_var)
        return replace(self, x=(a, c), p=p, samples=self.samples + 1, resid_var=var)

    def _spread(self, h: tuple[float, float]) -> float:
        paa, pac, pcc = self.p
        return h[0] * h[0] * paa + 2.0 * h[0] * h[1] * pac + h[1] * h[1] * pcc

    def _widened(self, factor: float) -> "PodClock":
        """The covariance times `factor`, each term's deviation capped at the time of a unit of one,
        `a + c` (a term clamped at 0 still has a scale: without one, drift grew its variance without end)."""
        paa, pac, pcc = (v * factor for v in self.p)
        scale = MAX_RELATIVE_SIGMA * (self.x[0] + self.x[1])
        da = min(1.0, scale / math.sqrt(paa)) if paa > 0 and scale > 0 else 1.0
        dc = min(1.0, scale / math.sqrt(pcc)) if pcc > 0 and scale > 0 else 1.0
        return replace(self, p=(paa * da * da, pac * da * dc, pcc * dc * dc))

    def describe(self) -> str:
        """`12.0 ms + 0.80 ms per item, 57 samples`."""
        return f"{self.x[0]:.1f} ms + {self.x[1]:.3g} ms per item, {self.samples} samples"


def _usable(size: float | None, ms: float | None) -> bool:
    return (size is not None and ms is not None and math.isfinite(size) and math.isfinite(ms)
            and size > 0 and ms > 0)
