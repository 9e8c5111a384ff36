"""One `forescale replay`: read the trace, calibrate, run every policy, report.

This is the library entry point the CLI and the benchmark call:
`run_replay(ReplayOptions(...)) -> ReplayResult`, whose `to_json()` is the
`--json` object (docs/replay.md).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from forescale_predictor import BASELINE_NAMES
from forescale_profiles.service_time import A100_OPT13B, T4_BERT_BASE, DecoderProfile, get_profile

from .bounds import reserve_floor_gpu_hours
from .calibration import PEER_UTILIZATION, Calibration, check_peer_utilization
from .clairvoyant import NAME as CLAIRVOYANT
from .errors import SimError
from .incidents import Incident, default_incidents, parse_incidents
from .load_scale import check_load_scale, scale_load
from .pool_b import DEFAULT_B_VARIANT, resolve
from .policies.factory import PolicyContext, make_policy
from .replay import ClusterConfig, PolicyRun, run_policy
from .trace_types import RateTrace, RequestTrace
from .traces import load_trace

#: Token traces are served by OPT-13B on A100 (the DistServe fit); rate traces
#: by BERT-base on T4 (the TensorRT fit), whose per-pod capacity puts ServeGen's
#: ~1,900 req/s on a handful of pods. Both from published benchmarks (forescale_profiles.service_time).
DEFAULT_PROFILE = {"llm": A100_OPT13B.name, "encoder": T4_BERT_BASE.name}
DEFAULT_SLO_MS = {"llm": 1000.0, "encoder": 200.0}
ORACLE_ROUNDS = 8


@dataclass
class ReplayOptions:
    """Everything `forescale replay` accepts."""

    trace: str
    fmt: str
    policies: list[str] = field(default_factory=lambda: ["forescale", "hpa", "keda", "kpa", "static", "oracle"])
    slo_ms: float | None = None
    quantile: float = 0.99
    startup_seconds: float = 90.0
    incidents: str | None = None  # None -> the default incident
    seed: int = 0
    profile: str | None = None
    max_replicas: int = 100
    compress: float | None = None
    forecaster: str = "lstm"  # lstm (the packaged default) or a baseline name
    spec_overrides: dict | None = None
    #: `--set PATH=VALUE` flags, applied after spec_overrides (spec_file.parse_sets)
    spec_sets: tuple = ()
    #: every peer's per-pod target is this share of the calibrated capacity
    peer_utilization: float = PEER_UTILIZATION
    #: the load multiplied by this (load_scale.py)
    load_scale: float = 1.0
    #: pool B's model (pool_b.py): A's model at int8, or a measured lighter variant
    b_variant: str = DEFAULT_B_VARIANT
    progress: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True)


@dataclass
class ReplayResult:
    options: ReplayOptions
    trace: RequestTrace | RateTrace
    duration_seconds: float
    slo_ms: float
    incidents: list[Incident]
    calibration: dict
    runs: dict[str, PolicyRun]
    forecaster: str
    #: GPU-hours no policy keeping the warm reserve can go under (bounds.py)
    reserve_floor_gpu_hours: float = 0.0

    def to_json(self) -> dict:
        """The `--json` object (plus `calibration`, `notes` and `forecaster`)."""
        return {
            "trace": self.trace.name,
            "format": self.options.fmt,
            "duration_seconds": self.duration_seconds,
            "slo_ms": self.slo_ms,
            "startup_seconds": self.options.startup_seconds,
            "incidents": [i.to_dict() for i in self.incidents],
            "seed": self.options.seed,
            "peer_utilization": self.options.peer_utilization,
            "load_scale": self.options.load_scale,
            "calibration": self.calibration,
            "forecaster": self.forecaster,
            "notes": list(self.trace.notes),
            "reserve_floor_gpu_hours": round(self.reserve_floor_gpu_hours, 4),
            "policies": {name: run.to_dict() for name, run in self.runs.items()},
        }


#: every name `--forecaster` takes: the packaged LSTM, the clairvoyant ceiling, the plain baselines
FORECASTERS = ("lstm", CLAIRVOYANT, *BASELINE_NAMES)


def _forecaster_factory(name: str, progress, per_second: np.ndarray) -> tuple[Callable, str]:
    """`per_second`: the trace's arrivals per second, which only the clairvoyant forecaster reads."""
    from forescale_predictor import ModelFormatError, load_forecaster, make_baseline

    from .clairvoyant import ClairvoyantForecaster
    from .policies.forescale import EPOCH0

    if name == CLAIRVOYANT:
        return (lambda step, horizon: ClairvoyantForecaster(per_second, epoch0=EPOCH0, step_seconds=step,
                                                            horizon_seconds=horizon)), \
            "clairvoyant (the trace's own arrivals ahead; ewm latency)"
    if name == "lstm":
        try:
            model = load_forecaster(None)
            import torch  # loaded by the line above

            # One forecast of one series per tick: extra threads only spin on shared cores.
            torch.set_num_threads(1)
            from forescale_predictor.online_forecaster import OnlineForecaster

            # As in the operator (forecasting/forecaster.py): the LSTM or ewm, whichever is ahead on
            # rolling horizon MAE, with bands calibrated online; a fresh one per policy run.
            return (lambda step, horizon: OnlineForecaster(model)), f"lstm ({model.source}) in OnlineForecaster"
        except ModelFormatError as exc:
            progress(f"warning: {exc}; the forescale policy falls back to the ewm baseline")
            name = "ewm"
    if name not in BASELINE_NAMES:
        raise SimError(f"unknown forecaster {name!r}; choose one of {', '.join(FORECASTERS)}")
    return (lambda step, horizon: make_baseline(name, step_seconds=step, horizon_seconds=horizon)), f"baseline {name}"


