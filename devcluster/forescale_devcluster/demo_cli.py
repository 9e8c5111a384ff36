"""`forescale demo`: the whole loop on this machine; see forescale_devcluster.demo."""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer

app = typer.Typer(add_completion=False, rich_markup_mode=None, help="Run the whole Forescale loop on this machine (emulated cluster, real operator and Prometheus).")


@app.command()
def demo(
    json_out: bool = typer.Option(False, "--json", help="Print the summary as one JSON object on stdout."),
    no_incident: bool = typer.Option(False, "--no-incident", help="The control run: no incident is injected."),
    seed: int = typer.Option(0, help="Seeds the incident time and the arrivals."),
    duration: float = typer.Option(360.0, help="Seconds of load (the built-in pattern is stretched to it; the incident lasts a quarter of it)."),
    mean_rate: float = typer.Option(20.0, help="Mean offered requests per second."),
    trace: Optional[str] = typer.Option(None, help="Replay this arrival trace (Azure CSV, Mooncake JSONL, rates CSV) instead of the built-in pattern."),
    plot: str = typer.Option("forescale-demo.png", help="Write the PNG timeline here ('' for none)."),
    workdir: Optional[str] = typer.Option(None, help="Keep logs and files here instead of a temporary folder."),
) -> None:
    """Start the emulated cluster, the operator and Prometheus, replay load, inject an incident, and report."""
    from forescale_devcluster.demo import run_demo
    from forescale_devcluster.demo_report import plot as draw, summary, table_lines
    from forescale_devcluster.demo_scenario import DemoSettings
    from forescale_devcluster.demo_stack import StackError, prometheus_available

    if not prometheus_available():
        typer.echo("forescale demo: Prometheus is not installed; run `make demo` (it installs it) or `apt-get install -y prometheus`", err=True)
        raise typer.Exit(2)
    if duration < 60 or mean_rate <= 0:
        typer.echo("forescale demo: --duration must be >= 60 s and --mean-rate > 0", err=True)
        raise typer.Exit(2)
    settings = DemoSettings(duration_seconds=duration, mean_rate=mean_rate, trace=trace, seed=seed, incident=not no_incident)
    # Everything the user gave is checked before the stack starts: found after it, a bad trace or
    # plot path cost the minutes of a whole run (and the summary, with a traceback at the end).
    problem, pattern = _read_input(settings, plot, workdir)
    if problem:
        typer.echo(f"forescale demo: {problem}", err=True)
        raise typer.Exit(2)
    try:
        run = run_demo(settings, live=True, workdir=workdir, pattern=pattern)
    except (StackError, ValueError, OSError) as exc:
        typer.echo(f"forescale demo: {exc}", err=True)
        raise typer.Exit(1)
    result = summary(run)
    if plot:
        draw(run, plot)
        result["plot"] = plot
    for line in table_lines(result):
        typer.echo(line, err=json_out)
    if plot:
        typer.echo(f"timeline written to {plot}", err=True)
    if json_out:
        sys.stdout.write(json.dumps(result) + "\n")


def _read_input(settings, plot: str, workdir: Optional[str]):
    """(what is wrong with --trace, --plot or --workdir, None) or (None, the load to offer, read once)."""
    import os
    from pathlib import Path

    from forescale_devcluster.demo import load_pattern

    if workdir and Path(workdir).exists() and not Path(workdir).is_dir():
        return f"--workdir {workdir} exists and is not a folder", None
    if plot:
        if Path(plot).is_dir():
            return f"--plot {plot} is a folder; give a file path such as {Path(plot) / 'forescale-demo.png'}", None
        folder = Path(plot).parent
        if not folder.is_dir():
            return f"--plot {plot}: no folder {folder}", None
        if not os.access(folder, os.W_OK):
            return f"--plot {plot}: cannot write in {folder}", None
    try:
        return None, load_pattern(settings)
    except (ValueError, OSError) as exc:
        return f"--trace {settings.trace}: {exc}", None
