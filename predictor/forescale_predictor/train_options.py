"""Knobs of a training run, importable without torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainOptions:
    """Knobs of one training run; the defaults suit a 2-core machine."""

    max_epochs: int = 30
    patience: int = 4
    batch_size: int = 256
    learning_rate: float = 3e-3
    weight_decay: float = 1e-4
    valid_fraction: float = 0.15
    windows_per_epoch: int = 8192
    min_windows_per_epoch: int = 4096  # small data is resampled so an epoch still takes enough steps
    seed: int = 0
    # One thread: on a shared 2-core machine a second OpenMP thread spin-waits
    # and made an LSTM step 20x slower (measured: 1.7 s vs 0.09 s per batch).
    threads: int = 1
    progress: bool = True
    time_budget_seconds: float = 0.0  # 0: no limit besides max_epochs
    # share of training windows given one synthetic run of missing scrapes (gap_channels models)
    gap_share: float = 0.2
