"""Forescale against each peer's whole cost-violation curve (docs/frontier.md).

For every trace, load scale and seed, with the default incident and with
`--incidents none`: Forescale runs once at its defaults, the HPA, KEDA and
Knative's KPA run at every peer utilisation U in 0.4..0.9 (each a point of
GPU-hours and violation seconds), and the oracle runs once. Then, per case:

| goal | when |
|---|---|
| violation s <= 0.25 x V(Forescale's GPU-hours) | with the incident |
| GPU-hours <= 1.0 x G(Forescale's violation s) | no incident, load scale 10 |
| GPU-hours <= G(v) + one B pod for the trace's duration | no incident, load scale 1 |
| EmergencyStarted == 0 | no incident |
| peak A replicas <= 1.5 x the oracle's | always |
| mean time to recover < 60 s | with the incident |

Every number is printed, met or not, and each miss is explained from the
replay (where the episodes were, the GPU split between A and B, the
emergencies). A missed goal is a finding: the benchmark exits 0 once it ran.

Traces: the dev traces (Azure conv, Mooncake, ServeGen m-mid and m-small)
from $FORESCALE_TRACES, plus traffic of our own making
(sim/forescale_sim/synthetic.py: bursty, ramp, drift, spikes; one trace per
seed, written as Azure CSV). Replays run in `--jobs` processes (default 2).

    .venv/bin/python -m bench.frontier [--quick] [--seeds 0,1,2] [--traces azure-conv,synth-bursty]
        [--scales 1,10] [--synthetic-scaled] [--forecaster lstm[,ewm,last,clairvoyant]] [--reserve 0,20] [--jobs 2]
        [--b-variant int8[,distilled-int8]] [--min-agreement 0.9] [--peers-from EARLIER.json] [--json]

`--quick`: seed 0, load scale 1, Azure conv and the bursty synthetic trace.
`--forecaster`, `--reserve` and `--b-variant` take comma lists: each
combination is one Forescale configuration placed against the same peer
curve; `--reserve` sets the spec's `warmReservePercent` (default: the spec's
own, 20); `--b-variant` pool B's model (docs/replay.md; the peers never use
B). `--min-agreement` sets Forescale's `emergency.minAgreement` in every
replay: a lighter B whose measured agreement is under it gets no traffic.
`--forecaster` defaults to `lstm,ewm,last,clairvoyant`: the forecaster ablation, which
prints, per dev trace, the LSTM's GPU-hours and violation seconds against the
better baseline's (goal: <= 0.9x the violation seconds at equal GPU-hours, or
<= 0.95x the GPU-hours at equal violation seconds, on 3 of the 4 dev traces),
and the same for a forecaster that reads the trace's arrivals ahead
(forescale_sim/clairvoyant.py): the most any rate forecast buys through this engine.
`--peers-from` takes the peers' curves and the oracle from an earlier run's `--json` (they do not
depend on the engine) and replays only Forescale's configurations for the cases it holds: seeds 0-2
in about a minute instead of half an hour, for comparing a change of the engine side by side.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Mapping

import numpy as np

from forescale_sim.frontier import PeerPoint, peer_cost_at_violations, peer_violations_at_cost
from forescale_sim.metrics import WINDOW_SECONDS
from forescale_sim.pool_b import DEFAULT_B_VARIANT
from forescale_profiles.variant_speed import POOL_B_VARIANTS

REPO = Path(__file__).resolve().parent.parent
TRACES = Path(os.environ.get("FORESCALE_TRACES", REPO.parent / "shared" / "traces"))
DEV_TRACES = {
    "azure-conv": ("azure-llm-2023/AzureLLMInferenceTrace_conv.csv", "azure"),
    "mooncake": ("mooncake/conversation_trace.jsonl", "mooncake"),
    "servegen-m-mid": ("servegen/m-mid", "servegen"),
    "servegen-m-small": ("servegen/m-small", "servegen"),
}
SYNTHETIC = ("bursty", "ramp", "drift", "spikes")
ALL_TRACES = (*DEV_TRACES, *(f"synth-{f}" for f in SYNTHETIC))
PEERS = ("hpa", "keda", "kpa")
UTILIZATIONS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: the peers' documented default, run in the same replay as Forescale and the oracle
DEFAULT_U = 0.7
QUICK_TRACES = ("azure-conv", "synth-bursty")
#: the engine's phases from EmergencyStarted to CutbackCompleted
INCIDENT_CYCLE = ("Emergency", "Recovering", "CuttingBack")

GOAL_VIOLATION_SHARE = 0.25
#: the forecaster ablation's goal: against the better of the baselines, at most this share of
#: the violation seconds at equal GPU-hours, or of the GPU-hours at equal violation seconds
ABLATION_BASELINES = ("ewm", "last")
GAIN_VIOLATION = 0.9
GAIN_GPU = 0.95
#: the forecaster that reads the trace ahead (forescale_sim.clairvoyant): where it ran, the ablation
#: places it too, as the most any rate forecast buys through this engine (`--forecaster ...,clairvoyant`)
CEILING = "clairvoyant"
#: "equal" GPU-hours: within 1% (a pod-hour in a hundred; the baselines' own sums differ by more
#: where their decisions differ at all)
EQUAL_GPU = 1.01
GOAL_GPU_SCALE10 = 1.0
GOAL_PEAK_RATIO = 1.5
GOAL_MTTR_SECONDS = 60.0
GOALS = {
    "violation": "with incident: violation s <= 0.25 x V(GPU-h)",
    "gpu@10": "no incident, scale 10: GPU-h <= 1.0 x G(violation s)",
    "gpu@1": "no incident, scale 1: GPU-h <= G(v) + one B pod",
    "no-emergency": "no incident: EmergencyStarted == 0",
    "peak": "peak A <= 1.5 x oracle's",
    "mttr": "with incident: MTTR < 60 s",
}


@dataclass(frozen=True)
class Variant:
    """One Forescale configuration: the forecaster, the warm reserve (None: the spec's default) and
    pool B's model (forescale_sim.pool_b; the label names it only when it is not the default)."""

    forecaster: str
    reserve: int | None
    b_variant: str = DEFAULT_B_VARIANT

    @property
    def label(self) -> str:
        b = "" if self.b_variant == DEFAULT_B_VARIANT else f"/b {self.b_variant}"
        return f"{self.forecaster}/reserve {'default' if self.reserve is None else self.reserve}{b}"


# ---------------------------------------------------------------- the replays (in worker processes)

def episode_fleet(rec, start: float, recovered: float) -> dict:
    """Pool A's pods around one episode, from the replay's per-second record: the ready pods at its
    start, when more were first asked for and first ready, and B's ready pods and weight. A recovery
    that waited for new pods (their start-up) shows as `recovered` shortly after `a_new_ready_at`."""
    last = rec.ready.shape[1] - 1
    i, end = min(int(start), last), min(int(recovered), last) + 1
    a0 = int(rec.ready[0][i])

    def first(row: np.ndarray) -> float | None:
        hits = np.flatnonzero(row[i:end] > a0)
        return float(i + hits[0]) if hits.size else None

    asked_at = first(rec.replicas[0])
    return {"start": float(start), "recovered": float(recovered), "a_ready": a0, "a_asked_at": asked_at,
            "a_asked": int(rec.replicas[0][int(asked_at)]) if asked_at is not None else a0,
            "a_new_ready_at": first(rec.ready[0]), "b_ready": int(rec.ready[1][i]),
            "b_weight_peak": int(rec.weight_b[i:end].max())}


def _forescale_summary(run, duration: float, incidents: list) -> dict:
    """What the goals and their explanations need from Forescale's run, as plain data."""
    from forescale_sim.metrics import episodes, recovery_seconds

    d = run.to_dict()
    rec = run.recorder
    eps = episodes(run.windows_over)
    ttr = recovery_seconds(run.windows_over)
    peak_tick = int(rec.replicas[0].argmax())
    per_s = rec.arrivals.sum(0)
    changes = d.get("phase_changes", [])
    # EmergencyStarted is an entry into Emergency from outside the incident cycle; an entry
    # from Recovering or CuttingBack is the same incident going back (CutbackAborted)
    starts = [t for i, (t, phase) in enumerate(changes)
              if phase == "Emergency" and (i == 0 or changes[i - 1][1] not in INCIDENT_CYCLE)]
    reentries = sum(1 for i, (_, phase) in enumerate(changes)
                    if phase == "Emergency" and i > 0 and changes[i - 1][1] in INCIDENT_CYCLE)
    return {
        **{k: d.get(k) for k in ("violation_seconds", "gpu_hours", "mttr_seconds", "episodes", "peak_replicas",
                                  "events", "phase_seconds", "forecast_models", "rejected")},
        "gpu_hours_a": float(rec.replicas[0].sum()) / 3600.0,
        "gpu_hours_b": float(rec.replicas[1].sum()) / 3600.0,
        "episode_spans": [[a * WINDOW_SECONDS, b * WINDOW_SECONDS, t, c] for (a, b), (t, c) in zip(eps, ttr)],
        "episode_fleets": [episode_fleet(rec, a * WINDOW_SECONDS, a * WINDOW_SECONDS + t) for (a, _), (t, _) in zip(eps[:4], ttr)],
        "emergency_starts": starts,
        "emergency_reentries": reentries,
        "incident_cycle_seconds": sum(v for k, v in (d.get("phase_seconds") or {}).items() if k in INCIDENT_CYCLE),
        # the load in the minute before each: a burst read as a slowdown shows here
        "rate_before_emergency": [float(per_s[max(0, int(t) - 60):int(t)].mean()) if t >= 1 else 0.0 for t in starts],
        "peak_a_at": peak_tick,
        "rate_at_peak_60s": float(rec.arrivals.sum(0)[max(0, peak_tick - 60):peak_tick + 1].mean()),
        "mean_rate": float(rec.arrivals.sum()) / max(duration, 1.0),
    }


def run_job(job: dict) -> dict:
    """One `run_replay`; returns plain data (the recorders stay in the worker)."""
    from forescale_sim.session import ReplayOptions, run_replay

    overrides = {} if job["reserve"] is None else {"warmReservePercent": job["reserve"]}
    if job.get("min_agreement") is not None:
        overrides["emergency"] = {"minAgreement": job["min_agreement"]}
    started = time.monotonic()
    result = run_replay(ReplayOptions(
        job["path"], job["fmt"], policies=job["policies"], seed=job["seed"],
        incidents=None if job["incident"] else "none", forecaster=job["forecaster"], spec_overrides=overrides or None,
        peer_utilization=job["u"], load_scale=job["scale"], b_variant=job.get("b_variant", DEFAULT_B_VARIANT),
        progress=lambda _msg: None))
    out = {"job": job, "duration_seconds": result.duration_seconds, "seconds": time.monotonic() - started,
           "incidents": [i.to_dict() for i in result.incidents], "forecaster_label": result.forecaster,
           "policies": {}}
    for name, run in result.runs.items():
        if name == "forescale":
            out["policies"][name] = _forescale_summary(run, result.duration_seconds, result.incidents)
        else:
            out["policies"][name] = {"violation_seconds": run.slo.violation_seconds, "gpu_hours": run.gpu_hours,
                                     "mttr_seconds": run.slo.mttr_seconds, "peak_replicas": dict(run.peak_replicas)}
    return out


# ---------------------------------------------------------------- the matrix

def _synthetic_paths(labels: list[str], seeds: list[int], folder: Path) -> dict[tuple[str, int], str]:
    from forescale_sim.synthetic import Shape, write_azure_csv

    paths = {}
    for label in labels:
        if label.startswith("synth-"):
            for seed in seeds:
                paths[(label, seed)] = str(write_azure_csv(Shape(label.removeprefix("synth-"), seed=seed),
                                                           folder / f"{label}-seed{seed}.csv"))
    return paths


def plan_jobs(labels: list[str], scales: list[float], seeds: list[int], variants: list[Variant],
              synthetic: dict[tuple[str, int], str], synthetic_scaled: bool = False,
              known: Mapping[tuple, dict] | None = None, min_agreement: float | None = None) -> list[dict]:
    """Per case (trace, scale, seed, incident): Forescale (first variant), the oracle and the peers at
    the default U in one replay; the peers at every other U; each further variant alone. A case whose
    peers and oracle are `known` (from `--peers-from`) runs each variant alone.

    Synthetic traces run at load scale 1 only unless `synthetic_scaled`: at 10x, ramp and drift
    (40 req/s peaks) need more than maxReplicas 100 pods, so the case would measure the cap, and
    ramp's x10 replay of HPA and oracle alone took 262 s here."""
    jobs = []
    for label, scale, seed, incident in product(labels, scales, seeds, (True, False)):
        if label not in DEV_TRACES and scale != 1 and not synthetic_scaled:
            continue
        if label in DEV_TRACES:
            rel, fmt = DEV_TRACES[label]
            path = str(TRACES / rel)
        else:
            path, fmt = synthetic[(label, seed)], "azure"
        base = {"label": label, "path": path, "fmt": fmt, "scale": scale, "seed": seed, "incident": incident,
                "min_agreement": min_agreement}
        alone = [{**base, "u": DEFAULT_U, "policies": ["forescale"], "forecaster": v.forecaster, "reserve": v.reserve,
                  "b_variant": v.b_variant} for v in variants]
        if known and (label, scale, seed, incident) in known:
            jobs += alone
            continue
        first = variants[0]
        jobs.append({**base, "u": DEFAULT_U, "policies": ["forescale", "oracle", *PEERS],
                     "forecaster": first.forecaster, "reserve": first.reserve, "b_variant": first.b_variant})
        for u in UTILIZATIONS:
            if u != DEFAULT_U:
                jobs.append({**base, "u": u, "policies": list(PEERS), "forecaster": first.forecaster, "reserve": None})
        jobs += alone[1:]
    # heaviest first, so two workers finish together
    return sorted(jobs, key=lambda j: (-j["scale"], -len(j["policies"])))


# ---------------------------------------------------------------- goals and explanations

def curve_free_goals(incident: bool, peak_a: int, oracle_a: int, emergencies: int, mttr: float) -> dict[str, tuple[bool, str]]:
    """The goals that need no peer curve, each (met, the check written out): MTTR with the incident, no
    emergency without it, peak A always. bench/unseen_traffic.py checks these alone."""
    goals = {}
    if incident:
        goals["mttr"] = (mttr < GOAL_MTTR_SECONDS, f"{mttr:.0f} < {GOAL_MTTR_SECONDS:.0f}")
    else:
        goals["no-emergency"] = (emergencies == 0, f"{emergencies} == 0")
    goals["peak"] = (peak_a <= GOAL_PEAK_RATIO * oracle_a, f"{peak_a} <= {GOAL_PEAK_RATIO} x {oracle_a} = {GOAL_PEAK_RATIO * oracle_a:g}")
    return goals


def evaluate(case: dict, fs: dict, oracle: dict, points: list[PeerPoint]) -> dict:
    """The goals that apply to one case and one Forescale configuration, with every number."""
    g, v = fs["gpu_hours"], fs["violation_seconds"]
    V, G = peer_violations_at_cost(points, g), peer_cost_at_violations(points, v)
    b_pod_hours = case["duration_seconds"] / 3600.0
    peak_a, oracle_a = fs["peak_replicas"]["a"], oracle["peak_replicas"]["a"]
    emergencies = int(fs["events"].get("EmergencyStarted", 0))
    goals = {}
    if case["incident"]:
        goals["violation"] = (v <= GOAL_VIOLATION_SHARE * V, f"{v:.0f} <= {GOAL_VIOLATION_SHARE} x {V:.0f} = {GOAL_VIOLATION_SHARE * V:.1f}")
    elif case["scale"] >= 10:
        goals["gpu@10"] = (g <= GOAL_GPU_SCALE10 * G, f"{g:.3f} <= {GOAL_GPU_SCALE10} x {G:.3f}")
    elif case["scale"] == 1:
        goals["gpu@1"] = (g <= G + b_pod_hours, f"{g:.3f} <= {G:.3f} + {b_pod_hours:.3f}")
    goals.update(curve_free_goals(case["incident"], peak_a, oracle_a, emergencies, fs["mttr_seconds"]))
    return {"V": V, "G": G, "emergencies": emergencies, "peak_a": peak_a, "oracle_peak_a": oracle_a,
            "goals": {k: {"met": bool(met), "check": check} for k, (met, check) in goals.items()}}


def _best_point(points: list[PeerPoint], key) -> str:
    p = min(points, key=key)
    return f"{p.policy}@U{p.utilization:g} ({p.gpu_hours:.3f} GPU-h, {p.violation_seconds:.0f} s)"


def explain(goal: str, case: dict, fs: dict, oracle: dict, points: list[PeerPoint], ev: dict) -> str:
    """One line: why `goal` was missed, from the replay's own record."""
    inc = case["incidents"][0] if case["incidents"] else None
    spans = fs["episode_spans"]
    where = ", ".join(f"{a:.0f}-{b:.0f} s (recovered in {t:.0f} s{', censored' if c else ''})" for a, b, t, c in spans[:4])
    where += f" and {len(spans) - 4} more" if len(spans) > 4 else ""
    split = (f"GPU-h A {fs['gpu_hours_a']:.3f} / B {fs['gpu_hours_b']:.3f}, peak A {fs['peak_replicas']['a']} B "
             f"{fs['peak_replicas']['b']}, {ev['emergencies']} emergencies, {fs['violation_seconds']:.0f} violation s")
    if goal == "violation":
        in_inc = sum(1 for a, *_ in spans if inc and inc["start"] <= a < inc["start"] + inc["seconds"])
        cheap = [p for p in points if p.gpu_hours <= fs["gpu_hours"]]
        best = (_best_point(cheap, lambda p: (p.violation_seconds, p.gpu_hours)) if cheap else
                "no peer point that cheap, so the cheapest: " + _best_point(points, lambda p: (p.gpu_hours, p.violation_seconds)))
        return (f"{len(spans)} episode(s): {where}; {in_inc} began inside the incident "
                f"({inc['start']:.0f}-{inc['start'] + inc['seconds']:.0f} s); V(g) from {best}" if inc else where)
    if goal in ("gpu@10", "gpu@1"):
        ok = [p for p in points if p.violation_seconds <= fs["violation_seconds"]]
        best = (_best_point(ok, lambda p: (p.gpu_hours, p.violation_seconds)) if ok else
                "no peer point that good, so the one with the fewest: " + _best_point(points, lambda p: (p.violation_seconds, p.gpu_hours)))
        return f"{split}; G(v) from {best}; oracle {oracle['gpu_hours']:.3f} GPU-h"
    if goal == "no-emergency":
        starts = ", ".join(f"{t:.0f} s (prior minute {r:.2f} req/s)"
                           for t, r in zip(fs["emergency_starts"][:6], fs["rate_before_emergency"]))
        return (f"emergency started at {starts or '(no phase change recorded)'} with no incident injected, "
                f"trace mean {fs['mean_rate']:.2f} req/s; back to Emergency from Recovering or CuttingBack {fs['emergency_reentries']} "
                f"time(s), {fs['incident_cycle_seconds']:.0f} s in the incident's phases; {split}")
    if goal == "peak":
        return (f"A peaked at {fs['peak_replicas']['a']} pods at {fs['peak_a_at']} s, where the last 60 s averaged "
                f"{fs['rate_at_peak_60s']:.2f} req/s (trace mean {fs['mean_rate']:.2f}); oracle peak {oracle['peak_replicas']['a']}; "
                f"{ev['emergencies']} emergencies")
    if goal == "mttr":
        return "; ".join(_recovery_story(f, inc) for f in fs.get("episode_fleets", [])) or f"recovery times: {where}"
    return ""


def _recovery_story(f: dict, inc: dict | None) -> str:
    """One episode's recovery told from the pods: did it wait for A's new pods? An episode that began
    before the incident (the trace's first minutes, a burst) is named so: it counts in the mean too."""
    when = ("" if inc is None else " (before the incident)" if f["start"] + WINDOW_SECONDS <= inc["start"] else
            " (after the incident)" if f["start"] >= inc["start"] + inc["seconds"] else " (in the incident)")
    head = (f"{f['start']:.0f}-{f['recovered']:.0f} s{when}: A had {f['a_ready']} ready pods, B {f['b_ready']} "
            f"(B's weight up to {f['b_weight_peak']}%)")
    if f["a_asked_at"] is None:
        return head + "; under the SLO again without more pods for A"
    if f["a_new_ready_at"] is None:
        return head + f"; A asked for {f['a_asked']} at {f['a_asked_at']:.0f} s, under the SLO again before any was ready"
    ready = f["a_new_ready_at"]
    return (head + f"; A asked for {f['a_asked']} at {f['a_asked_at']:.0f} s, the first ready at {ready:.0f} s "
            f"({ready - f['a_asked_at']:.0f} s later); under the SLO again {f['recovered'] - ready:.0f} s after it")


def assemble(results: list[dict], variants: list[Variant], known: Mapping[tuple, dict] | None = None) -> list[dict]:
    """Group the replays by case; one row per case and Forescale configuration. A `known` case
    takes its peer points and oracle from there."""
    def key_of(job: dict) -> tuple:
        return job["label"], job["scale"], job["seed"], job["incident"]

    ran = {key_of(r["job"]) for r in results}
    cases: dict[tuple, dict] = {key: {**case, "points": list(case["points"]), "forescale": {}, "replay_seconds": 0.0}
                                for key, case in (known or {}).items() if key in ran}
    for r in results:
        j = r["job"]
        key = key_of(j)
        case = cases.setdefault(key, {"trace": j["label"], "scale": j["scale"], "seed": j["seed"], "incident": j["incident"],
                                      "duration_seconds": r["duration_seconds"], "incidents": r["incidents"],
                                      "points": [], "forescale": {}, "oracle": None, "replay_seconds": 0.0})
        case["replay_seconds"] += r["seconds"]
        for name, row in r["policies"].items():
            if name in PEERS:
                case["points"].append(PeerPoint(name, j["u"], row["gpu_hours"], row["violation_seconds"]))
            elif name == "oracle":
                case["oracle"] = row
            elif name == "forescale":
                variant = Variant(j["forecaster"], j["reserve"], j.get("b_variant", DEFAULT_B_VARIANT))
                case["forescale"][variant.label] = {**row, "forecaster": r["forecaster_label"]}
    rows = []
    for key in sorted(cases, key=lambda k: (ALL_TRACES.index(k[0]), k[1], k[2], not k[3])):
        case = cases[key]
        for variant in variants:
            fs = case["forescale"][variant.label]
            ev = evaluate(case, fs, case["oracle"], case["points"])
            misses = {g: explain(g, case, fs, case["oracle"], case["points"], ev)
                      for g, res in ev["goals"].items() if not res["met"]}
            rows.append({**{k: case[k] for k in ("trace", "scale", "seed", "incident", "duration_seconds", "incidents",
                                                 "replay_seconds")},
                         "variant": variant.label, "forescale": fs, "oracle": case["oracle"],
                         "peer_points": [p.__dict__ for p in sorted(case["points"], key=lambda p: (p.policy, p.utilization))],
                         **ev, "misses": misses})
    set_incident_free(rows)
    return rows


def set_incident_free(rows: list[dict]) -> None:
    """Set beside each row with the incident the same trace, scale, seed and configuration without it:
    Forescale's violation seconds there, and the peers' fewest on that curve at the incident row's
    GPU-hours. A violation miss whose incident-free seconds are already over the goal's share of V is
    the traffic's own noise at that cost, not the incident response (docs/frontier.md, "The violation
    goal and the traffic's own noise"); the miss's line says which."""
    by_key = {(r["trace"], r["scale"], r["seed"], r["incident"], r["variant"]): r for r in rows}
    for row in rows:
        quiet = by_key.get((row["trace"], row["scale"], row["seed"], False, row["variant"])) if row["incident"] else None
        if quiet is None:
            continue
        v_quiet = quiet["forescale"]["violation_seconds"]
        peers_quiet = peer_violations_at_cost([PeerPoint(**p) for p in quiet["peer_points"]], row["forescale"]["gpu_hours"])
        allowed = GOAL_VIOLATION_SHARE * row["V"]
        row["incident_free"] = {"violation_seconds": v_quiet, "peers_V": peers_quiet, "allowed": allowed}
        if "violation" in row["misses"]:
            row["misses"]["violation"] += (
                f"; without the incident the same seed spent {v_quiet:.0f} s "
                f"({'already over' if v_quiet > allowed else 'within'} the goal's {allowed:.1f}), and the peers' fewest "
                f"without it at {row['forescale']['gpu_hours']:.3f} GPU-h {peers_quiet:.0f} s")


def violation_floor(rows: list[dict]) -> dict:
    """Per configuration: the violation misses, how many of them Forescale's own incident-free seconds
    already put over the goal's share, and how many the best peer's incident-free seconds would too."""
    out: dict = {}
    for row in rows:
        missed = row["incident"] and not row["goals"]["violation"]["met"]
        if not missed or "incident_free" not in row:
            continue
        free = row["incident_free"]
        counts = out.setdefault(row["variant"], {"misses": 0, "over_without_incident": 0, "peers_over_without_incident": 0})
        counts["misses"] += 1
        if free["violation_seconds"] > free["allowed"]:
            counts["over_without_incident"] += 1
            counts["peers_over_without_incident"] += free["peers_V"] > free["allowed"]
    return out


def print_violation_floor(floor: dict) -> None:
    for variant, c in floor.items():
        print(f"forescale {variant}: of {c['misses']} violation misses, {c['over_without_incident']} are over the goal's "
              f"share on the same seed without the incident, {c['peers_over_without_incident']} of those even for the "
              f"best peer at Forescale's GPU-hours")


def forecaster_gain(rows: list[dict], main_forecaster: str = "lstm") -> list[dict]:
    """The forecaster ablation per dev trace: each forecaster's GPU-hours and violation seconds summed
    over the trace's cases (scales, seeds, with and without the incident) at the same reserve, each
    placed against the peers' curve, and the main forecaster against the better-placed baseline.

    Placed: a forecaster's violation seconds over what the peers' curve gives for its GPU-hours
    (`v / V(g)`, summed over the cases), and its GPU-hours over what the curve needs for its violation
    seconds (`g / G(v)`). Two forecasters that land at different costs are then compared at equal
    GPU-hours (or equal violation seconds) through the curve, which is what trading one for the other
    costs any autoscaler here: `v_main / V(g_main)` over the better baseline's is "the violation
    seconds at equal GPU-hours", and likewise for GPU-hours. Met: <= GAIN_VIOLATION or <= GAIN_GPU.

    Also reported, unplaced: the better baseline by fewer violation seconds, then fewer GPU-hours, and
    the two sums' ratios, with "equal GPU-hours" meaning within EQUAL_GPU (the measure before the
    placement: a point bought with 2% more GPU could never count)."""
    sums: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in rows:
        if r["trace"] not in DEV_TRACES:
            continue
        forecaster, reserve = r["variant"].split("/", 1)
        cell = sums.setdefault((r["trace"], reserve), {}).setdefault(forecaster, [0.0, 0.0, 0.0, 0.0])
        cell[0] += r["forescale"]["gpu_hours"]
        cell[1] += r["forescale"]["violation_seconds"]
        cell[2] += r.get("V", math.nan)
        cell[3] += r.get("G", math.nan)
    out = []
    for (trace, reserve), by in sums.items():
        bases = [f for f in ABLATION_BASELINES if f in by]
        if main_forecaster not in by or not bases:
            continue
        g, v = by[main_forecaster][:2]
        base = min(bases, key=lambda f: (by[f][1], by[f][0]))
        bg, bv = by[base][:2]
        v_ratio = v / bv if bv > 0 else (1.0 if v == 0 else float("inf"))
        g_ratio = g / bg if bg > 0 else float("inf")
        direct_met = (v_ratio <= GAIN_VIOLATION and g_ratio <= EQUAL_GPU) or (g_ratio <= GAIN_GPU and v <= bv)
        ceiling = [CEILING] if CEILING in by and main_forecaster != CEILING else []
        placed = {f: {"violation_to_curve": _ratio(by[f][1], by[f][2]), "gpu_to_curve": _ratio(by[f][0], by[f][3])}
                  for f in [main_forecaster, *bases, *ceiling]}
        mine = placed[main_forecaster]
        v_base = min(bases, key=lambda f: placed[f]["violation_to_curve"])
        g_base = min(bases, key=lambda f: placed[f]["gpu_to_curve"])
        placed_v = _ratio(mine["violation_to_curve"], placed[v_base]["violation_to_curve"])
        placed_g = _ratio(mine["gpu_to_curve"], placed[g_base]["gpu_to_curve"])
        out.append({"trace": trace, "reserve": reserve, "gpu_hours": g, "violation_seconds": v,
                    "baselines": {f: {"gpu_hours": by[f][0], "violation_seconds": by[f][1]} for f in bases},
                    "better_baseline": base, "violation_ratio": v_ratio, "gpu_ratio": g_ratio, "direct_met": bool(direct_met),
                    "placed": placed, "placed_violation_ratio": placed_v, "placed_violation_baseline": v_base,
                    "placed_gpu_ratio": placed_g, "placed_gpu_baseline": g_base,
                    "met": bool(placed_v <= GAIN_VIOLATION or placed_g <= GAIN_GPU),
                    # the clairvoyant forecaster against the same baselines, placed the same way: the gain
                    # a perfect rate forecast would show (None where it did not run)
                    "ceiling": _ceiling(by[CEILING], placed[CEILING], placed[v_base], placed[g_base]) if ceiling else None})
    return out


def _ceiling(sums: list[float], mine: dict, v_base: dict, g_base: dict) -> dict:
    """The clairvoyant forecaster's sums and placed ratios against the baselines the LSTM is held to."""
    v = _ratio(mine["violation_to_curve"], v_base["violation_to_curve"])
    g = _ratio(mine["gpu_to_curve"], g_base["gpu_to_curve"])
    return {"gpu_hours": sums[0], "violation_seconds": sums[1], "placed_violation_ratio": v, "placed_gpu_ratio": g,
            "within_reach": bool(v <= GAIN_VIOLATION or g <= GAIN_GPU)}


def _ratio(a: float, b: float) -> float:
    """a / b, where 0 / 0 is 1 (both at the curve's floor), x / 0 is infinite, and NaN stays NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if b > 0:
        return a / b
    return 1.0 if a == 0 else math.inf


def print_gain(gains: list[dict], main_forecaster: str = "lstm") -> None:
    if not gains:
        return
    print(f"\n=== forecaster ablation: {main_forecaster} against the better of {', '.join(ABLATION_BASELINES)}, "
          f"per dev trace (sums over its cases), each placed against the peers' curve ===")
    for g in gains:
        bases = "  ".join(f"{f} {b['gpu_hours']:.2f}/{b['violation_seconds']:.0f}" for f, b in g["baselines"].items())
        placed = "  ".join(f"{f} v/V(g) {p['violation_to_curve']:.2f}, g/G(v) {p['gpu_to_curve']:.3f}"
                           for f, p in g["placed"].items())
        print(f"{g['trace']:17s} {g['reserve']:16s} {main_forecaster} {g['gpu_hours']:.2f} GPU-h/{g['violation_seconds']:.0f} s  "
              f"{bases}\n    placed: {placed}\n"
              f"    at equal GPU-h (through the curve): {g['placed_violation_ratio']:.2f}x {g['placed_violation_baseline']}'s "
              f"violation s; at equal violation s: {g['placed_gpu_ratio']:.3f}x {g['placed_gpu_baseline']}'s GPU-h  "
              f"{'met' if g['met'] else 'MISSED'}\n"
              f"    unplaced, vs {g['better_baseline']}: violation {g['violation_ratio']:.2f}x, GPU-h {g['gpu_ratio']:.3f}x "
              f"({'met' if g['direct_met'] else 'missed'} with equal GPU-h = within {EQUAL_GPU - 1:.0%})")
        c = g.get("ceiling")
        if c:
            print(f"    ceiling, {CEILING} {c['gpu_hours']:.2f} GPU-h/{c['violation_seconds']:.0f} s: "
                  f"{c['placed_violation_ratio']:.2f}x {g['placed_violation_baseline']}'s violation s at equal GPU-h, "
                  f"{c['placed_gpu_ratio']:.3f}x {g['placed_gpu_baseline']}'s GPU-h at equal violation s "
                  f"({'within' if c['within_reach'] else 'outside'} the goal's reach)")
    met = sum(g["met"] for g in gains)
    print(f"  <= {GAIN_VIOLATION} x violation s at equal GPU-h, or <= {GAIN_GPU} x GPU-h at equal violation s, placed "
          f"against the peers' curve: met on {met} of {len(gains)} (goal: 3 of 4 dev traces)")
    ceilings = [g["ceiling"] for g in gains if g.get("ceiling")]
    if ceilings:
        reach = sum(c["within_reach"] for c in ceilings)
        print(f"  {CEILING}, the trace's own arrivals as the forecast, would meet it on {reach} of {len(ceilings)}: "
              f"where it does not, knowing the rate exactly is not enough and the engine's other parts set the cost")


# ---------------------------------------------------------------- printing

def _fmt_case(row: dict) -> str:
    return f"{row['trace']} x{row['scale']:g} seed {row['seed']} {'incident' if row['incident'] else 'no incident'}"


def print_rows(rows: list[dict]) -> None:
    print(f"{'case':44s} {'config':22s} {'GPU-h':>7s} {'viol s':>6s} {'MTTR':>5s} {'V(g)':>6s} {'v/V':>5s} "
          f"{'G(v)':>7s} {'g/G':>5s} {'peakA':>5s} {'orcA':>4s} {'emerg':>5s}  goals")
    for row in rows:
        fs = row["forescale"]
        v, g = fs["violation_seconds"], fs["gpu_hours"]
        v_ratio = f"{v / row['V']:.2f}" if row["V"] else ("0" if v == 0 else "inf")
        goals = "  ".join(f"{k}:{'met' if r['met'] else 'MISSED'}" for k, r in row["goals"].items())
        print(f"{_fmt_case(row):44s} {row['variant']:22s} {g:7.3f} {v:6.0f} {fs['mttr_seconds']:5.0f} {row['V']:6.0f} {v_ratio:>5s} "
              f"{row['G']:7.3f} {g / row['G']:5.2f} {row['peak_a']:5d} {row['oracle_peak_a']:4d} {row['emergencies']:5d}  {goals}")
        for goal, res in row["goals"].items():
            if not res["met"]:
                print(f"    miss {goal} ({res['check']}): {row['misses'][goal]}")


def print_curves(rows: list[dict]) -> None:
    """Each case's peer points, once per case."""
    seen = set()
    for row in rows:
        key = _fmt_case(row)
        if key in seen:
            continue
        seen.add(key)
        pts = row["peer_points"]
        o = row["oracle"]
        cells = "  ".join(f"{p['policy']}@{p['utilization']:g} {p['gpu_hours']:.2f}/{p['violation_seconds']:.0f}" for p in pts)
        print(f"{key}: oracle {o['gpu_hours']:.2f}/{o['violation_seconds']:.0f} peak A {o['peak_replicas']['a']}; "
              f"peers (GPU-h/violation s): {cells}")


def summary(rows: list[dict]) -> dict:
    out = {}
    for goal in GOALS:
        for variant in dict.fromkeys(r["variant"] for r in rows):
            checked = [r for r in rows if r["variant"] == variant and goal in r["goals"]]
            if checked:
                out.setdefault(variant, {})[goal] = {"met": sum(r["goals"][goal]["met"] for r in checked), "of": len(checked)}
    return out


def print_summary(summ: dict) -> None:
    print("\n=== goals met, per goal ===")
    for variant, goals in summ.items():
        print(f"forescale {variant}:")
        for goal, res in goals.items():
            print(f"  {GOALS[goal]:58s} {res['met']:3d} / {res['of']:3d}")


def print_reserve(rows: list[dict], variants: list[Variant]) -> None:
    """Recovery time against GPU-hours, per reserve, side by side (same forecaster)."""
    reserves = list(dict.fromkeys(v.reserve for v in variants))
    if len(reserves) < 2:
        return
    print("\n=== warm reserve: recovery time vs GPU-hours ===")
    by_case: dict[tuple, dict] = {}
    for row in rows:
        by_case.setdefault((_fmt_case(row), row["variant"].split("/")[0]), {})[row["variant"]] = row
    for (case, forecaster), group in by_case.items():
        cells = "  |  ".join(f"{label.split('/')[1]}: MTTR {r['forescale']['mttr_seconds']:.0f} s, viol {r['forescale']['violation_seconds']:.0f} s, "
                             f"GPU-h {r['forescale']['gpu_hours']:.3f} (B {r['forescale']['gpu_hours_b']:.3f})"
                             for label, r in group.items())
        print(f"{case:44s} {forecaster:11s} {cells}")


# ---------------------------------------------------------------- main

def load_peers(path: str) -> dict[tuple, dict]:
    """The peer points and oracle of each case in an earlier `--json` output, by (trace, scale, seed,
    incident). Raises ValueError naming what is wrong with the file."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON ({exc.msg} at line {exc.lineno}); write it with --json") from None
    rows = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path} holds no cases; write it with bench.frontier --json")
    known: dict[tuple, dict] = {}
    for i, row in enumerate(rows):
        try:
            key = (str(row["trace"]), float(row["scale"]), int(row["seed"]), bool(row["incident"]))
            points = [PeerPoint(str(p["policy"]), float(p["utilization"]), float(p["gpu_hours"]),
                                float(p["violation_seconds"])) for p in row["peer_points"]]
            case = {"trace": key[0], "scale": key[1], "seed": key[2], "incident": key[3], "points": points,
                    "oracle": dict(row["oracle"]), "duration_seconds": float(row["duration_seconds"]),
                    "incidents": list(row["incidents"])}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: case {i} lacks a usable {exc}; write the file with bench.frontier --json") from None
        if not points:
            raise ValueError(f"{path}: case {i} ({key[0]} x{key[1]:g} seed {key[2]}) has no peer points")
        known.setdefault(key, case)
    return known


def _csv(text: str, cast, flag: str) -> list:
    try:
        values = [cast(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"bench.frontier: {flag}: not a comma list of numbers: {text!r}") from None
    if not values:
        raise SystemExit(f"bench.frontier: {flag}: empty")
    return values


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="seed 0, load scale 1, Azure conv and synth-bursty")
    p.add_argument("--seeds", default=None, help="comma list (default 0,1,2)")
    p.add_argument("--traces", default=None, help=f"comma list of {', '.join(ALL_TRACES)}")
    p.add_argument("--scales", default=None, help="comma list of load scales (default 1,10)")
    p.add_argument("--forecaster", default=f"lstm,ewm,last,{CEILING}",
                   help="comma list: lstm, ewm, last, clairvoyant, ... (the first is the main configuration; "
                        "with ewm or last beside lstm, the ablation is printed; clairvoyant is its ceiling)")
    p.add_argument("--reserve", default=None, help="comma list of warmReservePercent values, e.g. 0,20")
    p.add_argument("--b-variant", default=None,
                   help=f"comma list of pool B's models: {', '.join(POOL_B_VARIANTS)} (default {DEFAULT_B_VARIANT}; docs/replay.md)")
    p.add_argument("--min-agreement", type=float, default=None,
                   help="Forescale's emergency.minAgreement in every replay (default: the spec's 0.97); a lighter B's "
                        "measured agreement must reach it for traffic to move to B")
    p.add_argument("--synthetic-scaled", action="store_true", help="also run the synthetic traces at scales other than 1")
    p.add_argument("--jobs", type=int, default=2, help="replays run at once (processes)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--peers-from", default=None, metavar="FILE",
                   help="take the peers' curves and the oracle from an earlier --json output; replay Forescale alone")
    args = p.parse_args(argv)
    try:
        args.known = load_peers(args.peers_from) if args.peers_from else None
    except ValueError as exc:
        p.error(f"--peers-from: {exc}")
    args.seeds = _csv(args.seeds, int, "--seeds") if args.seeds else ([0] if args.quick else [0, 1, 2])
    args.scales = _csv(args.scales, float, "--scales") if args.scales else ([1.0] if args.quick else [1.0, 10.0])
    args.traces = [t.strip() for t in args.traces.split(",") if t.strip()] if args.traces else list(QUICK_TRACES if args.quick else ALL_TRACES)
    unknown = [t for t in args.traces if t not in ALL_TRACES]
    if unknown:
        raise SystemExit(f"bench.frontier: --traces: unknown {', '.join(unknown)}; choose from {', '.join(ALL_TRACES)}")
    reserves = _csv(args.reserve, int, "--reserve") if args.reserve else [None]
    forecasters = [f.strip() for f in args.forecaster.split(",") if f.strip()]
    b_variants = [b.strip() for b in args.b_variant.split(",") if b.strip()] if args.b_variant else [DEFAULT_B_VARIANT]
    unknown = [b for b in b_variants if b not in POOL_B_VARIANTS]
    if unknown:
        raise SystemExit(f"bench.frontier: --b-variant: unknown {', '.join(unknown)}; choose from {', '.join(POOL_B_VARIANTS)}")
    args.variants = [Variant(f, r, b) for f, r, b in product(forecasters, reserves, b_variants)]
    if args.min_agreement is not None and not 0 < args.min_agreement <= 1:
        raise SystemExit(f"bench.frontier: --min-agreement must be in (0, 1], got {args.min_agreement}")
    if args.jobs < 1:
        raise SystemExit("bench.frontier: --jobs must be >= 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if any(t in DEV_TRACES for t in args.traces) and not TRACES.is_dir():
        print(f"real traces not found at {TRACES}; set FORESCALE_TRACES", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="frontier-") as tmp:
        synthetic = _synthetic_paths(args.traces, args.seeds, Path(tmp))
        jobs = plan_jobs(args.traces, args.scales, args.seeds, args.variants, synthetic, args.synthetic_scaled, args.known,
                         args.min_agreement)
        print(f"{len(jobs)} replays in {args.jobs} processes: traces {', '.join(args.traces)}; scales "
              f"{', '.join(f'{s:g}' for s in args.scales)}; seeds {args.seeds}; configurations "
              f"{', '.join(v.label for v in args.variants)}", file=sys.stderr, flush=True)
        results = []
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(run_job, job): job for job in jobs}
            for done, fut in enumerate(as_completed(futures), 1):
                job = futures[fut]
                try:
                    results.append(fut.result())
                except Exception as exc:  # a bad trace or spec: say which replay, then stop
                    print(f"replay failed: {job['label']} x{job['scale']:g} seed {job['seed']} U {job['u']}: {exc}", file=sys.stderr)
                    for f in futures:
                        f.cancel()
                    return 2
                print(f"  [{done}/{len(jobs)}] {job['label']} x{job['scale']:g} seed {job['seed']} "
                      f"{'incident' if job['incident'] else 'none'} U {job['u']:g} {','.join(job['policies'])}: "
                      f"{results[-1]['seconds']:.0f} s", file=sys.stderr, flush=True)
    rows = assemble(results, args.variants, args.known)
    summ = summary(rows)
    floor = violation_floor(rows)
    gains = forecaster_gain(rows)
    wall = time.monotonic() - started
    if args.json:
        print(json.dumps({"traces": args.traces, "scales": args.scales, "seeds": args.seeds,
                          "utilizations": list(UTILIZATIONS), "configurations": [v.label for v in args.variants],
                          "cases": rows, "summary": summ, "violation_floor": floor, "forecaster_gain": gains, "wall_seconds": round(wall, 1)},
                         default=str))
        return 0
    print("=== peer curves ===")
    print_curves(rows)
    print("\n=== Forescale against the peer curve, per case ===")
    print_rows(rows)
    print_summary(summ)
    print_violation_floor(floor)
    print_reserve(rows, args.variants)
    print_gain(gains)
    print(f"\n{len(jobs)} replays, wall time {wall:.0f} s in {args.jobs} processes (shared 2-core machine: noisy)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
