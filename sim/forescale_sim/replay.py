"""Replay one trace through the simulated cluster, once per policy.

The clock advances in 1 s ticks. At each tick: pods whose start-up ended
become ready; crash incidents fire; each policy decides when its own loop
interval comes round; then the tick's arrivals are routed by the weights to
a pool and, inside the pool, to the less busy of two random ready pods
(Envoy's least-request balancing, `balancing.py`), or through the fluid model
for rate traces.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from forescale_profiles.service_time import DecoderProfile, EncoderProfile

from . import balancing
from .cluster import Pod, Pool, slowdown_at
from .encoder_fluid import encoder_tick
from .incidents import Incident
from .llm_pod import DEFAULT_TIMEOUT_S, LlmPod
from .metrics import SloSummary, summarize, windows_over
from .policies.base import Command, Policy
from .recorder import Recorder
from .trace_types import RateTrace, RequestTrace
from .view import ClusterView


@dataclass(frozen=True)
class ClusterConfig:
    """The simulated cluster's settings, shared by every policy of one replay."""

    profile: EncoderProfile | DecoderProfile
    slo_ms: float
    quantile: float = 0.99
    startup_seconds: float = 90.0
    a_precision: str = "fp16"
    b_precision: str = "int8"
    a_cost_weight: float = 1.0
    b_cost_weight: float = 1.0
    #: pool B's model's service time relative to A's at the same precision (a distilled variant < 1)
    b_model_factor: float = 1.0
    timeout_s: float = DEFAULT_TIMEOUT_S
    seed: int = 0


@dataclass
class PolicyRun:
    """What one policy did on one trace."""

    name: str
    slo: SloSummary
    gpu_hours: float
    scaling_actions: int
    weight_changes: int
    target_per_pod: float
    recorder: Recorder
    window_latency_ms: np.ndarray
    windows_over: np.ndarray
    extras: dict = field(default_factory=dict)
    seconds: float = 0.0
    #: the most desired replicas of each pool at any tick
    peak_replicas: dict = field(default_factory=lambda: {"a": 0, "b": 0})

    @property
    def b_fraction(self) -> float:
        """The share of the trace's requests routed to pool B (its lighter model, when B runs one)."""
        total = float(self.recorder.arrivals.sum())
        return float(self.recorder.arrivals[1].sum()) / total if total > 0 else 0.0

    def to_dict(self) -> dict:
        """The replay's JSON keys (docs/replay.md), plus a few extra ones."""
        out = {
            "requests": self.slo.requests,
            "requests_over_slo_fraction": round(self.slo.over_fraction, 6),
            "violation_seconds": self.slo.violation_seconds,
            "episodes": self.slo.episodes,
            "mttr_seconds": round(self.slo.mttr_seconds, 3),
            "gpu_hours": round(self.gpu_hours, 4),
            "scaling_actions": self.scaling_actions,
            "weight_changes": self.weight_changes,
            "requests_on_b_fraction": round(self.b_fraction, 6),
            "peak_replicas": dict(self.peak_replicas),
            "target_per_pod": round(self.target_per_pod, 4),
            "requests_over_slo": self.slo.requests_over_slo,
            "censored_episodes": self.slo.censored_episodes,
            "rejected": int(self.recorder.rejected.sum()),
            "replay_seconds": round(self.seconds, 2),
        }
        out.update(self.extras)
        return out


def _make_pools(cfg: ClusterConfig) -> dict[str, Pool]:
    maker: Callable[[], LlmPod] | None = None
    if isinstance(cfg.profile, DecoderProfile):
        profile, timeout = cfg.profile, cfg.timeout_s
        maker = lambda: LlmPod(profile, timeout)  # noqa: E731
    return {
        "a": Pool("a", cfg.a_precision, cfg.a_cost_weight, cfg.startup_seconds, maker),
        "b": Pool("b", cfg.b_precision, cfg.b_cost_weight, cfg.startup_seconds, maker),
    }


class _Actuator:
    """Applies commands and counts changes."""

    def __init__(self, pools: dict[str, Pool]) -> None:
        self.pools = pools
        self.desired = {"a": 0, "b": 0}
        self.weights = {"a": 100, "b": 0}
        self.scaling_actions = 0
        self.weight_changes = 0
        #: the most replicas asked of each pool at any tick
        self.peak = {"a": 0, "b": 0}

    def warm_start(self, cmd: Command) -> None:
        """Pods that exist, ready, when the replay starts (every policy starts warm)."""
        for name, n in cmd.replicas.items():
            pool = self.pools[name]
            for _ in range(int(n)):
                pool.pods.append(Pod(0.0, 0.0, pool.make_server() if pool.make_server else None))
            self.desired[name] = int(n)
            self.peak[name] = max(self.peak[name], int(n))
        if cmd.weights:
            self.weights = dict(cmd.weights)

    def apply(self, cmd: Command, now: float) -> None:
        for name, n in cmd.replicas.items():
            n = int(n)
            if n != self.desired[name]:
                self.scaling_actions += 1
                self.desired[name] = n
            self.peak[name] = max(self.peak[name], n)
            self.pools[name].scale_to(n, now)
        if cmd.weights is not None and dict(cmd.weights) != self.weights:
            self.weight_changes += 1
            self.weights = {"a": int(cmd.weights["a"]), "b": int(cmd.weights["b"])}
        if cmd.precision:
            for name, precision in cmd.precision.items():
                self.pools[name].runtime_precision = precision if precision != self.pools[name].precision else None


