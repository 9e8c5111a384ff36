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


@pytest.mark.parametrize("shape, outliers", [
    ((256, 64), [5]),  # tokens x channels
    ((4, 64, 64), [5, 17, 40]),  # batch x tokens x channels, as the encoder calls it
])
def test_the_split_is_int8_of_the_other_channels_plus_fp32_of_the_outliers(shape, outliers):
    """The int8 part runs on the whole width with the outlier channels zeroed (one contiguous copy,
    not a gather of the rest): the same as int8 of the other channels alone, plus fp32 of the outliers."""
    torch.manual_seed(1)
    linear, x = nn.Linear(64, 32), torch.randn(*shape)
    x[..., outliers] *= 60
    idx = torch.tensor(outliers)
    normal = torch.tensor([i for i in range(64) if i not in outliers])
    alone = nn.Linear(len(normal), 32)
    alone.weight.data, alone.bias.data = linear.weight.detach()[:, normal].clone(), linear.bias.detach().clone()
    int8_alone = Q.dynamic_per_channel(nn.Sequential(alone))[0]
    expected = int8_alone(x.index_select(-1, normal)) + x.index_select(-1, idx) @ linear.weight.detach()[:, idx].t()
    got = Q.OutlierSplitLinear(linear, idx)(x)
    assert got.shape == expected.shape
    assert torch.allclose(got, expected, rtol=1e-4, atol=1e-3)


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
