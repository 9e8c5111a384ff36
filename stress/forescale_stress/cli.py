"""`forescale stress --url URL`: an open-loop step load test (+10% a step by
default) with fault injection and degradation actions, against any
OpenAI-compatible embeddings or completions endpoint. See docs/stress.md."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from forescale_stress.admin import AdminClient, load_token
from forescale_stress.chaos import check_kill_allowed
from forescale_stress.errors import StressError
from forescale_stress.faults import CLIENT_KINDS, DegradeSpec, FaultSpec, check_input_scale, parse_degrade, parse_fault
from forescale_stress.runner import Progress, RunConfig, Runner
from forescale_stress.schedule import DEFAULT_MAX_SECONDS, Bounds, Ramp, parse_arrivals
from forescale_stress.target import parse_target, probe

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help=__doc__)


def _check_positive(name: str, value: float, *, allow_zero: bool = False) -> None:
    if value < 0 or (value == 0 and not allow_zero) or value != value:
        raise StressError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value:g}")


def build_config(
    *, url: str, start_rate: Optional[float], step_percent: float, step_seconds: float, min_samples: int,
    max_step_seconds: Optional[float], slo_ms: float, max_error_rate: float, max_rate: Optional[float],
    max_requests: Optional[int], max_seconds: float, arrivals: str, seed: int, connections: int,
    request_timeout: float, model: str, distinct_inputs: int, zipf: float, fault: list[str],
    degrade: list[str], kill_pid: Optional[int], fault_grace: float, degrade_window: float,
    window_min_samples: int, recovery_window: float = 5.0, warmup_seconds: float = 0.0, probe_seconds: float = 10.0,
    input_scale: float = 1.0, probe_warmup_seconds: float = 0.0, confirm_slo: bool = True,
) -> RunConfig:
    """Validate every option and build the run's config; raises StressError
    naming the first problem. No network access happens here."""
    target = parse_target(url)
    _check_positive("--warmup-seconds", warmup_seconds, allow_zero=True)
    if start_rate is None:
        _check_positive("--probe-seconds", probe_seconds)
        _check_positive("--probe-warmup-seconds", probe_warmup_seconds, allow_zero=True)
    # Without --start-rate the probe sets the first rate; 1 req/s stands in until then.
    ramp = Ramp(1.0 if start_rate is None else start_rate, step_percent, step_seconds, min_samples, max_step_seconds)
    ramp.validate()
    before_ramp = warmup_seconds + (probe_warmup_seconds + probe_seconds if start_rate is None else 0.0)
    bounds = Bounds(slo_ms, max_error_rate, max_rate, max_requests, max_seconds)
    bounds.validate(ramp)
    parse_arrivals(arrivals)  # a bad --arrivals is named before any request
    if connections < 1:
        raise StressError(f"--connections must be >= 1, got {connections}")
    _check_positive("--request-timeout", request_timeout)
    if distinct_inputs < 0:
        raise StressError(f"--distinct-inputs must be >= 0 (0: every input distinct), got {distinct_inputs}")
    _check_positive("--zipf", zipf, allow_zero=True)
    check_input_scale(input_scale, "--input-scale")
    _check_positive("--fault-grace", fault_grace, allow_zero=True)
    _check_positive("--degrade-window", degrade_window)
    _check_positive("--recovery-window", recovery_window)
    if window_min_samples < 1:
        raise StressError(f"--window-min-samples must be >= 1, got {window_min_samples}")
    if kill_pid is not None and kill_pid < 2:
        raise StressError(f"--kill-pid must be a process id > 1, got {kill_pid}")
    faults = tuple(parse_fault(spec, kill_pid) for spec in fault)
    degradations = tuple(parse_degrade(spec) for spec in degrade)
    if kill_pid is not None and not any(f.kind == "kill" for f in faults):
        raise StressError(f"--kill-pid {kill_pid} needs a kill time: add --fault 'at=30s,kill'")
    # The load stops early enough to drain within --max-seconds; an action the
    # load can never reach is a mistake worth reporting before the run.
    load_stop = max_seconds - bounds.drain_seconds(request_timeout) - before_ramp
    if before_ramp > 0 and load_stop <= 0:
        raise StressError(f"--max-seconds {max_seconds:g} leaves no room for one step after the probe and the "
                          f"{warmup_seconds:g}s warm-up (and the drain); raise --max-seconds or lower --warmup-seconds "
                          f"(or --probe-warmup-seconds)")
    # One second is left for the admin call itself.
    for spec in faults:
        if spec.end + recovery_window + 1 > load_stop:
            raise StressError(f"--fault {spec.text!r}: its end plus a {recovery_window:g}s recovery window is past "
                              f"the load's stop at {load_stop:g}s (--max-seconds minus the drain, the probe and the warm-up); raise --max-seconds")
    for spec in degradations:
        if spec.at + degrade_window + 1 > load_stop:
            raise StressError(f"--degrade {spec.text!r}: the {degrade_window:g}s window after at={spec.at:g}s ends "
                              f"after the load stops at {load_stop:g}s; raise --max-seconds")
    for f in faults:
        if f.kind == "kill":
            check_kill_allowed(target, f)
    return RunConfig(
        target=target, ramp=ramp, bounds=bounds, arrivals=arrivals, seed=seed, connections=connections,
        timeout_s=request_timeout, model=model, distinct_inputs=distinct_inputs, zipf=zipf, input_scale=input_scale,
        faults=faults,
        degradations=degradations, fault_grace_s=fault_grace, degrade_window_s=degrade_window,
        window_min_samples=window_min_samples, recovery_window_s=recovery_window,
        warmup_s=warmup_seconds, probe_s=probe_seconds if start_rate is None else 0.0,
        probe_warmup_s=probe_warmup_seconds if start_rate is None else 0.0, confirm_slo=confirm_slo,
    )


def needs_admin(faults: tuple[FaultSpec, ...], degradations: tuple[DegradeSpec, ...]) -> list[str]:
    """The admin paths a run will call (empty when it needs no token)."""
    paths = []
    if any(f.kind not in CLIENT_KINDS for f in faults):
        paths.append("/admin/faults")
    paths += sorted({d.admin_path() for d in degradations})
    return paths


async def _execute(config: RunConfig, token: Optional[str], show_progress: bool):
    await probe(config.target, config.model, config.timeout_s)
    paths = needs_admin(config.faults, config.degradations)
    admin = None
    if paths:
        admin = AdminClient(config.target, token)
        await admin.preflight(paths)
    console = Console(stderr=True)
    if not show_progress:
        return await Runner(config, admin=admin).run()
    from rich.progress import BarColumn, Progress as Bar, TextColumn, TimeElapsedColumn

    # Two refreshes a second: the bar's thread shares the CPU with the load.
    with Bar(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console,
             transient=True, refresh_per_second=2) as bar:
        task = bar.add_task("starting", total=config.bounds.max_seconds)

        def update(p: Progress) -> None:
            bar.update(task, completed=p.elapsed,
                       description=f"step {p.step} · {p.rate:.1f} rps offered · {p.sent} sent · {p.in_flight} in flight")

        return await Runner(config, admin=admin, on_progress=update).run()


@app.command()
def stress(
    url: str = typer.Option(..., "--url", help="The OpenAI-compatible endpoint: http://host:port, or its "
                                                        "/v1/embeddings or /v1/completions URL."),
    start_rate: Optional[float] = typer.Option(None, help="Offered rate of the first step, requests/s "
                                               "(default: a quarter of the throughput a short probe measures, once warm)."),
    probe_seconds: float = typer.Option(10.0, help="Length of the probe that sets the first rate without --start-rate: "
                                        "a quarter of the throughput it counts with 8 requests in flight."),
    probe_warmup_seconds: float = typer.Option(10.0, help="The probe's own load before it counts, not counted "
                                               "(the server's cold path; a cold server reads too slow)."),
    warmup_seconds: float = typer.Option(30.0, help="Load at the first rate before the ramp, not counted "
                                         "(the server's cold path); the ramp's clock and fault times start after it."),
    step_percent: float = typer.Option(10.0, help="Rate increase per step, % of the previous step (0 holds)."),
    step_seconds: float = typer.Option(10.0, help="Length of a step."),
    min_samples: int = typer.Option(100, help="Requests a step needs for its percentiles; short steps are extended."),
    max_step_seconds: Optional[float] = typer.Option(None, help="Longest extended step (default 3 x step-seconds)."),
    slo_ms: float = typer.Option(200.0, help="A p99 over this ends the ramp; the knee is the highest rate under it."),
    confirm_slo: bool = typer.Option(True, "--confirm-slo/--no-confirm-slo",
                                     help="Repeat a step whose p99 is over the SLO once at the same rate, and end "
                                          "the ramp only if the repeat is over it too (a shared machine's stall is "
                                          "not the knee)."),
    max_error_rate: float = typer.Option(0.05, help="Failed fraction of a step's requests that ends the ramp."),
    max_rate: Optional[float] = typer.Option(None, help="Stop before a step would offer more than this."),
    max_requests: Optional[int] = typer.Option(None, help="Stop after sending this many requests."),
    max_seconds: float = typer.Option(DEFAULT_MAX_SECONDS, help="Hard bound on the run (load plus drain)."),
    arrivals: str = typer.Option("poisson", help="poisson, uniform, or gamma:CV (gaps with that coefficient of "
                                                 "variation: 1 is Poisson, above 1 bursty, as production traffic is)."),
    seed: int = typer.Option(0, help="Seed of arrivals and inputs."),
    connections: int = typer.Option(64, help="Size of the client's connection pool."),
    request_timeout: float = typer.Option(10.0, help="Seconds before a request counts as failed."),
    model: str = typer.Option("minilm", help="The `model` field sent with each request."),
    distinct_inputs: int = typer.Option(0, help="0: every request's input is new (no cache hits); N: draw from N "
                                              "inputs with Zipf popularity (for cache faults and warm-ups)."),
    zipf: float = typer.Option(1.0, help="Zipf exponent of input popularity (0 = uniform)."),
    input_scale: float = typer.Option(1.0, help="Every input this many times longer in words (a request-mix shift; "
                                                "the fault 'at=60s,input_scale=4,seconds=120' shifts in mid-run)."),
    fault: list[str] = typer.Option([], help="e.g. 'at=30s,latency_ms=200,seconds=20', 'at=60s,slowdown=2.5,seconds=30', "
                                           "'at=90s,cache_flush', 'at=100s,leak_mb=50', 'at=100s,kv_fragmentation=0.5', "
                                           "'at=60s,memory_pressure=0.75,seconds=30', 'at=60s,input_scale=4,seconds=60', "
                                           "'at=120s,kill'."),
    degrade: list[str] = typer.Option([], help="e.g. 'at=60s,precision=int8' or 'at=90s,warmup[=N]'."),
    kill_pid: Optional[int] = typer.Option(None, help="Process killed by `kill` faults (loopback targets only)."),
    admin_token_file: Optional[Path] = typer.Option(None, help="File holding the admin bearer token "
                                                               "(else FORESCALE_ADMIN_TOKEN[_FILE])."),
    fault_grace: float = typer.Option(10.0, help="Seconds after a fault during which steps do not stop the ramp."),
    degrade_window: float = typer.Option(10.0, help="Length of the windows before and after a degradation action."),
    recovery_window: float = typer.Option(5.0, help="Sliding window whose p99 must be back to 1.2x the pre-fault p99."),
    window_min_samples: int = typer.Option(20, help="Fewest requests in a recovery or degradation window."),
    json_out: bool = typer.Option(False, "--json", help="Print exactly one JSON object on stdout."),
    plot: Optional[Path] = typer.Option(None, help="Write a PNG of the results."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Step load test with fault injection against one endpoint."""
    try:
        config = build_config(
            url=url, start_rate=start_rate, step_percent=step_percent, step_seconds=step_seconds,
            min_samples=min_samples, max_step_seconds=max_step_seconds, slo_ms=slo_ms,
            max_error_rate=max_error_rate, max_rate=max_rate, max_requests=max_requests,
            max_seconds=max_seconds, arrivals=arrivals, seed=seed, connections=connections,
            request_timeout=request_timeout, model=model, distinct_inputs=distinct_inputs, zipf=zipf,
            fault=fault, degrade=degrade, kill_pid=kill_pid, fault_grace=fault_grace,
            degrade_window=degrade_window, window_min_samples=window_min_samples, recovery_window=recovery_window,
            warmup_seconds=warmup_seconds, probe_seconds=probe_seconds, input_scale=input_scale,
            probe_warmup_seconds=probe_warmup_seconds, confirm_slo=confirm_slo,
        )
        token = None
        if needs_admin(config.faults, config.degradations):
            token = load_token(str(admin_token_file) if admin_token_file else None)
            if token is None:
                raise StressError("faults and degradation actions need the admin token: pass --admin-token-file "
                                  "or set FORESCALE_ADMIN_TOKEN or FORESCALE_ADMIN_TOKEN_FILE")
        if plot is not None and not plot.parent.resolve().is_dir():
            raise StressError(f"--plot {plot}: folder {plot.parent} does not exist")
        result = asyncio.run(_execute(config, token, show_progress=not quiet))
        from forescale_stress.report import build_report, render

        report = build_report(result)
        if plot is not None:
            from forescale_stress.plot import write_plot

            write_plot(result, report, str(plot))
            report["plot"] = str(plot)
    except StressError as exc:
        print(f"forescale stress: error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    if json_out:
        sys.stdout.write(json.dumps(report, allow_nan=False) + "\n")
    else:
        # A pipe gets rich's 80 columns by default, too narrow for the table.
        render(report, Console() if sys.stdout.isatty() else Console(width=140))
