"""Rule 1: a latency model per pool, learned online.

The SLO-quantile latency of a pod carrying `rate` requests per second is
modelled as a single queue:

    L(rate) = L0 + W * rho / (1 - rho),  rho = rate / mu      (infinite at or past mu)

- `L0`, the latency of an unloaded pod, `W` the scale of its queueing wait,
  and `mu`, the rate at which its queue saturates, describe healthy pods at
  the reference precision (fp16). Another
  precision scales the service time by the engine's precision speeds: at int8,
  L0 / speed and mu * speed.
- `h >= 1`, the pods' health, scales the service time: a pod 2.5x slower has
  h = 2.5. A change of load moves the operating point along the curve; a
  change of the pods (a slowdown, a fragmented cache) moves the curve, i.e. h.

Why this shape: it is the M/G/1 (Pollaczek-Khinchine, Kingman) form: a
service floor plus a queueing wait that grows as rho / (1 - rho). With W = L0
it is the M/M/1 sojourn-time quantile, the queueing model llm-d's workload
variant autoscaler uses; W < L0 is a floor with a late knee (batched GPU
serving, an LLM's prefill). The capacity at the SLO has a closed form, and
its parameters are what an SRE reads off a load test (the unloaded latency,
the knee).

Learning. Rearranged, the curve is linear in three unknowns:
`L = x0 + x1 * rate + x2 * rate * L` (x0 = L0, x1 = (W - L0) / mu, x2 = 1 / mu).
A three-state Kalman filter (recursive least squares with process noise, as
in llm-d's analyzer) fits x to each sample:
- the prior is a pseudo-sample at the load-tested point (capacity C0 at the
  target T: the curve goes through (C0, T)), plus a loose guess of L0, so
  that, before the pods have shown anything, the capacity is the prior's;
- a sample's noise is the service's own, learned from the residuals of the
  samples before it (`resid_var`);
- a sample whose innovation is beyond `gate_sigmas` standard deviations is an
  outlier: it is not learned (a transient queue, a slow pod);
- one update moves L0 or mu by at most `max_step` of their value;
- a tick at which the ready count moved since the last tick is not a sample:
  its rate window mixes two fleets;
- a pool in an incident learns only h, never the healthy curve.
The health h is solved from each sample (a quadratic: service times scale
by h, so x0 by h, x1 by h^2, x2 by h) and clamped to [1, max_slowdown]; it is smoothed by
`health_smoothing` per tick.

Everything here is pure and small: the state is a dozen floats per pool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

#: the latency at zero load assumed before it is measured, as a share of the
#: SLO target. Serving stacks are sized so that an unloaded request takes a
#: fraction of the SLO; a quarter is a middle guess between an encoder
#: (~1-5% of its SLO) and an LLM's time to first token (~30-50%). It is only
#: a starting point: the loose prior lets the first samples replace it, and
#: the capacity at the SLO is held by the load-tested point meanwhile.
PRIOR_L0_SHARE = 0.25
#: standard deviations: the prior pseudo-sample (the load test) is believed to
#: 10% of the target; one 15 s sample's quantile to 20% of itself (a p99 over
#: a few hundred requests); L0's guess to 100% of itself (a guess).
PRIOR_POINT_SIGMA = 0.10
SAMPLE_SIGMA = 0.20
PRIOR_L0_SIGMA = 1.0
#: the residual variance is an average over about 20 samples (5 minutes of 15 s
#: ticks, the long burn window), floored at 5% noise and capped at a factor e
RESID_WEIGHT = 0.05
MIN_RESID_VAR = 0.05 ** 2
MAX_RESID_VAR = 1.0
#: how much one gated sample widens the model's covariance: doubling lets a run of
#: ~5 contradicting samples (about a minute) through, while a lone transient moves nothing
OUTLIER_WIDENING = 2.0
#: the largest standard deviation of L0 or 1/mu, relative to its value: the prior's
#: own uncertainty about L0 (a guess, PRIOR_L0_SIGMA). Growth by drift or by gated
#: samples stops there: no amount of waiting makes the model less sure than a guess.
MAX_RELATIVE_SIGMA = PRIOR_L0_SIGMA
#: whether W is learned apart from L0. The three-parameter fit diverged on
#: noisy encoder samples in our checks (x0 and 1/mu to 0, x1 unbounded) within a
#: few hundred samples; until it is made stable, W = L0 (the M/M/1 curve).
X1_LEARNED = False
#: where even an unloaded pod misses the target (a slow enough health, or a precision), no count of
#: pods meets it and `capacity` is 0; pods still shorten the queue. Size them to run where the curve's
#: latency is this many times its floor: 2 is M/M/1 at 50% utilisation, the wait as long as the service
#: itself, past which each pod more buys less than the one before. (Sizing at capacity 0 asked for
#: maxReplicas: on the Mooncake replay a cut-back at a 2.5x slow device went to 100 pods for nothing.)
UNREACHABLE_TARGET_FACTOR = 2.0


@dataclass(frozen=True)
class ModelParams:
    """The learning rates and bounds of the latency model (EngineParams holds them)."""

    gate_sigmas: float = 3.0
    max_step: float = 0.10
    max_slowdown: float = 6.0
    health_smoothing: float = 0.5
    #: relative process noise per sample: lets a curve that drifts (a new
    #: model version, a driver update) be followed over tens of samples
    drift: float = 0.001


@dataclass(frozen=True)
class PoolModel:
    """The learned latency curve of one pool (healthy, at the reference precision).

    `L = (x0 + x1 * rate) / (1 - x2 * rate)`, the M/G/1 form `L0 + W * rho / (1 - rho)`
    rearranged: x0 = L0 (ms), x1 = (W - L0) / mu, x2 = 1 / mu. With W = L0 (x1 = 0) it
    is the M/M/1 curve; W < L0 is a service floor with a late knee (batched GPU serving,
    an LLM's prefill), which the data can show.
    """

    #: x0 = latency of an unloaded pod at fp16 (ms), x1 (ms per rps), x2 = 1 / mu (s)
    x: tuple[float, float, float]
    #: Kalman covariance of x, upper triangle row by row: p00 p01 p02 p11 p12 p22
    p: tuple[float, float, float, float, float, float]
    #: the pods' health (service-time factor, 1 = healthy)
    health: float = 1.0
    #: samples learned, and samples gated out as outliers
    samples: int = 0
    outliers: int = 0
    #: the capacity at the SLO the prior gave (rps per pod at fp16), for reports
    prior_rps: float = 0.0
    #: the variance of log(observed / predicted) on learned samples: how noisy this
    #: service's quantile is (a p99 over 50 LLM requests of heavy-tailed prompt
    #: lengths is far noisier than one over 5,000 encoder requests)
    resid_var: float = SAMPLE_SIGMA ** 2
    #: smallest and largest per-pod rate (at fp16) learned from, for "constant load" reasons
    rate_lo: float = math.inf
    rate_hi: float = 0.0
    #: the highest per-pod rate (at fp16) the healthy pods served with the quantile at or under
    #: the target: with the prior, the evidence that bounds the capacity (see `capacity`)
    proven_rps: float = 0.0
    #: the SLO target the prior was taken at (ms): where the evidence bound is measured
    target_ms: float = 0.0

    @property
    def l0_ms(self) -> float:
        return self.x[0]

    @property
    def mu_rps(self) -> float:
        return 1.0 / self.x[2]

    @property
    def evidence_rps(self) -> float:
        """What bounds the capacity from above: the load-tested point or the highest rate per pod the
        pods served within the target, whichever is higher (at the reference, healthy, fp16)."""
        return max(self.prior_rps, self.proven_rps)

    @property
    def sigma(self) -> float:
        """The standard deviation of log(observed / predicted) on healthy samples."""
        return math.sqrt(self.resid_var)

    @classmethod
    def prior(cls, capacity_rps: float, target_ms: float) -> "PoolModel":
        """The curve through the load-tested point (capacity_rps at target_ms), L0 loosely guessed."""
        l0 = PRIOR_L0_SHARE * target_ms
        x2 = (1.0 - l0 / target_ms) / capacity_rps
        s0, s2 = PRIOR_L0_SIGMA * l0, PRIOR_L0_SIGMA * x2
        s1 = 0.0  # x1 held at 0 (W = L0, M/M/1): see X1_LEARNED
        model = cls(x=(l0, 0.0, x2), p=(s0 * s0, 0.0, 0.0, s1 * s1, 0.0, s2 * s2), prior_rps=capacity_rps,
                    target_ms=target_ms)
        # The load-tested point as a pseudo-sample: L = T at rate C.
        return model._kalman((1.0, capacity_rps, capacity_rps * target_ms), target_ms,
                             (PRIOR_POINT_SIGMA * target_ms) ** 2)[0]

    # -- the curve ------------------------------------------------------------

    def _scaled(self, speed: float, health: float | None) -> tuple[float, float, float]:
        """x at a precision of relative `speed` and a health h (service time h / speed)."""
        f = (self.health if health is None else health) / speed
        return self.x[0] * f, self.x[1] * f * f, self.x[2] * f

    def latency_ms(self, rate: float, speed: float = 1.0, health: float | None = None) -> float:
        """Predicted SLO-quantile latency of one pod at `rate` rps, at a precision of `speed`: the
        fitted curve stretched along the rate axis by the evidence bound (`capacity`), so that the
        prediction reaches the target where the capacity says it does."""
        x0, x1, x2 = self._scaled(speed, health)
        rate = max(rate, 0.0) / self._evidence_share()
        if x2 * rate >= 1.0:
            return math.inf
        return max(x0 + x1 * rate, 0.0) / (1.0 - x2 * rate)

    def capacity(self, target_ms: float, speed: float = 1.0, health: float | None = None) -> float:
        """Per-pod rate at which the predicted latency reaches the target (0 if unloaded pods miss it),
        never more than the evidence shows: the prior's load-tested point or the highest rate the
        pods have served within the target (`proven_rps`), whichever is higher.

        Why the bound: the curve is fitted where the pods run, and they run below their capacity.
        Past the data it is an extrapolation, and for a batching server it is optimistic: an LLM's
        latency stays flat and then rises late and steeply, so an M/M/1 curve fitted on the flat
        part puts the knee too far out. On the Azure conversation replay at 10x, the fit said 3.9
        rps per pod where the pods saturate at 2.7; A was sized for 3.9, and the latency of a load
        the model called 76% of capacity read as a broken pod (19 false returns to Emergency). The
        pods can still prove more than the prior: that moves `proven_rps`."""
        # The evidence is at the reference (healthy, fp16); another precision or health moves
        # the capacity as the curve says, scaled down by the same share the evidence bounds it,
        # and a faster one by no more than its speed: the speed is a throughput ratio.
        h = self.health if health is None else health
        share = self._evidence_share()
        curve = self._curve_capacity(target_ms, speed, h) * share
        if speed <= h:
            return curve
        return min(curve, self._curve_capacity(target_ms, 1.0, 1.0) * share * speed / h)

    def floor_ms(self, speed: float = 1.0, health: float | None = None) -> float:
        """The latency of an unloaded pod at this precision and health."""
        return self._scaled(speed, health)[0]

    def sizing_target(self, target_ms: float, speed: float = 1.0, health: float | None = None) -> float:
        """The latency to size for: the target, or where an unloaded pod already misses it,
        `UNREACHABLE_TARGET_FACTOR` x the unloaded latency (see there)."""
        floor = self.floor_ms(speed, health)
        return target_ms if floor < target_ms else UNREACHABLE_TARGET_FACTOR * floor

    def _evidence_share(self) -> float:
        """min(1, evidence / the curve's own capacity at the target the prior was taken at)."""
        evidence = self.evidence_rps
        reference = self._curve_capacity(self.target_ms, 1.0, 1.0) if self.target_ms > 0 else 0.0
        if evidence <= 0 or not 0 < reference < math.inf:
            return 1.0
        return min(1.0, evidence / reference)

    def _curve_capacity(self, target_ms: float, speed: float, health: float) -> float:
        x0, x1, x2 = self._scaled(speed, health)
        if x0 >= target_ms:
            return 0.0
        denom = x1 + x2 * target_ms
        return (target_ms - x0) / denom if denom > 0 else math.inf

    def solve_health(self, rate: float, latency_ms: float, speed: float = 1.0) -> float:
        """The h that puts this sample on the curve (the observed / expected service time):
        the positive root of x1*r*h^2 + (x0 + x2*r*L)*h - L = 0, at the reference precision."""
        r, lat = rate / speed, latency_ms * speed
        a, b = self.x[1] * r, self.x[0] + self.x[2] * r * lat
        if abs(a) < 1e-12:
            return lat / b if b > 0 else 1.0
        disc = b * b + 4.0 * a * lat
        if disc < 0:
            return 1.0
        root = (-b + math.sqrt(disc)) / (2.0 * a)
        return root if root > 0 else 1.0

    # -- learning -------------------------------------------------------------

    def learn(self, rate: float, latency_ms: float, speed: float, mp: ModelParams,
              target_ms: float) -> tuple["PoolModel", bool]:
        """Fold one healthy sample in; returns (model, learned) where learned is False for an outlier.
        A learned sample within `target_ms` also raises `proven_rps`.

        An extended Kalman step in log space: the noise of a quantile is relative
        (a p99 of 200 ms +- 20%), and using the prediction, not the observation, in
        the Jacobian keeps the sample's own noise out of its regressor (the linear
        form `L = x0 + x1 r + x2 r L` would carry it there and bias 1/mu upwards).
        A sample past the predicted knee (the model says saturated, the pods say not)
        takes the linear form: it shows mu is higher, and the log curve has no slope there.
        """
        rate_ref, lat_ref = rate / speed, latency_ms * speed
        grown = self._widened((1 + mp.drift) ** 2)
        x0, x1, x2 = self.x
        num, den = x0 + x1 * rate_ref, 1.0 - x2 * rate_ref
        if num > 0 and den > 0.02:
            predicted = num / den
            h = (1.0 / num, rate_ref / num if X1_LEARNED else 0.0, rate_ref / den)
            model, ok = grown._kalman(h, math.log(lat_ref), self.resid_var, mp,
                                      predicted=math.log(predicted))
            # The service's noise is what the innovation holds beyond the model's own uncertainty
            # (E[innovation^2] = h P h' + noise): early on the prior's misfit is the model's error,
            # and counting it as noise widened the diagnosis's band by half within two samples.
            resid2 = max(math.log(lat_ref / predicted) ** 2 - grown._spread(h), 0.0)
        else:
            model, ok = grown._kalman((1.0, rate_ref if X1_LEARNED else 0.0, rate_ref * lat_ref), lat_ref,
                                      self.resid_var * lat_ref ** 2, mp)
            resid2 = 0.0
        if not ok:
            # Gated once; but a run of outliers means the model, not the pods, is wrong (an
            # annotation that contradicts them): each widens its uncertainty until they pass.
            return replace(self._widened(OUTLIER_WIDENING), outliers=self.outliers + 1), False
        var = self.resid_var + RESID_WEIGHT * (min(resid2, MAX_RESID_VAR) - self.resid_var)
        proven = max(self.proven_rps, rate_ref) if latency_ms <= target_ms else self.proven_rps
        return replace(model, samples=self.samples + 1, rate_lo=min(self.rate_lo, rate_ref),
                       rate_hi=max(self.rate_hi, rate_ref), resid_var=max(var, MIN_RESID_VAR),
                       proven_rps=proven), True

    def _matrix(self) -> tuple[tuple[float, float, float], ...]:
        """The covariance as a full symmetric 3x3 matrix (it is stored as its upper triangle)."""
        p00, p01, p02, p11, p12, p22 = self.p
        return ((p00, p01, p02), (p01, p11, p12), (p02, p12, p22))

    def _spread(self, h: tuple[float, float, float]) -> float:
        """h P h': the variance of the prediction along observation row h."""
        P = self._matrix()
        return sum(h[i] * P[i][j] * h[j] for i in range(3) for j in range(3))

    def _widened(self, factor: float) -> "PoolModel":
        """The covariance times `factor`, each parameter's standard deviation capped at
        `MAX_RELATIVE_SIGMA` of its value. Without the cap, a pool held at one operating
        point (the load never moves) learns nothing along the curve's other direction,
        and drift grew that variance without end: e^4 in 2,000 ticks, then overflow.
        Scaling rows and columns together (D P D) keeps the matrix a covariance."""
        p00, p01, p02, p11, p12, p22 = (v * factor for v in self.p)
        d0 = min(1.0, MAX_RELATIVE_SIGMA * self.x[0] / math.sqrt(p00)) if p00 > 0 else 1.0
        d2 = min(1.0, MAX_RELATIVE_SIGMA * self.x[2] / math.sqrt(p22)) if p22 > 0 else 1.0
        if not X1_LEARNED:
            p11 = self.p[3]  # x1 is held at 0: its variance stays what the prior set
        return replace(self, p=(p00 * d0 * d0, p01 * d0, p02 * d0 * d2, p11, p12 * d2, p22 * d2 * d2))

    def track_health(self, rate: float, latency_ms: float, speed: float, mp: ModelParams) -> "PoolModel":
        """Move h towards what this sample shows (bounded to [1, max_slowdown])."""
        seen = min(mp.max_slowdown, max(1.0, self.solve_health(rate, latency_ms, speed)))
        return replace(self, health=self.health + mp.health_smoothing * (seen - self.health))

    def _kalman(self, h: tuple[float, float, float], observed: float, noise: float,
                mp: ModelParams | None = None, predicted: float | None = None) -> tuple["PoolModel", bool]:
        """One Kalman update of x with observation row `h` (y = h . x + noise; or, given
        `predicted`, the linearised y ~ predicted + h . (x' - x))."""
        P = self._matrix()
        ph = tuple(sum(P[i][j] * h[j] for j in range(3)) for i in range(3))  # P h^T
        s = sum(h[i] * ph[i] for i in range(3)) + noise
        innovation = observed - (predicted if predicted is not None else sum(h[i] * self.x[i] for i in range(3)))
        if mp is not None and innovation * innovation > (mp.gate_sigmas ** 2) * s:
            return self, False
        k = tuple(v / s for v in ph)
        step = [k[i] * innovation for i in range(3)]
        if mp is not None:
            # Bounded steps: L0 and mu move by at most max_step of their value per sample, the whole
            # step scaled down together so that it keeps the filter's direction. Clamping each on its
            # own cut L0's step and left 1/mu's (the prior's point makes them anti-correlated): at one
            # operating point, where the curve is a ridge of equally good fits, samples walked the fit
            # down the ridge, L0 33 -> 0.7 ms and mu 825 -> 296 rps on ServeGen m-mid at 10x while the
            # pods held 250-400 rps per pod at a p99 of 5 ms (docs/frontier.md, "The ridge").
            scale = _step_scale(self.x, step, mp.max_step)
            step = [v * scale for v in step]
            # x1's bound is set by the same share of x0 / mu's scale (it is x0-like per rps).
            span = mp.max_step * (self.x[0] * self.x[2] + abs(self.x[1]))
            step[1] = min(max(step[1], -span), span)
        x = [self.x[i] + step[i] for i in range(3)]
        # Keep the curve physical: a positive unloaded latency and saturation rate.
        x[0] = max(x[0], 1e-9)
        x[2] = max(x[2], 1e-9)
        new_p = [[P[i][j] - k[i] * ph[j] for j in range(3)] for i in range(3)]
        flat = (max(new_p[0][0], 1e-12), new_p[0][1], new_p[0][2], max(new_p[1][1], 1e-18), new_p[1][2],
                max(new_p[2][2], 1e-18))
        return replace(self, x=(x[0], x[1], x[2]), p=flat), True

    # -- reporting ------------------------------------------------------------

    def describe(self, target_ms: float) -> str:
        """`L0 12 ms, mu 48.1 rps, capacity 36.2 rps at 200 ms (prior 40.0), 57 samples, h 1.00`."""
        return (f"L0 {self.l0_ms:.0f} ms, mu {self.mu_rps:.1f} rps, capacity {self.capacity(target_ms, health=1.0):.1f} rps "
                f"at {target_ms:.0f} ms (prior {self.prior_rps:.1f}), {self.samples} samples, h {self.health:.2f}")


def _step_scale(x: tuple[float, float, float], step: list[float], bound: float) -> float:
    """The largest factor <= 1 that keeps L0's and 1/mu's steps within `bound` of their values."""
    scale = 1.0
    for i in (0, 2):
        room = bound * abs(x[i])
        if abs(step[i]) > room:
            scale = min(scale, room / abs(step[i]))
    return scale
