"""The forecaster network: an LSTM with a linear autoregressive skip.

Input: [batch, lookback, inputs] (standardised relative values, then the
1/0 observed indicators and the time of day when the model uses them). Output: [batch, quantiles, horizon, targets] in
standardised target units (the change from the last value; see scaling.py).

- The LSTM's last hidden state feeds a linear head for every horizon step,
  target and quantile at once (multi-step, multivariate).
- A linear skip from the last `ar_steps` inputs of each target adds a plain
  autoregressive term; the network then only learns what a linear model on
  lags cannot, which makes it hard to do worse than that baseline.
- Quantiles cannot cross: the median is produced directly, each quantile
  above it adds a softplus increment to the one below, each quantile below
  subtracts one from the one above.
- The output layers start at zero, so an untrained model forecasts the last
  value, and training moves away from it only when that lowers the loss.
"""

from __future__ import annotations

import torch
from torch import nn


class LSTMForecastNet(nn.Module):
    """See the module docstring."""

    def __init__(
        self,
        *,
        inputs: int,
        targets: int,
        horizon: int,
        quantiles: int,
        hidden: int = 32,
        layers: int = 1,
        ar_steps: int = 8,
        target_index: tuple[int, ...] | None = None,
        median_index: int | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.inputs, self.targets, self.horizon, self.n_quantiles = inputs, targets, horizon, quantiles
        self.ar_steps = ar_steps
        self.median_index = quantiles // 2 if median_index is None else median_index
        index = list(target_index if target_index is not None else range(targets))
        self.register_buffer("target_index", torch.tensor(index, dtype=torch.long), persistent=False)
        self.lstm = nn.LSTM(inputs, hidden, num_layers=layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        out = quantiles * horizon * targets
        self.head = nn.Linear(hidden, out)
        self.skip = nn.Linear(ar_steps * targets, horizon * targets)
        for layer in (self.head, self.skip):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, L, inputs] -> [B, Q, H, targets]."""
        batch = x.shape[0]
        seq, _ = self.lstm(x)
        raw = self.head(seq[:, -1, :]).view(batch, self.n_quantiles, self.horizon, self.targets)
        lags = x[:, -self.ar_steps :, :].index_select(2, self.target_index).reshape(batch, -1)
        ar = self.skip(lags).view(batch, 1, self.horizon, self.targets)
        m = self.median_index
        median = raw[:, m : m + 1] + ar
        parts = [median]
        if m + 1 < self.n_quantiles:
            parts.append(median + torch.cumsum(nn.functional.softplus(raw[:, m + 1 :]), dim=1))
        if m > 0:
            below = torch.cumsum(nn.functional.softplus(raw[:, :m]).flip(1), dim=1).flip(1)
            parts.insert(0, median - below)
        return torch.cat(parts, dim=1)


def pinball_loss(pred: torch.Tensor, target: torch.Tensor, quantiles: torch.Tensor) -> torch.Tensor:
    """Mean pinball (quantile) loss; pred [B, Q, H, T], target [B, H, T], quantiles [Q].

    NaN targets (latency in an idle step, a missing scrape) are left out of the mean.
    """
    known = torch.isfinite(target)
    diff = torch.where(known, target, torch.zeros_like(target)).unsqueeze(1) - pred
    q = quantiles.view(1, -1, 1, 1)
    loss = torch.maximum(q * diff, (q - 1) * diff)
    weight = known.unsqueeze(1).expand_as(loss).to(loss.dtype)
    return (loss * weight).sum() / weight.sum().clamp(min=1.0)
