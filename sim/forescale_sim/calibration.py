"""The per-pod capacity at the SLO that every policy's target is taken from.

- Encoder pods: the highest per-pod rate whose closed-form quantile latency
  (forescale_profiles.service_time.encoder_latency_ms) stays under the SLO, by bisection.
- LLM pods: no closed form fits continuous batching, so the capacity is
  found by simulation: one `LlmPod` fed Poisson arrivals whose token counts
  are drawn from the trace itself, bisecting on the rate until the SLO
  quantile of TTFT (rejections counted as over) just meets the SLO.

Peers size pods at `utilization` (70%: Knative's documented default, and the
value used for HPA and KEDA) of this capacity: that is `target_per_pod`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forescale_profiles.service_time import DecoderProfile, EncoderProfile, encoder_latency_ms

from .errors import SimError
from .llm_pod import LlmPod

PEER_UTILIZATION = 0.70
#: `--peer-utilization` above 1 sizes peers past the SLO's capacity; 1.5 is the
#: most the frontier sweep has any use for
MAX_PEER_UTILIZATION = 1.5


def check_peer_utilization(u: float) -> float:
    """U itself, or SimError naming the flag: 0 < U <= 1.5 and finite."""
    if not isinstance(u, (int, float)) or isinstance(u, bool) or not (0.0 < u <= MAX_PEER_UTILIZATION):
        raise SimError(f"--peer-utilization must be a number in (0, {MAX_PEER_UTILIZATION:g}], got {u!r}")
    return float(u)


def encoder_capacity(profile: EncoderProfile, slo_ms: float, precision: str, quantile: float, slowdown: float = 1.0) -> float:
    """Highest per-pod rate (req/s) whose closed-form quantile latency meets the SLO."""
    if profile.batch_ms(precision, 1, slowdown) * 1.5 >= slo_ms:
        return 0.0
    lo, hi = 0.0, profile.max_rps(precision, slowdown)
    for _ in range(50):
        mid = (lo + hi) / 2
        if encoder_latency_ms(mid, profile, precision, quantile, slowdown) <= slo_ms:
            lo = mid
        else:
            hi = mid
    return lo


def llm_capacity(profile: DecoderProfile, slo_ms: float, precision: str, quantile: float,
                 input_tokens: np.ndarray, output_tokens: np.ndarray, slowdown: float = 1.0,
                 requests: int = 4000, seed: int = 0) -> float:
    """Highest Poisson rate (req/s) one LLM pod serves with its TTFT quantile under the SLO."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, input_tokens.size, requests)
    ins, outs = input_tokens[picks], output_tokens[picks]
    gaps = rng.exponential(1.0, requests)
    slo_s = slo_ms / 1000.0

    def meets(rate: float) -> bool:
        pod = LlmPod(profile)
        times = np.cumsum(gaps / rate)
        lat = [pod.serve(i, t, a, b, precision, slowdown) for i, (t, a, b) in enumerate(zip(times, ins, outs))]
        # skip the warm-up tenth, where the pod starts empty
        tail = np.array([np.inf if x is None else x for x in lat[requests // 10:]])
        return float(np.mean(tail > slo_s)) <= 1.0 - quantile

    lo, hi = 0.0, 1.0
    while meets(hi) and hi < 1e4:
        lo, hi = hi, hi * 2
    for _ in range(14):
        mid = (lo + hi) / 2
        if meets(mid):
            lo = mid
        else:
            hi = mid
    return lo


@dataclass
class Calibration:
    """Capacity at the SLO per (precision, slowdown), computed once and cached."""

    profile: EncoderProfile | DecoderProfile
    slo_ms: float
    quantile: float
    input_tokens: np.ndarray | None = None
    output_tokens: np.ndarray | None = None
    utilization: float = PEER_UTILIZATION
    _cache: dict = field(default_factory=dict)

    def capacity(self, precision: str = "fp16", slowdown: float = 1.0) -> float:
        """Per-pod requests per second at the SLO."""
        key = (precision, round(slowdown, 6))
        if key not in self._cache:
            if isinstance(self.profile, DecoderProfile):
                self._cache[key] = llm_capacity(self.profile, self.slo_ms, precision, self.quantile,
                                                self.input_tokens, self.output_tokens, slowdown)
            else:
                self._cache[key] = encoder_capacity(self.profile, self.slo_ms, precision, self.quantile, slowdown)
        return self._cache[key]

    def target_per_pod(self, precision: str = "fp16") -> float:
        """The peers' per-pod target: `utilization` x capacity at the SLO."""
        return self.utilization * self.capacity(precision)
