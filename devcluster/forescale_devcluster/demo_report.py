"""The demo's summary, its table and its PNG timeline.

Violation seconds, episodes and time to recover use the replay's own
definitions (`forescale_sim.metrics`: 10 s windows by arrival time, failed or
rejected requests count as over the SLO). GPU-hours count every pod from the
moment it exists (scheduled), weighted by its pool's costWeight.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from forescale_devcluster.demo import DemoRun
from forescale_sim.metrics import WINDOW_SECONDS, summarize as slo_summary

#: pool b's costWeight in the demo's resource (demo_scenario.demo_resource)
COST_WEIGHT = {"a": 1.0, "b": 0.6}
#: how the operator's RootCauseSuspected message says it is a second look (act/incident_diagnosis.py)
SECOND_LOOK = "A second look"



def summary(run: DemoRun) -> dict[str, Any]:
    s = run.settings
    records = run.records
    end = max((r.scheduled_s for r in records), default=0.0)
    n = int(math.ceil((end + 1e-9) / WINDOW_SECONDS)) if records else 0
    requests, over = np.zeros(n), np.zeros(n)
    slo_s = s.slo_ms / 1000.0
    for r in records:
        i = min(n - 1, int(r.scheduled_s // WINDOW_SECONDS))
        requests[i] += 1
        if r.latency_s is None or (r.status or 0) >= 400 or r.latency_s > slo_s:
            over[i] += 1
    slo = slo_summary(requests, over, 0.99)
    gpu_seconds = 0.0
    for prev, cur in zip(run.samples, run.samples[1:]):
        dt = cur.t - prev.t
        gpu_seconds += dt * sum(prev.pods[p] * COST_WEIGHT[p] for p in ("a", "b"))
    reasons = [reason for _, reason, _ in run.events]
    # The diagnosis at the playbook's start when there is one (an earlier Overload's may have come first), else the first.
    playbook = next((at for at, reason, _ in run.events if reason == "EmergencyStarted"), None)
    started = playbook if playbook is not None else next(
        (at for at, reason, _ in run.events if reason in ("EmergencyStarted", "Overload")), None)
    diagnoses = [(at, message) for at, reason, message in run.events if reason == "RootCauseSuspected"]
    found = next((d for d in diagnoses if started is not None and d[0] >= started), diagnoses[0] if diagnoses else None)
    # ... or its second look, when one named a cause that explains it (the operator's later word on the same relief)
    found = next((d for d in diagnoses if found is not None and d[0] >= found[0] and d is not found
                  and SECOND_LOOK in d[1]), found)
    return {
        "duration_seconds": round(s.duration_seconds, 1),
        "slo_ms": s.slo_ms,
        "requests": slo.requests,
        "requests_over_slo_fraction": round(slo.over_fraction, 4),
        "errors": sum(1 for r in records if r.latency_s is None or (r.status or 0) >= 400),
        "violation_seconds": slo.violation_seconds,
        "episodes": slo.episodes,
        "mttr_seconds": slo.mttr_seconds,
        "gpu_hours": round(gpu_seconds / 3600.0, 4),
        "scaling_actions": sum(1 for r in reasons if r in ("ScaledUp", "ScaledDown")),
        "weight_changes": sum(1 for r in reasons if r in ("TrafficShifted", "CutbackStep", "CutbackAborted")),
        "events": reasons,
        "final_weights": run.final_weights,
        "final_phase": run.final_phase,
        "incident": run.incident,
        # the diagnosis's RootCauseSuspected event, and how long after the relief started (EmergencyStarted or Overload)
        "root_cause": None if found is None else {
            "message": found[1], "at": found[0],
            "after_relief_seconds": None if started is None else round(found[0] - started, 1)},
        "seed": s.seed,
    }


def table_lines(result: dict[str, Any]) -> list[str]:
    inc = result["incident"]
    incident = "none (control run)" if inc is None else f"pool a x{inc['factor']:g} at {inc['start']:.0f} s for {inc['seconds']:.0f} s"
    rows = [
        ("incident", incident),
        ("requests", f"{result['requests']} ({result['errors']} failed or rejected)"),
        ("requests over the SLO", f"{100 * result['requests_over_slo_fraction']:.2f}% (p99 SLO {result['slo_ms']:g} ms)"),
        ("seconds over the SLO", f"{result['violation_seconds']:.0f} s in {result['episodes']} episode(s)"),
        ("time to recover", f"{result['mttr_seconds']:.0f} s (mean)"),
        ("GPU-hours", f"{result['gpu_hours']:.4f} (b weighted x{COST_WEIGHT['b']:g})"),
        ("actions", f"{result['scaling_actions']} scaling, {result['weight_changes']} weight changes"),
        ("final weights", f"{result['final_weights']['a']}/{result['final_weights']['b']} ({result['final_phase']})"),
        ("root cause", _root_cause(result.get("root_cause"))),
    ]
    width = max(len(k) for k, _ in rows)
    return [f"{k.ljust(width)}  {v}" for k, v in rows]


#: the events marked on the weights panel
MARKED_EVENTS = ("EmergencyStarted", "Recovered", "CutbackCompleted")


def _root_cause(found: dict[str, Any] | None) -> str:
    if not found:
        return "none suspected"
    after = found.get("after_relief_seconds")
    when = f" ({after:.0f} s after the relief started)" if after is not None else ""
    message = found["message"]
    return (message if len(message) <= 110 else message[:107] + "...") + when


def plot(run: DemoRun, path: str) -> None:
    """Write the timeline (`draw`) to a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = draw(run)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def draw(run: DemoRun):
    """Four panels over time: rate, p99 against the SLO and the forecast, replicas, weights. Every mark is in
    its panel's legend: the incident's shading, the SLO line, the event lines."""
    import matplotlib.pyplot as plt

    t = [s.t for s in run.samples]
    fig, axes = plt.subplots(4, 1, figsize=(10, 10), sharex=True)
    axes[0].plot(t, [s.offered for s in run.samples], label="offered req/s")
    axes[0].set_ylabel("req/s")
    p99 = [min(s.p99_ms, 5000) if s.p99_ms is not None else np.nan for s in run.samples]
    axes[1].plot(t, p99, label="observed p99 (10 s)")
    axes[1].plot(t, [s.forecast_p99_ms if s.forecast_p99_ms is not None else np.nan for s in run.samples],
                 linestyle="--", label="forecast peak p99 (upper band)")
    axes[1].axhline(run.settings.slo_ms, color="red", linewidth=1, label="SLO")
    axes[1].set_ylabel("ms")
    axes[1].set_yscale("log")
    for pool, color in (("a", "tab:blue"), ("b", "tab:orange")):
        axes[2].step(t, [s.ready[pool] for s in run.samples], where="post", color=color, label=f"{pool} ready")
        axes[2].step(t, [s.desired[pool] for s in run.samples], where="post", color=color, linestyle=":", label=f"{pool} desired")
    axes[2].set_ylabel("pods")
    axes[3].step(t, [s.weights["b"] for s in run.samples], where="post", label="weight to b %")
    axes[3].set_ylabel("% to b")
    axes[3].set_xlabel("seconds")
    if run.incident:
        inc = run.incident
        label = f"incident: pool {inc['pool']} x{inc['factor']:g} slower"
        for ax in axes:
            ax.axvspan(inc["start"], inc["start"] + inc["seconds"], color="red", alpha=0.08, label=label)
    marked = [(at, reason) for at, reason, _ in run.events if reason in MARKED_EVENTS]
    for i, (at, reason) in enumerate(marked):
        axes[3].axvline(at, color="grey", linewidth=0.8, label="operator event (named beside it)" if i == 0 else None)
        axes[3].annotate(reason, (at, 5), rotation=90, fontsize=7)
    for ax in axes:
        ax.legend(loc="upper left", fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle("forescale demo: incident handled end to end" if run.incident else "forescale demo: control run (no incident)")
    fig.tight_layout()
    return fig
