"""A pool of encoder pods as a fluid queue, one 1 s tick at a time, priced by
the shared `EncoderProfile` and its closed form `encoder_latency_ms`
(profiles/forescale_profiles/service_time.py).

Rate traces (ServeGen ~1,900 req/s, rate CSVs) are too dense to replay
request by request in Python, so a pool is modelled per tick:
- the tick's arrivals are spread evenly over the ready pods (least-request
  balancing of identical pods);
- a pod serves at most `max_rps(precision, slowdown)`; what it cannot serve
  is carried to the next tick as a backlog, and what would wait longer than
  the timeout (15 s) is rejected;
- the latency distribution inside a tick is the closed form's: a batch
  service time t(b) and an exponential queueing tail whose q-quantile is
  `t * rho/(1-rho) * -ln(1-q) / 2` (service_time.encoder_latency_ms), plus
  the backlog's wait. So the share over the SLO is
  `exp(-(SLO - 1.5 t - wait) * 2 (1-rho) / (t rho))`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from forescale_profiles.service_time import EncoderProfile, encoder_latency_ms

from .llm_pod import DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class TickResult:
    """What one pool did with one tick's arrivals."""

    served: float
    over_slo: float  # requests over the SLO, rejected included
    rejected: float
    latency_ms: float  # the q-quantile latency of the tick (inf when all rejected)
    backlog: float  # requests carried to the next tick
    #: the served requests' latency distribution: at least `tail_base_ms`, plus an
    #: exponential tail of mean `tail_scale_ms` (0: all at `latency_ms`), so that
    #: a step's quantile can be taken over its ticks' mixture, as a Prometheus
    #: histogram_quantile over the step would
    tail_base_ms: float = 0.0
    tail_scale_ms: float = 0.0
    #: the device's work: items per batch and ms per batch (what the pods' clock reads)
    batch_items: float = 0.0
    batch_ms: float = 0.0


def _batch(profile: EncoderProfile, precision: str, slowdown: float, rate: float) -> tuple[float, float]:
    """(items per batch, ms per batch) of a pod serving `rate` rps: the batch that keeps up."""
    f = profile.factor(precision) * slowdown
    base, per_item = profile.base_ms * f / 1000.0, profile.per_item_ms * f / 1000.0
    denom = 1.0 - rate * per_item
    batch = profile.max_batch if denom <= 0 else min(max(1.0, rate * base / denom), profile.max_batch)
    return batch, (profile.base_ms + profile.per_item_ms * batch) * f


def encoder_tick(arrivals: float, ready: int, backlog: float, profile: EncoderProfile, precision: str,
                 slowdown: float, slo_ms: float, quantile: float, dt: float = 1.0,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> TickResult:
    """Serve one tick of `arrivals` on `ready` pods with `backlog` carried in."""
    if ready <= 0:
        # No endpoints: the gateway answers 503 and nothing queues.
        return TickResult(0.0, arrivals + backlog, arrivals + backlog, math.inf, 0.0)
    capacity = profile.max_rps(precision, slowdown) * ready  # requests per second
    total = arrivals + backlog
    served = min(total, capacity * dt)
    left = total - served
    rejected = max(0.0, left - capacity * timeout_s)  # would wait past the timeout
    left -= rejected
    wait_ms = 1000.0 * left / capacity  # the backlog's wait for requests arriving next
    per_pod = min(served / dt, capacity) / ready
    rho = per_pod / profile.max_rps(precision, slowdown)
    batch, t_ms = _batch(profile, precision, slowdown, per_pod)
    base_ms, scale_ms = 1.5 * t_ms + wait_ms, 0.0
    if rho >= 0.999 or left > 0:
        # A saturated tick: requests wait for the backlog and a full batch.
        q_ms = base_ms = 2.0 * t_ms + wait_ms
        share = 1.0 if q_ms > slo_ms else 0.0
    else:
        q_ms = encoder_latency_ms(per_pod, profile, precision, quantile, slowdown) + wait_ms
        slack = slo_ms - base_ms
        if rho > 0:
            scale_ms = t_ms * rho / (2.0 * (1.0 - rho))
        if slack <= 0:
            share = 1.0
        elif rho <= 0:
            share = 0.0
        else:
            share = math.exp(-slack / scale_ms)
    over = served * min(1.0, share) + rejected
    latency = q_ms if served > 0 else (math.inf if rejected else 0.0)
    return TickResult(served, over, rejected, latency, left, base_ms, scale_ms, batch, t_ms)
