"""`forescale replay`: replay a real trace through the cluster simulator, once per policy.

    forescale replay --trace FILE --format azure|mooncake|servegen|csv
        [--policies forescale,hpa,keda,kpa,static,oracle] [--slo-ms N]
        [--startup-seconds N] [--incidents SPEC] [--seed N] [--json] [--plot OUT.png]
        [--max-replicas N] [--profile NAME] [--compress X] [--forecaster NAME] [--spec FILE] [--set PATH=VALUE]
        [--peer-utilization U] [--load-scale X] [--b-variant NAME]

With `--json` exactly one JSON object goes to stdout and
progress to stderr; otherwise a table is printed. Bad input gets one line
on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from .pool_b import DEFAULT_B_VARIANT

app = typer.Typer(add_completion=False, rich_markup_mode=None, help="Replay a real trace through the cluster simulator, once per policy.")


def _fail(message: str) -> None:
    print(f"forescale replay: {message}", file=sys.stderr)
    raise typer.Exit(2)


def _number(flag: str, text: str) -> float:
    """The option's text as a float; a non-number fails with one line naming the flag
    (click's own error is a usage block, and it lets NaN and inf through)."""
    try:
        return float(text)
    except ValueError:
        _fail(f"{flag} must be a number, got {text!r}")
        raise  # unreachable: _fail exits


@app.command()
def replay(
    trace: str = typer.Option(..., "--trace", help="Trace file (a folder of chunk files for servegen)."),
    fmt: str = typer.Option(..., "--format", help="azure | mooncake | servegen | csv."),
    policies: str = typer.Option("forescale,hpa,keda,kpa,static,oracle", "--policies", help="Comma-separated policies."),
    slo_ms: Optional[float] = typer.Option(None, "--slo-ms", help="SLO in ms (default 1000 for token traces, 200 otherwise)."),
    startup_seconds: float = typer.Option(90.0, "--startup-seconds", help="Pod start-up, scheduled -> ready."),
    incidents: Optional[str] = typer.Option(None, "--incidents", help="Incidents, ';'-separated, each KIND:key=value,... such as slowdown:pool=a,factor=2.5,start=1200 "
                                                                   "or crash:pool=a,pods=1,start=2000; 'none' for none. Default: one 2.5x "
                                                                   "slowdown of A for 300 s at a seeded time in the middle third."),
    seed: int = typer.Option(0, "--seed", help="Seeds the default incident's time, the random parts of reading "
                                               "the trace, and --load-scale's offsets."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Write a PNG of rate, latency, replicas and weights."),
    max_replicas: int = typer.Option(100, "--max-replicas", help="The maxReplicas of every policy's pools."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Service-time profile (default a100-opt-13b for token traces, t4-bert-base otherwise)."),
    compress: Optional[float] = typer.Option(None, "--compress", help="Time compression of rate traces (servegen default 24)."),
    forecaster: str = typer.Option("lstm", "--forecaster", help="lstm (the packaged model), a baseline (last, seasonal, ewm, linear, cycle) or clairvoyant (reads the trace's arrivals ahead: the ceiling of any rate forecast)."),
    spec: Optional[str] = typer.Option(None, "--spec", help="An InferenceDeployment (YAML/JSON) for the forescale policy; its slo comes from --slo-ms."),
    sets: Optional[list[str]] = typer.Option(None, "--set", metavar="PATH=VALUE", help="One field of the forescale policy's spec, after --spec (repeatable), e.g. --set traffic.overloadMaxPercent=0."),
    peer_utilization: str = typer.Option("0.7", "--peer-utilization", help="Every peer's per-pod target = U x the calibrated capacity at the SLO; 0 < U <= 1.5."),
    load_scale: str = typer.Option("1", "--load-scale", help="X >= 1: a rate trace's rates x X; a request trace as X superposed copies (whole X), each shifted circularly by a seeded offset."),
    b_variant: str = typer.Option(DEFAULT_B_VARIANT, "--b-variant", help="Pool B's model, served at int8: int8 (A's model) or distilled-int8, at its measured speed and agreement (forescale_profiles/variant_speed.json, measured on CPU, carried to the GPU profile)."),
) -> None:
    """Replay a trace once per policy and compare them side by side."""
    from .calibration import check_peer_utilization
    from .errors import SimError
    from .load_scale import check_load_scale
    from .policies.factory import parse_policies
    from .session import ReplayOptions, run_replay
    from .traces import FORMATS

    if fmt not in FORMATS:
        _fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    try:
        utilization = check_peer_utilization(_number("--peer-utilization", peer_utilization))
        scale = check_load_scale(_number("--load-scale", load_scale))
        from .spec_file import load_spec_overrides, parse_sets
        overrides = load_spec_overrides(spec) if spec else None
        spec_sets = parse_sets(sets or [])
        opts = ReplayOptions(trace=trace, fmt=fmt, policies=parse_policies(policies), slo_ms=slo_ms,
                             startup_seconds=startup_seconds, incidents=incidents, seed=seed, profile=profile,
                             max_replicas=max_replicas, compress=compress, forecaster=forecaster,
                             spec_overrides=overrides, spec_sets=spec_sets, peer_utilization=utilization, load_scale=scale,
                             b_variant=b_variant)
        result = run_replay(opts)
        if plot:
            from .plot import plot_replay
            print(f"plot written to {plot_replay(result, plot)}", file=sys.stderr)
    except SimError as exc:
        _fail(str(exc))
        return
    if as_json:
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
    else:
        from .report import print_report
        print_report(result)
