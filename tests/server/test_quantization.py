"""int8 building blocks on small random layers (fast; the real model is in test_encoder_backend)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from forescale_server import quantization as Q


def _layer_and_inputs(outliers: bool):
    torch.manual_seed(0)
    linear = nn.Linear(64, 32)
    x = torch.randn(256, 64)
    if outliers:
        x[:, 5] *= 60  # one systematic outlier channel, as after LayerNorm in BERT
    return linear, x


def _rel_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm())


def test_outlier_split_beats_plain_dynamic_int8_on_outlier_inputs():
    linear, x = _layer_and_inputs(outliers=True)
    expected = linear(x)
    plain = Q.dynamic_per_channel(nn.Sequential(linear))[0]
    split = Q.OutlierSplitLinear(linear, torch.tensor([5]))
    assert _rel_error(split(x), expected) < 0.25 * _rel_error(plain(x), expected)
    assert _rel_error(split(x), expected) < 0.02


@pytest.mark.parametrize("build", [Q.dynamic_per_tensor, Q.dynamic_per_channel, Q.weight_only])
def test_each_scheme_stays_close_to_fp32_on_plain_inputs(build):
    linear, x = _layer_and_inputs(outliers=False)
    model = build(nn.Sequential(linear))
    assert _rel_error(model(x), linear(x)) < 0.05


def test_activation_ranges_find_the_outlier_channel():
    linear, x = _layer_and_inputs(outliers=True)
    model = nn.Sequential(linear)
    ranges = Q.activation_ranges(model, lambda m: m(x))
    assert int(ranges["0"].argmax()) == 5


def test_skipped_layers_stay_fp32():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    quantized = Q.dynamic_per_channel(model, skip=["2"])
    assert type(quantized[2]) is nn.Linear and type(quantized[0]) is not nn.Linear