def _per_second(trace: RequestTrace | RateTrace, ticks: int) -> np.ndarray:
    if isinstance(trace, RequestTrace):
        return np.bincount(trace.arrivals.astype(int), minlength=ticks).astype(float)
    return trace.counts.astype(float)


def _window_rates(per_s: np.ndarray) -> tuple[np.ndarray, float]:
    n_w = int(np.ceil(per_s.size / 10))
    windows = np.pad(per_s, (0, n_w * 10 - per_s.size)).reshape(n_w, 10).mean(1)
    peak = float(np.convolve(per_s, np.ones(60) / 60, "valid").max()) if per_s.size >= 60 else float(per_s.mean())
    return windows, peak


def run_replay(opts: ReplayOptions) -> ReplayResult:
    """Replay the trace once per policy; raises SimError (TraceError, IncidentSpecError) on bad input."""
    if opts.startup_seconds < 0:
        raise SimError(f"--startup-seconds must be >= 0, got {opts.startup_seconds}")
    if opts.slo_ms is not None and opts.slo_ms <= 0:
        raise SimError(f"--slo-ms must be > 0, got {opts.slo_ms}")
    if opts.max_replicas < 1:
        raise SimError(f"--max-replicas must be >= 1, got {opts.max_replicas}")
    if opts.seed < 0:
        raise SimError(f"--seed must be >= 0, got {opts.seed}")
    if opts.compress is not None and not opts.compress > 0:
        raise SimError(f"--compress must be > 0, got {opts.compress:g}")
    check_peer_utilization(opts.peer_utilization)
    check_load_scale(opts.load_scale)
    variant_b = resolve(opts.b_variant)
    incidents = parse_incidents(opts.incidents) if opts.incidents is not None else None
    opts.progress(f"reading {opts.trace} ({opts.fmt})")
    read = load_trace(opts.trace, opts.fmt, seed=opts.seed, compress=opts.compress)
    trace = scale_load(read, opts.load_scale, opts.seed)
    duration = trace.duration_seconds
    if duration < 1.0:
        raise SimError(f"{opts.trace}: the trace spans {duration:g} s; a replay needs arrivals over at least one second")
    if duration > 48 * 3600:
        opts.progress(f"warning: the trace replays over {duration / 3600:.0f} h of simulated time; "
                      "--compress shortens a rate trace (e.g. --compress 24 replays a day in an hour)")
    if incidents is None:
        incidents = default_incidents(duration, opts.seed)
    for inc in incidents:
        if inc.start >= duration:
            raise SimError(f"incident {inc.kind} starts at {inc.start:g} s, after the trace ends ({duration:g} s)")
    try:
        profile = get_profile(opts.profile or DEFAULT_PROFILE[trace.kind])
    except ValueError as exc:
        raise SimError(str(exc)) from None
    if (trace.kind == "llm") != isinstance(profile, DecoderProfile):
        raise SimError(f"profile {profile.name} cannot serve a {trace.kind} trace; token traces need a decoder profile, rate traces an encoder one")
    slo_ms = opts.slo_ms or DEFAULT_SLO_MS[trace.kind]
    # Calibrated on the trace as read: the copies have the same token mix, and the
    # per-pod capacity must not change with the load scale.
    cal = Calibration(profile, slo_ms, opts.quantile,
                      getattr(read, "input_tokens", None), getattr(read, "output_tokens", None),
                      utilization=opts.peer_utilization)
    cap16, cap8 = cal.capacity("fp16"), cal.capacity("int8")
    if cap16 <= 0:
        raise SimError(f"profile {profile.name} cannot meet a {slo_ms:g} ms SLO even with one request per pod")
    calibration = {
        "profile": profile.name,
        "source": profile.source,
        "capacity_rps_at_slo": {"fp16": round(cap16, 4), "int8": round(cap8, 4)},
        "peer_utilization": cal.utilization,
        "target_per_pod": round(cal.target_per_pod("fp16"), 4),
        "pool_b": {"variant": variant_b.name, "service_time_vs_a_fp16": round(variant_b.service_factor, 4),
                   "agreement": variant_b.agreement, "label": variant_b.label},
    }
    opts.progress(f"calibration ({profile.name}, SLO {slo_ms:g} ms p{opts.quantile * 100:g}): capacity "
                  f"{cap16:.3f} rps/pod fp16, {cap8:.3f} int8; peers' target_per_pod {cal.target_per_pod():.3f}")
    ticks = int(np.ceil(duration)) + 1
    per_second = _per_second(trace, ticks)
    window_rates, peak = _window_rates(per_second)
    forecaster_factory, forecaster_label = (None, "none")
    if "forescale" in opts.policies:
        forecaster_factory, forecaster_label = _forecaster_factory(opts.forecaster, opts.progress, per_second)
    ctx = PolicyContext(cal, window_rates, peak, incidents, opts.startup_seconds, opts.max_replicas,
                        slo_ms, opts.quantile, variant_b, forecaster_factory, opts.spec_overrides,
                        opts.spec_sets)
    cfg = ClusterConfig(profile=profile, slo_ms=slo_ms, quantile=opts.quantile,
                        startup_seconds=opts.startup_seconds, seed=opts.seed, b_model_factor=variant_b.model_factor)
    runs: dict[str, PolicyRun] = {}
    for name in opts.policies:
        policy = make_policy(name, ctx)
        run = run_policy(trace, policy, cfg, incidents)
        if name == "oracle":
            while policy.rounds < ORACLE_ROUNDS and policy.refine(run.windows_over):
                run = run_policy(trace, policy, cfg, incidents)
            run.extras["oracle_rounds"] = policy.rounds
        if hasattr(policy, "extras"):
            run.extras.update(policy.extras())
        runs[name] = run
        opts.progress(f"  {name:9s} violation {run.slo.violation_seconds:6.0f} s  gpu-h {run.gpu_hours:7.3f}  ({run.seconds:.1f} s)")
    floor = reserve_floor_gpu_hours(per_second, cap16)
    return ReplayResult(opts, trace, duration, slo_ms, incidents, calibration, runs, forecaster_label, floor)
