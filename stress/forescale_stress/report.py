"""The report: one JSON-ready dict (docs/stress.md's keys, plus extras), and its
rendering as rich tables."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table

from forescale_stress.analysis import (
    BASELINE_SECONDS,
    RECOVERY_TOLERANCE,
    degradation_effect,
    find_knee,
    latency_slope,
    recovery_time,
)
from forescale_stress.percentiles import summarize_step
from forescale_stress.runner import RunResult, TimelineEvent
from forescale_stress.samples import SampleTable


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


def _recovery(event: TimelineEvent, table: SampleTable, result: RunResult) -> dict:
    spec = event.spec
    entry = {"fault": spec.label(), "seconds": None}
    if event.called_at is None:
        entry["note"] = f"not reached: the load stopped at {result.load_end:.1f}s ({result.stopped_because})"
        return entry
    entry["started_s"] = _r(event.called_at, 3)
    if event.error:
        entry["error"] = event.error
        return entry
    end = event.answered_at + spec.seconds
    entry["ended_s"] = _r(end, 3)
    rec = recovery_time(table, event.called_at, end, result.load_end, result.config.window_min_samples,
                        window=result.config.recovery_window_s)
    entry["seconds"] = rec.seconds
    entry["baseline_p99_ms"] = _r(rec.baseline_p99_ms)
    if rec.note:
        entry["note"] = rec.note
    return entry


def _degradation(event: TimelineEvent, table: SampleTable, result: RunResult) -> dict:
    spec = event.spec
    entry = {"action": spec.label(), "p99_before_ms": None, "p99_after_ms": None}
    if event.called_at is None:
        entry["note"] = f"not reached: the load stopped at {result.load_end:.1f}s ({result.stopped_because})"
        return entry
    entry["at_s"] = _r(event.called_at, 3)
    entry["call_seconds"] = _r(event.answered_at - event.called_at, 3)
    if event.error:
        entry["error"] = event.error
        return entry
    window = result.config.degrade_window_s
    eff = degradation_effect(table, event.called_at, event.answered_at, result.load_end, window,
                             result.config.window_min_samples)
    entry.update(p99_before_ms=_r(eff.p99_before_ms), p99_after_ms=_r(eff.p99_after_ms),
                 window_seconds=window, samples_before=eff.samples_before, samples_after=eff.samples_after)
    if eff.note:
        entry["note"] = eff.note
    return entry


def build_report(result: RunResult) -> dict:
    """Analyse a run into the report object printed by `--json`."""
    cfg = result.config
    table = SampleTable.of(result.samples)
    steps = [summarize_step(w, table, cfg.ramp.min_samples) for w in result.windows]
    knee = find_knee(steps, cfg.bounds.slo_ms)
    slope = latency_slope(steps, knee)
    errors = Counter(s.error for s in result.samples if s.error)
    load_seconds = max(result.load_end, 1e-9)
    return {
        "url": cfg.target.url,
        "endpoint": cfg.target.kind,
        "arrivals": cfg.arrivals,
        "seed": cfg.seed,
        "input_scale": cfg.input_scale,
        "slo_ms": cfg.bounds.slo_ms,
        "start_rate": cfg.ramp.start_rate,
        "start_rate_from": "probe" if cfg.probe_s > 0 else "--start-rate",
        "probe_rps": _r(result.probe_rps, 2),
        "probe_warmup_seconds": cfg.probe_warmup_s if cfg.probe_s > 0 else None,
        "warmup_seconds": cfg.warmup_s,
        "warmup_requests": result.warmup_requests,
        "before_ramp_seconds": _r(result.before_ramp_seconds, 3),
        "step_percent": cfg.ramp.step_percent,
        "confirm_slo": cfg.confirm_slo,
        "min_samples": cfg.ramp.min_samples,
        "steps": [s.as_json() for s in steps],
        "slope_ms_per_rps": _r(slope, 4),
        "slope_steps": [i for i in knee.under_knee],
        "knee_rps": _r(knee.rps, 3),
        "knee_offered_rps": _r(knee.offered_rps, 3),
        "knee_step": knee.index,
        "knee_crossed_slo": knee.crossed,
        "recoveries": [_recovery(e, table, result) for e in result.faults],
        "degradations": [_degradation(e, table, result) for e in result.degradations],
        "requests": len(result.samples),
        "errors": sum(errors.values()),
        "error_kinds": dict(sorted(errors.items())),
        "load_seconds": _r(result.load_end, 3),
        "wall_seconds": _r(result.wall_seconds, 3),
        "generator_cpu_seconds": _r(result.cpu_seconds, 3),
        "generator_cpu_percent": _r(100.0 * result.cpu_seconds / max(result.wall_seconds, 1e-9), 1),
        "achieved_rate_overall": _r(sum(1 for s in result.samples if s.ok and s.done < result.load_end)
                                    / load_seconds, 3),
        "stopped_because": result.stopped_because,
        "definitions": {
            "latency": "from the scheduled send time to the end of the answer, successful requests only",
            "achieved_rate": "successful answers that arrived during the step / step seconds",
            "recovery": (f"seconds from the fault's end (its start for instantaneous faults and kills) to the "
                         f"first {cfg.recovery_window_s:g}s window whose p99 (failures as infinite) is within "
                         f"{RECOVERY_TOLERANCE:g}x the p99 of the {BASELINE_SECONDS:g}s before the fault"),
            "degradation": f"p99 over {cfg.degrade_window_s:g}s before the admin call and {cfg.degrade_window_s:g}s "
                           "after its answer",
        },
    }


def _fmt(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def render(report: dict, console: Console) -> None:
    """Print the report as tables and a short summary."""
    steps = Table(title=f"forescale stress {report['url']}  (SLO p99 {report['slo_ms']:g} ms)")
    for name in ("step", "offered rps", "achieved rps", "samples", "errors", "p50 ms", "p99 ms", "p999 ms",
                 "gen cpu s", "note"):
        steps.add_column(name, justify="right" if name != "note" else "left")
    for i, s in enumerate(report["steps"]):
        notes = []
        if s["under_sampled"]:
            notes.append("under-sampled")
        if s["during_fault"]:
            notes.append("fault window")
        if s["slo_unconfirmed"]:
            notes.append("over the SLO, not confirmed: noise")
        if i == report["knee_step"]:
            notes.append("knee")
        steps.add_row(str(i), _fmt(s["rate"]), _fmt(s["achieved_rate"]), str(s["samples"]), str(s["errors"]),
                      _fmt(s["p50_ms"]), _fmt(s["p99_ms"]), _fmt(s["p999_ms"]),
                      _fmt(s["generator_cpu_seconds"], 2), ", ".join(notes))
    console.print(steps)
    if report["start_rate_from"] == "probe":
        console.print(f"start: {report['start_rate']:g} rps, a quarter of the {_fmt(report['probe_rps'])} rps a "
                      f"{report['probe_warmup_seconds']:g} s-warmed probe got through; then "
                      f"{report['warmup_seconds']:g} s of warm-up at that rate, not counted")
    knee = report["knee_rps"]
    knee_text = "-" if knee is None else f"{knee:.1f} rps achieved (offered {report['knee_offered_rps']:.1f})"
    if knee is not None and not report["knee_crossed_slo"]:
        knee_text += ", a lower bound: no step went over the SLO"
    slope = report["slope_ms_per_rps"]
    console.print(f"knee: {knee_text}")
    console.print(f"latency growth slope: {'-' if slope is None else f'{slope:.3f} ms per rps'}"
                  f" (least squares of p99 vs achieved rate over steps {report['slope_steps']})")
    if report["recoveries"]:
        rec = Table(title="time to recover")
        for name in ("fault", "seconds", "pre-fault p99 ms", "note"):
            rec.add_column(name)
        for r in report["recoveries"]:
            rec.add_row(r["fault"], _fmt(r["seconds"]), _fmt(r.get("baseline_p99_ms")),
                        r.get("error") or r.get("note") or "")
        console.print(rec)
    if report["degradations"]:
        deg = Table(title="degradation actions")
        for name in ("action", "p99 before ms", "p99 after ms", "note"):
            deg.add_column(name)
        for d in report["degradations"]:
            deg.add_row(d["action"], _fmt(d["p99_before_ms"]), _fmt(d["p99_after_ms"]),
                        d.get("error") or d.get("note") or "")
        console.print(deg)
    console.print(
        f"{report['requests']} requests, {report['errors']} failed {report['error_kinds'] or ''}; "
        f"stopped because: {report['stopped_because']}; generator CPU {report['generator_cpu_seconds']:.2f} s "
        f"({report['generator_cpu_percent']:.0f}% of one core over {report['wall_seconds']:.1f} s; "
        "generator and server share this machine's cores)"
    )