def _route_requests(trace: RequestTrace, lo: int, hi: int, now: float, pools: dict[str, Pool], w_b: float,
                    slow: dict[str, float], rng: np.random.Generator, rec: Recorder) -> None:
    """Requests lo..hi-1 (this tick's): a pool by weight, then the less busy of two
    random ready pods (`balancing.pick`); no ready pod means a 503 (rejected)."""
    ready = {name: [p.server for p in pools[name].ready_pods(now)] for name in pools}
    prec = {name: pools[name].effective_precision for name in pools}
    picks = rng.random(hi - lo) < w_b
    first, second = rng.random(hi - lo), rng.random(hi - lo)
    for k, i in enumerate(range(lo, hi)):
        name = "b" if picks[k] else "a"
        servers = ready[name]
        at = float(trace.arrivals[i])
        if not servers:
            rec.request(i, name, at, None)
            continue
        server = balancing.pick(servers, first[k], second[k], at)
        latency = server.serve(i, at, trace.input_tokens[i], trace.output_tokens[i], prec[name], slow[name])
        rec.request(i, name, at, latency)
        if latency is not None:
            rec.work(int(at), name, server.last_prefill_ms, 1.0, server.last_prompt_tokens)


def _route_fluid(trace: RateTrace, t: int, now: float, pools: dict[str, Pool], w_b: float, slow: dict[str, float],
                 rng: np.random.Generator, rec: Recorder, cfg: ClusterConfig) -> None:
    """This tick's arrival count, split by weight (binomially), through each pool's fluid queue."""
    count = float(trace.counts[t]) if t < trace.counts.size else 0.0
    n_b = float(rng.binomial(int(count), w_b)) if w_b > 0 else 0.0
    for name, n in (("a", count - n_b), ("b", n_b)):
        pool = pools[name]
        res = encoder_tick(n, len(pool.ready_pods(now)), pool.backlog, cfg.profile, pool.effective_precision,
                           slow[name], cfg.slo_ms, cfg.quantile, timeout_s=cfg.timeout_s)
        pool.backlog = res.backlog
        rec.tick(t, name, n, res.over_slo, res.rejected, res.latency_ms, res.backlog, res.tail_base_ms, res.tail_scale_ms)
        if res.served > 0 and res.batch_items > 0:
            batches = res.served / res.batch_items
            rec.work(t, name, batches * res.batch_ms, batches, res.served)


def run_policy(trace: RequestTrace | RateTrace, policy: Policy, cfg: ClusterConfig,
               incidents: list[Incident]) -> PolicyRun:
    """Replay `trace` under `policy`; the per-policy report."""
    started = time.monotonic()
    ticks = int(math.ceil(trace.duration_seconds)) + 1
    n_req = len(trace) if isinstance(trace, RequestTrace) else 0
    pools = _make_pools(cfg)
    rec = Recorder(ticks, n_req, cfg.quantile, cfg.slo_ms, cfg.timeout_s)
    view = ClusterView(pools, rec)
    act = _Actuator(pools)
    rng = np.random.default_rng(cfg.seed + 1)
    crashes = [i for i in incidents if i.kind == "crash"]

    # Prime the view with the first minute of traffic so policies can size
    # their warm start, as if each had been running before the trace began.
    if isinstance(trace, RequestTrace):
        first = trace.arrivals[trace.arrivals < 60.0]
        rec.arrivals[0, : min(60, ticks)] = np.bincount(first.astype(int), minlength=60)[: min(60, ticks)]
    else:
        rec.arrivals[0, : min(60, ticks)] = trace.counts[: min(60, ticks)]
    view.now = 60.0
    act.warm_start(policy.start(view))
    rec.arrivals[:] = 0.0
    view.now = 0.0

    # The warm start sized the pools; the first decision comes one loop interval later,
    # when the policy has a full interval of measurements.
    next_decision = float(policy.interval_seconds)
    req_i = 0
    arrivals = trace.arrivals if isinstance(trace, RequestTrace) else None
    for t in range(ticks):
        now = float(t)
        view.now = now
        for pool in pools.values():
            pool.note_ready(now, 1.0)
        for inc in crashes:
            if now <= inc.start < now + 1:
                rec.fail(pools[inc.pool].crash(inc.pods, inc.start), inc.start)
        if now >= next_decision:
            act.apply(policy.decide(view), now)
            next_decision += policy.interval_seconds
        w_b = act.weights["b"] / 100.0
        slow = {name: slowdown_at(incidents, name, now) for name in pools}
        slow["b"] *= cfg.b_model_factor
        for i, name in enumerate(("a", "b")):
            rec.replicas[i, t] = pools[name].replicas()
            rec.ready[i, t] = len(pools[name].ready_pods(now))
        rec.weight_b[t] = act.weights["b"]
        if arrivals is not None:
            hi = int(np.searchsorted(arrivals, now + 1.0, side="left"))
            _route_requests(trace, req_i, hi, now, pools, w_b, slow, rng, rec)
            req_i = hi
        else:
            _route_fluid(trace, t, now, pools, w_b, slow, rng, rec, cfg)
    for pool in pools.values():
        pool.close(float(ticks))
    requests, over, lat_q = rec.window_counts()
    flags = windows_over(requests, over, cfg.quantile)
    gpu_hours = sum(p.gpu_seconds for p in pools.values()) / 3600.0
    return PolicyRun(
        name=policy.name,
        slo=summarize(requests, over, cfg.quantile),
        gpu_hours=gpu_hours,
        scaling_actions=act.scaling_actions,
        weight_changes=act.weight_changes,
        peak_replicas=dict(act.peak),
        target_per_pod=policy.target_per_pod,
        recorder=rec,
        window_latency_ms=lat_q,
        windows_over=flags,
        seconds=time.monotonic() - started,
    )
