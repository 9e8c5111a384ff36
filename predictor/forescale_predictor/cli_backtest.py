"""`forescale backtest`: rolling-origin evaluation of the LSTM against the baselines.

Semantics: train on the first 70% of the series, forecast
every origin of the rest, one per step; errors at the final horizon step.
`--json` prints exactly one JSON object on stdout; everything else goes to
stderr. Bad input ends with a one-line error and exit code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .cli_common import clean, duration, emit_json, fail, log

app = typer.Typer(add_completion=False, rich_markup_mode=None, help=__doc__, pretty_exceptions_enable=False)


@app.command()
def backtest(
    csv: Path = typer.Option(..., "--csv", help="Series to evaluate: a CSV (time,value), an Azure trace CSV or a Mooncake JSONL."),
    value_column: Optional[str] = typer.Option(None, "--value-column", help="Value column (default: found case-insensitively, e.g. value)."),
    time_column: Optional[str] = typer.Option(None, "--time-column", help="Time column (default: timestamp / time)."),
    step: Optional[str] = typer.Option(None, "--step", help="Grid step, e.g. 60s or 1m (default: the series' own step; 15s for request traces)."),
    horizon: Optional[str] = typer.Option(None, "--horizon", help="Forecast horizon (default: the larger of 180s and 3 x step)."),
    models: str = typer.Option("lstm,last,seasonal,ewm,linear", "--models", help="Comma-separated models to compare (also: cycle, the loop's rival)."),
    train_fraction: float = typer.Option(0.7, "--train-fraction", min=0.1, max=0.95, help="Share of the series used for training."),
    epochs: int = typer.Option(30, "--epochs", min=1, help="Maximum LSTM training epochs (early stopping usually ends sooner)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Random seed of the LSTM training."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    predictions: Optional[Path] = typer.Option(None, "--predictions", help="Write every forecast as CSV here."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Write a PNG of actual vs forecast with the LSTM's quantile band."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Backtest the LSTM against baselines on one series."""
    from .backtest import MODELS, run_backtest
    from .errors import PredictorError
    from .train_options import TrainOptions

    step_s = duration(step, "--step")
    horizon_s = duration(horizon, "--horizon")
    chosen = tuple(m.strip() for m in models.split(",") if m.strip())
    unknown = [m for m in chosen if m not in MODELS]
    if unknown or not chosen:
        fail("backtest", f"unknown model(s) {unknown or models!r}; choose from {', '.join(MODELS)}")
    try:
        from .series_input import read_series

        notes: list[str] = []
        history, kind = read_series(csv, step_seconds=step_s, time_column=time_column, value_column=value_column, warnings=notes)
        for note in notes:
            log(f"warning: {note}")
        step_s = history.step_seconds
        horizon_s = horizon_s or max(180.0, 3 * step_s)
        steps = int(round(horizon_s / step_s))
        if steps < 1 or abs(steps * step_s - horizon_s) > 1e-6 * horizon_s:
            fail("backtest", f"--horizon {horizon_s:g} s is not a whole number of {step_s:g} s steps")
        if not quiet:
            log(f"backtest {csv} ({kind}): {len(history)} steps of {step_s:g} s, horizon {steps} steps")
        result = run_backtest(
            history.times,
            history.features["value"],
            step_seconds=step_s,
            horizon_steps=steps,
            models=chosen,
            train_fraction=train_fraction,
            name=str(csv),
            options=TrainOptions(max_epochs=epochs, seed=seed, progress=not quiet),
        )
    except PredictorError as exc:
        fail("backtest", str(exc))
    except ValueError as exc:
        fail("backtest", str(exc))
    from .backtest_output import table, write_plot, write_predictions

    out = result.to_json()
    out["kind"] = kind
    out["input_warnings"] = notes
    if predictions is not None:
        rows = write_predictions(result, predictions)
        out["predictions"] = str(predictions)
        log(f"wrote {rows} prediction rows to {predictions}")
    if plot is not None:
        write_plot(result, plot)
        out["plot"] = str(plot)
        log(f"wrote plot {plot}")
    if json_out:
        emit_json(clean(out))
    else:
        print(table(result))
