"""Calibrated service-time models for GPU serving, shared by the emulated-GPU
server (`forescale serve --emulate-gpu`), the replay simulator and the
derivation of latency for the packaged forecaster's training data.

Pure Python and numpy: importing this module never loads torch. The
precision factors come from `forescale_profiles.precision`.

Every coefficient below comes from a published benchmark and names it in the
profile's `source`.
Where a number is an assumption rather than a published measurement, the
profile's `assumptions` say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .precision import FACTOR_ASSUMPTIONS, PRECISIONS, SERVICE_TIME_FACTOR


@dataclass(frozen=True)
class EncoderProfile:
    """Batch service time of an encoder pod: `base_ms + per_item_ms * b` at fp16,
    scaled per precision. One batch runs at a time on the GPU."""

    name: str
    source: str
    base_ms: float
    per_item_ms: float
    max_batch: int
    #: service time relative to fp16 (int8 < 1 is faster)
    precision_factor: Mapping[str, float]
    assumptions: tuple[str, ...] = ()

    def batch_ms(self, precision: str, batch_size: int, slowdown: float = 1.0) -> float:
        """Service time in ms of one batch of `batch_size` items."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        factor = self.factor(precision)
        return (self.base_ms + self.per_item_ms * batch_size) * factor * slowdown

    def factor(self, precision: str) -> float:
        try:
            return self.precision_factor[precision]
        except KeyError:
            raise ValueError(f"unknown precision {precision!r}; expected one of {PRECISIONS}") from None

    def max_rps(self, precision: str, slowdown: float = 1.0) -> float:
        """Saturation throughput of one pod (full batches back to back)."""
        return self.max_batch / (self.batch_ms(precision, self.max_batch, slowdown) / 1000.0)


@dataclass(frozen=True)
class DecoderProfile:
    """Service time of a decoder (LLM) pod with continuous batching.

    prefill_ms(L) = a + b*L + c*L^2 for a prompt of L tokens;
    decode_iter_ms(batch, ctx) = a + b*ctx_tokens + c*batch, one token for
    every running sequence per iteration (DistServe's fit).
    """

    name: str
    source: str
    prefill: tuple[float, float, float]
    decode: tuple[float, float, float]
    max_batch: int
    max_context_tokens: int
    precision_factor: Mapping[str, float]
    assumptions: tuple[str, ...] = ()

    def prefill_ms(self, precision: str, prompt_tokens: float, slowdown: float = 1.0) -> float:
        a, b, c = self.prefill
        return (a + b * prompt_tokens + c * prompt_tokens**2) * self._factor(precision) * slowdown

    def decode_iter_ms(self, precision: str, batch: int, context_tokens: float, slowdown: float = 1.0) -> float:
        a, b, c = self.decode
        return (a + b * context_tokens + c * batch) * self._factor(precision) * slowdown

    def _factor(self, precision: str) -> float:
        try:
            return self.precision_factor[precision]
        except KeyError:
            raise ValueError(f"unknown precision {precision!r}; expected one of {PRECISIONS}") from None


#: where the encoder rows come from, in words a user can follow (printed by `forescale replay`)
_TENSORRT_BERT = "NVIDIA's published TensorRT BERT benchmark (github.com/NVIDIA/TensorRT, demo/BERT/README.md)"

A100_BERT_BASE = EncoderProfile(
    name="a100-bert-base",
    source=f"{_TENSORRT_BERT}, A100-40GB FP16 seq 128; linear fit 0.45 + 0.123*b ms",
    base_ms=0.45,
    per_item_ms=0.123,
    max_batch=128,
    precision_factor=SERVICE_TIME_FACTOR,
    assumptions=FACTOR_ASSUMPTIONS,
)

T4_BERT_BASE = EncoderProfile(
    name="t4-bert-base",
    source=f"{_TENSORRT_BERT}, T4 FP16 seq 128; linear fit 0.9 + 1.06*b ms",
    base_ms=0.9,
    per_item_ms=1.06,
    max_batch=16,
    precision_factor=SERVICE_TIME_FACTOR,
    assumptions=FACTOR_ASSUMPTIONS,
)

A100_OPT13B = DecoderProfile(
    name="a100-opt-13b",
    source="DistServe's simulator (github.com/LLMServe/DistServe, simdistserve time_estimator), A100-80GB OPT-13B TP1 (bs < 95)",
    prefill=(16.46, 0.0926, 6.47e-6),
    decode=(19.93, 6.27e-4, 0.0385),
    max_batch=64,
    max_context_tokens=2048,
    precision_factor=SERVICE_TIME_FACTOR,
    assumptions=FACTOR_ASSUMPTIONS + ("int8 factor transferred from the encoder rows to the decoder (assumption)",),
)

