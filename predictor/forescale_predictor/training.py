"""Training loop: windows in, a TrainedModel out.

- Each series (segment) is split by time: the last `valid_fraction` of its
  grid is validation, and no validation value reaches a training window or
  the scalers (see windowing.time_split).
- The loss is the pinball loss over all quantiles, horizon steps and targets.
- Early stopping keeps the weights of the best validation epoch.
- Seeds are fixed, torch's threads limited, progress drawn by rich on stderr.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from .errors import TrainingError
from .gaps import MAX_MISSING_STEPS, carry_forward, window_ok
from .model_config import ModelConfig
from .scaling import Standardiser, relative_inputs, relative_targets, window_levels
from .trained_model import TrainedModel, build_net
from .windowing import WindowSpec, complete, input_windows, origins, target_windows
from .lstm_module import pinball_loss
from .train_options import TrainOptions

__all__ = ["Segment", "TrainOptions", "WindowSet", "build_windows", "fit_blend", "train"]


@dataclass
class Segment:
    """One series on the model's grid: times [T] and values [T, F] in feature order."""

    times: np.ndarray
    values: np.ndarray
    name: str = ""


@dataclass
class WindowSet:
    """Raw windows, targets and the times of their origins.

    For a `gap_channels` model the inputs are carried forward over gaps,
    `observed` marks what was seen, and targets may hold NaN (not scored).
    """

    inputs: np.ndarray  # [N, L, F]
    targets: np.ndarray  # [N, H, T]
    last_times: np.ndarray  # [N]
    observed: np.ndarray | None = None  # [N, L, F]

    def __len__(self) -> int:
        return len(self.inputs)


def build_windows(segments: Sequence[Segment], config: ModelConfig, valid_fraction: float) -> tuple[WindowSet, WindowSet]:
    """Training and validation windows from every segment, split by time within each."""
    spec = WindowSpec(config.lookback, config.horizon)
    idx = list(config.target_index)
    parts: dict[str, list] = {"train": [], "valid": []}
    for seg in segments:
        values = np.asarray(seg.values, dtype=np.float64)
        n = len(values)
        cut = int(n * (1 - valid_fraction)) if valid_fraction > 0 else n
        split = {"train": origins(n, spec, last=cut), "valid": origins(n, spec, first=cut) if valid_fraction > 0 else np.empty(0, np.int64)}
        if config.gap_channels:
            filled, observed = carry_forward(values)
        for key, at in split.items():
            if config.gap_channels:
                at = at[window_ok(filled, observed, at, spec.lookback)]
                targets = target_windows(values, at, spec.horizon)[:, :, idx]
                at, targets = at[np.isfinite(targets).any(axis=(1, 2))], targets[np.isfinite(targets).any(axis=(1, 2))]
                if at.size:
                    parts[key].append((input_windows(filled, at, spec.lookback), targets, seg.times[at],
                                       input_windows(observed, at, spec.lookback)))
                continue
            at = complete(values, at, spec)
            if at.size:
                parts[key].append((input_windows(values, at, spec.lookback), target_windows(values, at, spec.horizon)[:, :, idx], seg.times[at]))

    def stack(items: list) -> WindowSet:
        if not items:
            shape_in = (0, config.lookback, len(config.features))
            return WindowSet(np.empty(shape_in), np.empty((0, config.horizon, len(idx))), np.empty(0),
                             np.empty(shape_in) if config.gap_channels else None)
        fields = [np.concatenate([it[k] for it in items]) for k in range(len(items[0]))]
        return WindowSet(*fields)
    return stack(parts["train"]), stack(parts["valid"])


