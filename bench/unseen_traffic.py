"""Forescale on traffic the frontier benchmark does not hold: other shapes, seeds and load scales.

The frontier (bench/frontier.py) is where the engine's defaults were measured, so a rule that only
fits its 72 cases would pass there. This benchmark replays the same engine, at its defaults, on
cases outside that set, as a held-out check would:

- the synthetic families (sim/forescale_sim/synthetic.py) with other knobs and at seeds 3 and 4
  (the frontier runs seeds 0-2 at mean 2.5, peak 40 req/s): a quiet bursty service (mean 0.5,
  bursts to 10), a busy one (10, to 150), a launch that climbs 100-fold (1 to 100), a drift
  around a high mean (20, to 60), spikes on a steady base (10, to 40) and on a nearly idle one
  (0.3, to 3), a sales peak of minutes (5 to 20 within a minute, held a quarter of an hour: a
  family the frontier does not run at all), a job on a timer (30 s bursts to 20 over a steady 2,
  every 3 to 10 minutes: the frontier holds no period longer than the LSTM's window either), and the
  family's own knobs at the new seeds;
- the bursty family at its own knobs at load scale 10, seeds 3 and 4: the frontier replays synthetic
  traffic at 1x only, and a held-out bursty trace is checked at the dev traces' 10x too;
- the dev traces at load scales 3 and 30 (the frontier runs 1 and 10), seed 3.

Each case runs twice: without an incident, and with the replay's default one (a slowdown of pool A
at a seeded time). Per run Forescale, the oracle and the HPA at the peers' default utilisation (0.7)
run in one replay. Goals (the frontier's, those that need no peer curve):

| goal | when |
|---|---|
| peak A replicas <= 1.5x the oracle's | always |
| EmergencyStarted == 0 | no incident |
| mean time to recover < 60 s | with the incident |

Beside them, Forescale's GPU-hours and violation seconds against the HPA's, as ratios. Every
figure is printed, met or not; the benchmark exits 0 once it ran.

    .venv/bin/python -m bench.unseen_traffic [--jobs 2] [--forecaster lstm] [--json]

`--forecaster` feeds Forescale's engine another forecaster (a baseline, or `clairvoyant`, which
reads each trace's arrivals ahead: how much a perfect rate forecast would change these figures).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from bench.frontier import DEV_TRACES, TRACES, curve_free_goals
from forescale_sim.session import FORECASTERS

#: (family, mean, peak) of the synthetic cases; see the module docstring for why each
SHAPES = (("bursty", 0.5, 10.0), ("bursty", 10.0, 150.0), ("bursty", 2.5, 40.0), ("ramp", 1.0, 100.0),
          ("drift", 20.0, 60.0), ("spikes", 10.0, 40.0), ("spikes", 0.3, 3.0), ("step", 5.0, 20.0),
          ("periodic", 2.0, 20.0))
SEEDS = (3, 4)
#: (family, mean, peak, load scale) of the synthetic cases replayed scaled (module docstring)
SCALED_SHAPES = (("bursty", 2.5, 40.0, 10.0),)
#: the dev traces' load scales here: between the frontier's 1 and 10, and beyond 10
SCALES = (3.0, 30.0)
DEV_SEED = 3
POLICIES = ("forescale", "oracle", "hpa")


@dataclass(frozen=True)
class Case:
    """One replay: a label, the trace file, its format, the load scale, the seed and whether the
    replay's default incident is injected."""

    label: str
    path: str
    fmt: str
    scale: float
    seed: int
    incident: bool = False


def plan(folder: Path, traces: Path = TRACES) -> list[Case]:
    """Every case, the synthetic traces written into `folder`."""
    from forescale_sim.synthetic import Shape, write_azure_csv

    def synthetic(family: str, mean: float, peak: float, scale: float, seed: int) -> Case:
        """The case of one shape at one seed; its trace written once, whatever the scales it is replayed at."""
        path = folder / f"{family}-{mean:g}-{peak:g}-{seed}.csv"
        if not path.exists():
            write_azure_csv(Shape(family, mean=mean, peak=peak, seed=seed), path)
        return Case(f"synth-{family} mean {mean:g} peak {peak:g}", str(path), "azure", scale, seed)

    cases = [synthetic(*shape, 1.0, seed) for shape in SHAPES for seed in SEEDS]
    cases += [synthetic(*shape, seed) for shape in SCALED_SHAPES for seed in SEEDS]
    for label, (rel, fmt) in DEV_TRACES.items():
        for scale in SCALES:
            cases.append(Case(label, str(traces / rel), fmt, scale, DEV_SEED))
    return [replace(case, incident=incident) for incident in (False, True) for case in cases]