# The demo and the end-to-end tests run several emulated pods, a load
# generator, Prometheus and the operator on two CPU cores, so a pod must
# saturate at tens of requests per second, not thousands. This profile is the
# A100 BERT-base fit scaled by 40x in time: a heavy encoder (e.g. a large
# cross-encoder with long inputs) on a small GPU. Its shape (fixed cost plus a
# per-item cost, int8 at 0.6x) is the published one; its scale is chosen.
DEMO_ENCODER = EncoderProfile(
    name="demo",
    source=(f"the A100 BERT-base FP16 fit of {_TENSORRT_BERT} (0.45 + 0.123*b ms) scaled x40 in time "
            "so that a pod saturates near 180 rps (fp16) on 2 CPU cores"),
    base_ms=0.45 * 40,
    per_item_ms=0.123 * 40,
    max_batch=32,
    precision_factor=SERVICE_TIME_FACTOR,
    assumptions=FACTOR_ASSUMPTIONS + ("time scale x40 chosen for the 2-core demo, not measured",),
)

# `forescale demo` runs a handful of pods on two cores at 20-70 requests per
# second in all, so that scaling, the incident and the cut-back are visible, a
# pod must saturate near 40 rps. Same published shape (A100 BERT-base fit,
# int8 at 0.6x), time scaled x150 and batches capped at 16: a heavy encoder on
# a small GPU. Its scale is chosen for the demo, not measured.
DEMO_HEAVY = EncoderProfile(
    name="demo-heavy",
    source=(f"the A100 BERT-base FP16 fit of {_TENSORRT_BERT} (0.45 + 0.123*b ms) scaled x150 in time, "
            "max batch 16, so that a pod saturates near 44 rps (fp16) in the 2-core demo"),
    base_ms=0.45 * 150,
    per_item_ms=0.123 * 150,
    max_batch=16,
    precision_factor=SERVICE_TIME_FACTOR,
    assumptions=FACTOR_ASSUMPTIONS + ("time scale x150 and max batch 16 chosen for the 2-core demo, not measured",),
)

PROFILES: dict[str, EncoderProfile | DecoderProfile] = {
    p.name: p for p in (A100_BERT_BASE, T4_BERT_BASE, A100_OPT13B, DEMO_ENCODER, DEMO_HEAVY)
}
DEFAULT_PROFILE = DEMO_ENCODER


def get_profile(name: str) -> EncoderProfile | DecoderProfile:
    """Look a profile up by name, with an error that lists the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown service profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None


def encoder_latency_ms(
    rate_per_pod: float,
    profile: EncoderProfile,
    precision: str = "fp16",
    quantile: float = 0.99,
    slowdown: float = 1.0,
) -> float:
    """Approximate steady-state quantile latency of one dynamically batching pod.

    A pod that runs batches back to back at arrival rate r settles at the batch
    size b with b = r * t(b), i.e. b = r*base / (1 - r*per_item). A request
    waits for the running batch, then runs in the next one, so its latency is
    between t(b) and 2 t(b); queueing variance near saturation adds the
    Kingman-style factor rho/(1-rho), where rho = r / max_rps. The tail
    quantile of the exponential waiting time scales it by -ln(1-q).
    Past saturation the queue grows without bound: returns inf.
    This is the closed form used to derive training latency; the simulator
    and the emulated server model each batch explicitly instead.
    """
    if rate_per_pod <= 0:
        return profile.batch_ms(precision, 1, slowdown)
    f = profile.factor(precision) * slowdown
    base, per_item = profile.base_ms * f / 1000.0, profile.per_item_ms * f / 1000.0
    denom = 1.0 - rate_per_pod * per_item
    rho = rate_per_pod / profile.max_rps(precision, slowdown)
    if denom <= 0 or rho >= 1.0:
        return math.inf
    batch = min(max(1.0, rate_per_pod * base / denom), profile.max_batch)
    t_batch_ms = profile.base_ms * f + profile.per_item_ms * f * batch
    wait_ms = t_batch_ms * (rho / (1.0 - rho)) * -math.log(1.0 - quantile) / 2.0
    return 1.5 * t_batch_ms + wait_ms


def derived_latency_ms(
    rate_rps: np.ndarray,
    replicas: int,
    profile: EncoderProfile = DEFAULT_PROFILE,
    precision: str = "fp16",
    quantile: float = 0.99,
    cap_ms: float = 10_000.0,
) -> np.ndarray:
    """Quantile latency implied by a request-rate series spread over `replicas` pods.

    Used to build latency series for the forecaster's training data, since no
    public trace pairs GPU latency with request rate. Overload is
    capped at `cap_ms` so the series stays finite.
    """
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    rates = np.asarray(rate_rps, dtype=float)
    out = np.array([encoder_latency_ms(r / replicas, profile, precision, quantile) if np.isfinite(r) else np.nan for r in rates])
    return np.minimum(out, cap_ms)

