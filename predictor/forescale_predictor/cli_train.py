"""`forescale train`: train the LSTM forecaster and write one model file.

From a CSV (`--csv`: a time column and a value column, found by name;
`--latency-column` and `--rate-column` train a two-feature model like the
packaged one) or from
Prometheus (`--prometheus-url --query --start --end`, plus `--rate-query`
for a second feature). With `--prometheus URL --deployment NAME` (and
`--namespace`, `--preset`) it reads the service's own latency and rate the
way the operator does and **fine-tunes** the packaged model (or
`--base-model`) on them: the result loads through `spec.forecast.modelRef`. The whole series is used for training, its last 25%
(by time) for early stopping and the blend, as in `forescale backtest`. `--json` prints one JSON object
on stdout; progress and logs go to stderr.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from .cli_common import clean, duration, emit_json, fail, log

app = typer.Typer(add_completion=False, rich_markup_mode=None, help=__doc__, pretty_exceptions_enable=False)

FEATURES = ("latency_ms", "rate", "value")


@app.command()
def train_command(
    out: Path = typer.Option(..., "--out", help="Where to write the model file (.pt)."),
    csv: Optional[Path] = typer.Option(None, "--csv", help="Training series: CSV (time,value), Azure trace CSV or Mooncake JSONL."),
    value_column: Optional[str] = typer.Option(None, "--value-column", help="Value column of a one-feature CSV."),
    time_column: Optional[str] = typer.Option(None, "--time-column", help="Time column (default: timestamp / time)."),
    latency_column: Optional[str] = typer.Option(None, "--latency-column", help="CSV column holding latency in ms (two-feature model)."),
    rate_column: Optional[str] = typer.Option(None, "--rate-column", help="CSV column holding the request rate (two-feature model)."),
    feature: Optional[str] = typer.Option(None, "--feature", help="What a single series measures: latency_ms, rate or value. "
                                                                   "Default: told from the column name or the query; "
                                                                   "an error when they do not say."),
    prometheus_url: Optional[str] = typer.Option(None, "--prometheus", "--prometheus-url", help="Prometheus base URL."),
    deployment: Optional[str] = typer.Option(None, "--deployment", help="Fine-tune on this InferenceDeployment's own latency and rate (with --prometheus)."),
    namespace: str = typer.Option("default", "--namespace", help="Namespace of --deployment."),
    pool: Optional[str] = typer.Option(None, "--pool", help="Only this pool's series (a or b; default both)."),
    preset: str = typer.Option("forescale", "--preset", help="Metric preset of --deployment: forescale, vllm, triton, torchserve."),
    base_model: Optional[Path] = typer.Option(None, "--base-model", help="Model file to fine-tune (default: the packaged model)."),
    query: Optional[str] = typer.Option(None, "--query", help="PromQL of the series (one result series)."),
    rate_query: Optional[str] = typer.Option(None, "--rate-query", help="PromQL of the request rate, to train latency and rate together."),
    start: Optional[str] = typer.Option(None, "--start", help="Start: epoch seconds, ISO time, or a duration ago such as 7d."),
    end: Optional[str] = typer.Option(None, "--end", help="End: epoch seconds, ISO time or 'now' (default now)."),
    step: Optional[str] = typer.Option(None, "--step", help="Model step, e.g. 15s or 1m (default: the data's own step; 60s for Prometheus)."),
    horizon: Optional[str] = typer.Option(None, "--horizon", help="Forecast horizon (default: the larger of 180s and 3 x step)."),
    lookback: Optional[int] = typer.Option(None, "--lookback", min=2, help="Steps the model sees (default: scaled to the data, 12-48)."),
    epochs: int = typer.Option(30, "--epochs", min=1, help="Maximum epochs (early stopping usually ends sooner)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Random seed of the training (initial weights, batch order)."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds per Prometheus request (> 0)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Train the LSTM forecaster and write the model file."""
    from .errors import PredictorError

    if feature is not None and feature not in FEATURES:
        fail("train", f"--feature must be one of {', '.join(FEATURES)}, got {feature!r}")
    if (csv is None) == (prometheus_url is None):
        fail("train", "give either --csv FILE or --prometheus-url URL with --query, --start and --end")
    if pool not in (None, "a", "b"):
        fail("train", f"--pool must be a or b (or left out for both), got {pool!r}")
    if not timeout > 0:
        fail("train", f"--timeout must be > 0 seconds, got {timeout:g}")
    step_s = duration(step, "--step")
    horizon_s = duration(horizon, "--horizon")
    _check_out(out)  # before training: a bad --out used to fail only after minutes of it
    if deployment is not None:
        if prometheus_url is None or query:
            fail("train", "--deployment reads the service through --prometheus URL and its --preset; do not give --query or --csv")
        _fine_tune(prometheus_url, namespace, deployment, pool, preset, base_model, start or "7d", end, timeout,
                   epochs, seed, quiet, json_out, out)
        return
    try:
        if csv is not None:
            if not (latency_column or rate_column):
                feature = feature or _csv_feature(csv, time_column, value_column, quiet)
            times, columns, step_s = _from_csv(csv, step_s, time_column, value_column, latency_column, rate_column, feature)
            source = str(csv)
        else:
            if not query or not start:
                fail("train", "--prometheus-url needs --query and --start (and optionally --end, --rate-query)")
            feature = feature or _told(query, "query", quiet)
            step_s = step_s or 60.0
            times, columns = _from_prometheus(prometheus_url, query, rate_query, feature, start, end, step_s, timeout)
            source = f"{prometheus_url} {query!r}" + (f" + {rate_query!r}" if rate_query else "")
        model, info = _train(times, columns, step_s, horizon_s, lookback, epochs, seed, quiet)
    except PredictorError as exc:
        fail("train", str(exc))
    except ValueError as exc:
        fail("train", str(exc))
    from . import model_file

    if not _finite_model(model):
        fail("train", "training diverged: the model's weights or scalers are not finite; no model was written")
    model.metadata.update({"data": f"trained by `forescale train` on {source}", "source": source, **info})
    path = model_file.save(model, out)
    result = {
        "out": str(path),
        "bytes": path.stat().st_size,
        "features": list(model.config.features),
        "step_seconds": model.config.step_seconds,
        "horizon_seconds": model.config.horizon_seconds,
        "lookback": model.config.lookback,
        "quantiles": list(model.config.quantiles),
        "epochs": model.metadata.get("epochs"),
        "train_windows": model.metadata.get("train_windows"),
        "validation": model.metadata.get("validation"),
        **info,
    }
    if json_out:
        emit_json(clean(result))
    else:
        log(f"wrote {path} ({result['bytes']} bytes): {result['features']} every {model.config.step_seconds:g} s, "
            f"horizon {model.config.horizon_seconds:g} s, {result['epochs']} epochs")
        print(path)