def blank_runs(windows: WindowSet, share: float, rng: np.random.Generator) -> WindowSet:
    """A copy where `share` of the windows lose one run of steps, carried forward and marked unseen.

    A run is 1 to 3/4 of a window long (gaps.MIN_OBSERVED_SHARE lets a
    forecast see a window a quarter scraped), and ends at most MAX_MISSING_STEPS
    before the window's end (what gaps.window_ok lets a forecast see).

    Training data rarely has gaps; without these the network would meet an
    unseen-step indicator for the first time in production.
    """
    if windows.observed is None or share <= 0 or len(windows) == 0:
        return windows
    inputs, observed = windows.inputs.copy(), windows.observed.copy()
    lookback = inputs.shape[1]
    chosen = np.flatnonzero(rng.random(len(inputs)) < share)
    lengths = rng.integers(1, max(3 * lookback // 4, 1) + 1, size=chosen.size)
    # a run may reach the window's end only if it is short enough to be a stale-but-usable tail
    last_start = np.where(lengths <= MAX_MISSING_STEPS, lookback - lengths, lookback - lengths - 1)
    starts = rng.integers(1, np.maximum(last_start, 1) + 1)
    for i, start, length in zip(chosen, starts, lengths):
        inputs[i, start : start + length] = inputs[i, start - 1]
        observed[i, start : start + length] = 0.0
    return WindowSet(inputs, windows.targets, windows.last_times, observed)


def train(segments: Sequence[Segment], config: ModelConfig, options: TrainOptions = TrainOptions(),
          init: TrainedModel | None = None) -> TrainedModel:
    """Train a model on `segments`; raises TrainingError when they hold too few complete windows.

    With `init` (fine-tuning, fine_tuning.py) training starts from its weights
    and keeps its scalers, so the data contract of the model stays the same;
    its own validation loss is the score to beat, so the result is never
    worse than `init` on the validation split.
    """
    _limit_threads(options)
    torch.manual_seed(options.seed)
    rng = np.random.default_rng(options.seed)
    train_set, valid_set = build_windows(segments, config, options.valid_fraction)
    if config.gap_channels:
        train_set = blank_runs(train_set, options.gap_share, rng)
    if len(train_set) < 16:
        raise TrainingError(
            f"only {len(train_set)} complete training windows of {config.lookback}+{config.horizon} steps; "
            "give a longer series or a shorter --lookback"
        )
    idx = list(config.target_index)
    if init is not None:
        input_scaler, target_scaler = init.input_scaler, init.target_scaler
    else:
        levels = window_levels(train_set.inputs, config.level_steps)
        input_scaler = Standardiser.fit(relative_inputs(train_set.inputs, levels))
        target_scaler = Standardiser.fit(relative_targets(train_set.inputs[:, :, idx], train_set.targets, levels[:, idx]))
    net = build_net(config)
    if init is not None:
        net.load_state_dict(init.net.state_dict())
    model = TrainedModel(config, net, input_scaler, target_scaler, shrink=np.ones(len(config.targets)))
    x_train, y_train = _tensors(model, train_set)
    x_valid, y_valid = _tensors(model, valid_set) if len(valid_set) else (None, None)
    quantiles = torch.tensor(config.quantiles, dtype=torch.float32)
    optimiser = torch.optim.AdamW(net.parameters(), lr=options.learning_rate, weight_decay=options.weight_decay)
    start_loss = _evaluate(net, x_valid, y_valid, quantiles) if init is not None and x_valid is not None else math.inf
    best = (start_loss, {k: v.clone() for k, v in net.state_dict().items()}, 0)
    history: list[dict[str, float]] = []
    started = time.monotonic()
    with _progress(options) as bar:
        task = bar.add_task("training", total=options.max_epochs) if bar else None
        for epoch in range(1, options.max_epochs + 1):
            net.train()
            order = rng.permutation(len(x_train))[: options.windows_per_epoch]
            if len(order) < options.min_windows_per_epoch:
                order = rng.choice(len(x_train), size=options.min_windows_per_epoch, replace=True)
            losses = []
            for start in range(0, len(order), options.batch_size):
                batch = torch.from_numpy(order[start : start + options.batch_size])
                optimiser.zero_grad()
                loss = pinball_loss(net(x_train[batch]), y_train[batch], quantiles)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
                optimiser.step()
                losses.append(loss.item())
            train_loss = float(np.mean(losses))
            valid_loss = _evaluate(net, x_valid, y_valid, quantiles) if x_valid is not None else train_loss
            history.append({"epoch": epoch, "train_loss": train_loss, "valid_loss": valid_loss})
            if valid_loss < best[0] - 1e-6:
                best = (valid_loss, {k: v.clone() for k, v in net.state_dict().items()}, epoch)
            if bar is not None:
                bar.update(task, advance=1, description=f"epoch {epoch} train {train_loss:.4f} valid {valid_loss:.4f}")
            if epoch - best[2] >= options.patience:
                break
            if options.time_budget_seconds and time.monotonic() - started > options.time_budget_seconds:
                break
    net.load_state_dict(best[1])
    if len(valid_set) >= 8:
        fit_blend(model, valid_set)
    model.metadata.update(
        {
            "epochs": len(history),
            "best_epoch": best[2],
            "train_windows": len(train_set),
            "valid_windows": len(valid_set),
            "train_seconds": round(time.monotonic() - started, 2),
            "validation": _validation_metrics(model, valid_set) if len(valid_set) else {},
            "loss_history": history,
        }
    )
    return model


def _tensors(model: TrainedModel, windows: WindowSet) -> tuple[torch.Tensor, torch.Tensor]:
    config = model.config
    x, levels = model.prepare(windows.inputs, windows.last_times, windows.observed)
    idx = list(config.target_index)
    y = model.target_scaler.transform(relative_targets(windows.inputs[:, :, idx], windows.targets, levels[:, idx]))
    return x, torch.from_numpy(y.astype(np.float32))


def _evaluate(net, x: torch.Tensor, y: torch.Tensor, quantiles: torch.Tensor) -> float:
    net.eval()
    with torch.inference_mode():
        total = 0.0
        for start in range(0, len(x), 4096):
            total += float(pinball_loss(net(x[start : start + 4096]), y[start : start + 4096], quantiles)) * len(x[start : start + 4096])
    return total / len(x)


BLEND_GRID = np.round(np.linspace(0.0, 1.0, 11), 2)
SMOOTH_ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.5)


def fit_blend(model: TrainedModel, valid: WindowSet) -> None:
    """Choose shrink, smooth_weight and smooth_alpha per target on validation MAE.

    The grid is small (weights in tenths with shrink + smooth_weight <= 1,
    four smoothing factors) and evaluated in closed form on the validation
    windows, so it costs milliseconds.
    """
    config = model.config
    idx = list(config.target_index)
    levels = window_levels(valid.inputs, config.level_steps)[:, idx]
    last = valid.inputs[:, -1, idx]
    truth = (valid.targets - last[:, None, :]) / levels[:, None, :]  # [N, H, T] in level units
    net = model.raw_deltas(valid.inputs, valid.last_times, valid.observed)[:, config.quantiles.index(0.5)]  # [N, H, T]
    n_t = len(idx)
    best = np.full(n_t, np.inf)
    shrink, weight, alpha = np.ones(n_t), np.zeros(n_t), np.full(n_t, 0.3)
    for a_smooth in SMOOTH_ALPHAS:
        smooth = model.smooth_deltas(valid.inputs, np.full(n_t, a_smooth))[:, None, :]
        for a in BLEND_GRID:
            for b in BLEND_GRID[BLEND_GRID <= 1.0 - a + 1e-9]:
                err = np.nanmean(np.abs(a * net + b * smooth - truth) * levels[:, None, :], axis=(0, 1))
                better = err < best - 1e-12
                best = np.where(better, err, best)
                shrink, weight, alpha = (np.where(better, a, shrink), np.where(better, b, weight), np.where(better, a_smooth, alpha))
    model.shrink, model.smooth_weight, model.smooth_alpha = shrink, weight, alpha


def _validation_metrics(model: TrainedModel, valid: WindowSet) -> dict[str, float]:
    pred = model.predict_windows(valid.inputs, valid.last_times, valid.observed)
    qs = model.config.quantiles
    median, low, high = pred[:, qs.index(0.5), -1], pred[:, 0, -1], pred[:, -1, -1]
    truth = valid.targets[:, -1]
    last = valid.inputs[:, -1, list(model.config.target_index)]
    out: dict[str, float] = {}
    for t, name in enumerate(model.config.targets):
        known = np.isfinite(truth[:, t])
        if not known.any():
            continue
        y = truth[known, t]
        out[f"{name}_mae"] = float(np.abs(median[known, t] - y).mean())
        out[f"{name}_mae_last_value"] = float(np.abs(last[known, t] - y).mean())
        lower = low[known, t] if len(qs) > 2 or qs[0] < 0.5 else np.full(len(y), -np.inf)
        out[f"{name}_band_coverage"] = float(((y >= lower) & (y <= high[known, t])).mean())
    out["shrink"] = [float(s) for s in model.shrink]  # type: ignore[assignment]
    out["smooth_weight"] = [float(s) for s in model.smooth_weight]  # type: ignore[assignment]
    out["smooth_alpha"] = [float(s) for s in model.smooth_alpha]  # type: ignore[assignment]
    return out


def _limit_threads(options: TrainOptions) -> None:
    threads = options.threads or 1
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


class _NoBar:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _progress(options: TrainOptions):
    if not options.progress:
        return _NoBar()
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=False)