def evaluate(forescale: dict, oracle: dict, incident: bool = False) -> dict[str, dict]:
    """The goals of one run (bench.frontier's that need no peer curve), met or not, with the check written out."""
    goals = curve_free_goals(incident, forescale["peak_a"], oracle["peak_a"], forescale["emergencies"],
                             forescale["mttr_seconds"])
    return {name: {"met": bool(met), "check": check} for name, (met, check) in goals.items()}


def replay(case: Case, forecaster: str = "lstm") -> dict:
    """One case's replay (in a worker process): each policy's figures as plain data."""
    from forescale_sim.session import ReplayOptions, run_replay

    result = run_replay(ReplayOptions(trace=case.path, fmt=case.fmt, policies=list(POLICIES),
                                      incidents=None if case.incident else "none", seed=case.seed,
                                      load_scale=case.scale, forecaster=forecaster, progress=lambda message: None))
    out = {}
    for name, run in result.runs.items():
        row = run.to_dict()
        events = row.get("events") or {}
        out[name] = {"gpu_hours": round(run.gpu_hours, 3), "violation_seconds": run.slo.violation_seconds,
                     "mttr_seconds": round(run.slo.mttr_seconds, 1), "peak_a": int(run.peak_replicas["a"]),
                     "emergencies": int(events.get("EmergencyStarted", 0))}
        if "forecast_models" in row:  # Forescale's: which forecaster made each tick's forecast
            out[name]["forecast_models"] = dict(row["forecast_models"])
    return out


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else ("1.00x" if a == 0 else "inf")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="replays in parallel processes (default 2)")
    parser.add_argument("--forecaster", default="lstm",
                        help="what feeds Forescale's engine: lstm (default), a baseline, or clairvoyant")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        print(f"--jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    if args.forecaster not in FORECASTERS:
        print(f"--forecaster must be one of {', '.join(FORECASTERS)}, got {args.forecaster!r}", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        cases = plan(Path(tmp))
        with ProcessPoolExecutor(args.jobs) as pool:
            runs = list(pool.map(partial(replay, forecaster=args.forecaster), cases))
    rows = []
    for case, run in zip(cases, runs):
        rows.append({"trace": case.label, "scale": case.scale, "seed": case.seed, "incident": case.incident, **run,
                     "goals": evaluate(run["forescale"], run["oracle"], case.incident)})
    if args.json:
        print(json.dumps({"forecaster": args.forecaster, "cases": rows, "seconds": round(time.monotonic() - started, 1)}, indent=1))
        return 0
    print(f"{'trace':34s} {'x':>4s} {'seed':>4s} {'inc':>4s} | {'Forescale GPU-h / viol s':>24s} | {'HPA@0.7':>16s} | "
          f"{'GPU, viol vs HPA':>16s} | peak A / oracle | emergencies | MTTR s")
    for r in rows:
        fs, hpa, orc = r["forescale"], r["hpa"], r["oracle"]
        missed = " ".join(f"{goal.upper()} MISSED" for goal, g in r["goals"].items() if not g["met"])
        print(f"{r['trace']:34s} {r['scale']:4g} {r['seed']:4d} {'yes' if r['incident'] else 'no':>4s} | "
              f"{fs['gpu_hours']:13.2f} / {fs['violation_seconds']:6.0f} | {hpa['gpu_hours']:7.2f} / {hpa['violation_seconds']:6.0f} | "
              f"{_ratio(fs['gpu_hours'], hpa['gpu_hours']):>7s}, {_ratio(fs['violation_seconds'], hpa['violation_seconds']):>6s} | "
              f"{fs['peak_a']:4d} / {orc['peak_a']:<4d}      | {fs['emergencies']:11d} | {fs['mttr_seconds']:6.0f}  {missed}")
    print(f"\n{len(rows)} runs in {time.monotonic() - started:.0f} s. Goals (met / runs it applies to):")
    for goal in ("peak", "no-emergency", "mttr"):
        applies = [r for r in rows if goal in r["goals"]]
        met = sum(r["goals"][goal]["met"] for r in applies)
        missed = [f"{r['trace']} x{r['scale']:g} seed {r['seed']} ({r['goals'][goal]['check']})" for r in applies if not r["goals"][goal]["met"]]
        print(f"  {goal:13s} {met} / {len(applies)}" + (f"; missed: {'; '.join(missed)}" if missed else ""))
    for incident in (False, True):
        part = [r for r in rows if r["incident"] is incident]
        gpu = sum(r["forescale"]["gpu_hours"] for r in part) / sum(r["hpa"]["gpu_hours"] for r in part)
        viol_fs, viol_hpa = (sum(r[p]["violation_seconds"] for r in part) for p in ("forescale", "hpa"))
        print(f"  summed, {'with the incident' if incident else 'no incident':17s}: Forescale {gpu:.2f}x the HPA's GPU-hours, "
              f"{_ratio(viol_fs, viol_hpa)} its violation seconds ({viol_fs:.0f} s against {viol_hpa:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