def _fine_tune(url, namespace, deployment, pool, preset, base_path, start, end, timeout, epochs, seed, quiet,
               json_out, out) -> None:
    """Read the service's own latency and rate as the operator does, and fine-tune the base model on them."""
    from . import load_forecaster, model_file
    from .errors import PredictorError
    from .fine_tuning import fine_tune
    from .presets import PRESETS
    from .prometheus_source import PrometheusSource
    from .training import TrainOptions

    if preset not in PRESETS or preset == "custom":
        fail("train", f"--preset must be one of {', '.join(p for p in PRESETS if p != 'custom')}, got {preset!r}")
    try:
        base = load_forecaster(base_path).model
        t0, t1 = _when(start, "--start"), _when(end or "now", "--end")
        history = PrometheusSource(url, preset, timeout=timeout).history(
            namespace, deployment, pool, start=t0, end=t1, step=base.config.step_seconds, with_queue_depth=False)
        if not quiet:
            log(f"fine-tuning on {len(history)} steps of {base.config.step_seconds:g} s of {namespace}/{deployment} "
                f"({preset} preset) from {url}")
        model = fine_tune(base, history, options=TrainOptions(max_epochs=epochs, seed=seed, progress=not quiet))
    except PredictorError as exc:
        fail("train", str(exc))
    source = f"{url} {namespace}/{deployment}" + (f" pool {pool}" if pool else "") + f" ({preset} preset)"
    model.metadata.update({"data": f"fine-tuned by `forescale train` on {source}", "source": source})
    path = model_file.save(model, out)
    result = {"out": str(path), "bytes": path.stat().st_size, "features": list(model.config.features),
              "fine_tuned_from": model.metadata.get("fine_tuned_from"), "source": source,
              "step_seconds": model.config.step_seconds, "horizon_seconds": model.config.horizon_seconds,
              "epochs": model.metadata.get("epochs"), "best_epoch": model.metadata.get("best_epoch"),
              "training_span": model.metadata.get("training_span"), "validation": model.metadata.get("validation")}
    if json_out:
        emit_json(clean(result))
    else:
        log(f"wrote {path}: fine-tuned on {source}, best epoch {result['best_epoch']} of {result['epochs']} "
            f"(0: the base model's weights were kept)")
        print(path)


def _check_out(out: Path) -> None:
    """Fail at once when the model could not be written to `out`."""
    import tempfile

    if out.is_dir():
        fail("train", f"--out {out} is a folder; give a file path such as {out / 'model.pt'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=".forescale-write-check-"):
            pass
    except OSError as exc:
        fail("train", f"--out {out}: cannot write there ({exc.strerror or exc})")


def _finite_model(model) -> bool:
    import numpy as np
    import torch

    weights = all(bool(torch.isfinite(p).all()) for p in model.net.state_dict().values())
    scalers = all(np.isfinite(np.asarray(a)).all() for a in (model.input_scaler.mean, model.input_scaler.scale,
                                                               model.target_scaler.mean, model.target_scaler.scale))
    return weights and scalers


def _told(name: str, what: str, quiet: bool) -> str:
    """The feature `name` says it measures (feature_inference.py); a one-line error when it does not say."""
    from .feature_inference import FeatureUnknown, infer_feature

    try:
        feature = infer_feature(name, what=what)
    except FeatureUnknown as exc:
        fail("train", str(exc))
    if not quiet:
        log(f"training a {feature} model: told from the {what} {name!r} (--feature overrides)")
    return feature


def _csv_feature(path, time_column, value_column, quiet: bool) -> str:
    """What the CSV's series measures: a request trace is a rate; a value series says it in its column's name."""
    import csv as csv_module

    from .csv_source import TIME_COLUMNS, find_column, find_value_column
    from .input_files import readable
    from .series_input import detect_kind

    if detect_kind(path) != "csv":
        if not quiet:
            log("training a rate model: the file is a request trace, binned into a request rate")
        return "rate"
    with readable(path), path.open(newline="", encoding="utf-8-sig") as handle:
        header = next((row for row in csv_module.reader(handle) if any(cell.strip() for cell in row)), [])
    if not any(cell.strip() for cell in header):
        fail("train", f"{path} is empty")
    time_index = find_column(header, time_column, TIME_COLUMNS, "time")
    column = header[find_value_column(header, time_index, value_column)].strip().strip('"')
    return _told(column, "column", quiet)


def _from_csv(path, step_s, time_column, value_column, latency_column, rate_column, feature):
    import numpy as np

    from .csv_source import load_csv
    from .resample import align, native_step
    from .series_input import read_series

    if latency_column or rate_column:
        series = {}
        for name, column in (("latency_ms", latency_column), ("rate", rate_column)):
            if column:
                raw = load_csv(path, time_column=time_column, value_column=column,
                               value_flag="--latency-column" if name == "latency_ms" else "--rate-column")
                series[name] = (raw.times, raw.values)
        first = next(iter(series.values()))
        step_s = step_s or native_step(first[0])
        history = align(series, step_s)
        return history.times, {k: np.asarray(v) for k, v in history.features.items()}, step_s
    history, _ = read_series(path, step_seconds=step_s, time_column=time_column, value_column=value_column)
    return history.times, {feature: history.features["value"]}, history.step_seconds


def _from_prometheus(url, query, rate_query, feature, start, end, step_s, timeout):
    from .prometheus_source import PrometheusSource
    from .presets import custom_preset

    t0, t1 = _when(start, "--start"), _when(end or "now", "--end")
    source = PrometheusSource(url, custom_preset(query, rate_query or query), timeout=timeout)
    times, values = source.query_range(query, start=t0, end=t1, step=step_s)
    series = {feature: (times, values)}
    if rate_query:
        series["rate"] = source.query_range(rate_query, start=t0, end=t1, step=step_s)
    from .resample import align

    history = align(series, step_s, start=t0, end=t1)
    return history.times, dict(history.features)


def _when(text: str, flag: str) -> float:
    """Epoch seconds of `now`, an epoch number, an ISO time, or a duration ago (`7d`); a SeriesError
    naming `flag` otherwise."""
    from .durations import parse_duration
    from .errors import SeriesError
    from .timeparse import parse_times

    text = text.strip()
    if text == "now":
        return time.time()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        if text[-1:].isalpha() and text[0].isdigit() and "-" not in text and ":" not in text:
            return time.time() - parse_duration(text)
        return float(parse_times([text], column=flag)[0])
    except ValueError:  # SeriesError is one too
        raise SeriesError(f"{flag} {text!r} is not a time: give epoch seconds, an ISO time such as "
                          f"2026-12-01T00:00:00Z, 'now', or a duration ago such as 7d") from None


#: the largest magnitude a training value may have (a latency in ms or a rate; 1e12 is already absurd)
MAX_ABS_VALUE = 1e12


def _train(times, columns, step_s, horizon_s, lookback, epochs, seed, quiet):
    import numpy as np

    from .errors import SeriesError
    from .model_config import ModelConfig
    from .training import Segment, TrainOptions, train

    names = tuple(columns)
    values = np.stack([np.asarray(columns[n], dtype=float) for n in names], axis=1)
    if len(values) == 0:
        raise SeriesError("the training series is empty")
    for i, name in enumerate(names):
        if not np.isfinite(values[:, i]).any():
            raise SeriesError(f"the {name} series is all NaN")
        largest = float(np.nanmax(np.abs(values[:, i])))
        if largest > MAX_ABS_VALUE:
            # squares of such values overflow the scalers: training would save a NaN-loss model
            raise SeriesError(f"the {name} series holds {largest:.3g}; values beyond ±{MAX_ABS_VALUE:g} cannot be trained on")
    horizon_s = horizon_s or max(180.0, 3 * step_s)
    steps = int(round(horizon_s / step_s))
    if steps < 1:
        raise SeriesError(f"--horizon {horizon_s:g} s is shorter than one {step_s:g} s step")
    span = float(times[-1] - times[0])
    lb = lookback or int(np.clip(len(values) // 10, 12, 48))
    points = int(np.isfinite(values).any(axis=1).sum())
    if points < lb + steps:
        raise SeriesError(f"{points} points of {step_s:g} s; training needs at least {lb + steps} (one window: lookback "
                          f"{lb} + horizon {steps} steps = {(lb + steps) * step_s:g} s); give a longer series")
    config = ModelConfig(
        features=names,
        targets=names,
        step_seconds=float(step_s),
        lookback=lb,
        horizon=steps,
        quantiles=(0.1, 0.5, 0.9),
        hidden=32,
        ar_steps=min(16, lb),
        level_steps=min(4, lb),
        time_features=span >= 3 * 86400 and step_s < 21600,
    )
    if not quiet:
        log(f"training on {len(values)} steps of {step_s:g} s ({', '.join(names)}), lookback {lb}, horizon {steps} steps")
    from .backtest import VALID_FRACTION

    # the same validation share as `forescale backtest`, which is what measured this procedure
    options = TrainOptions(max_epochs=epochs, seed=seed, progress=not quiet, valid_fraction=VALID_FRACTION)
    model = train([Segment(np.asarray(times, float), values)], config, options)
    info = {"training_span": {"start": float(times[0]), "end": float(times[-1]), "steps": int(len(values))}}
    return model, info
