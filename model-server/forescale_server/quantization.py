"""int8 variants of an encoder for CPU serving, and how they are compared.

Schemes (the ones the seeds compare, plus two refinements):

- `dynamic-per-tensor`: every Linear, int8 weights with one scale per tensor,
  activations quantized per batch at run time (torch `quantize_dynamic`).
- `dynamic-per-channel`: the same with one weight scale per output channel.
- `static-per-channel`: activations too get fixed scales, observed on the
  calibration set (eager-mode quant/dequant stubs around each Linear).
- `weight-only`: int8 weights, dequantized for an fp32 matmul (memory, not speed).
- `sensitive-fp32`: dynamic per-channel, with the Linear layers whose lone
  quantization hurts agreement most (measured on calibration sentences) kept
  in fp32 until the calibration agreement reaches a target.
- `smooth-dynamic`: SmoothQuant-style smoothing (activation outliers moved into
  the weights by a per-input-channel scale, alpha 0.5) before dynamic
  per-channel quantization; optionally with sensitive layers kept in fp32.
- `outlier-split`: LLM.int8()-style decomposition with a calibrated, fixed set
  of outlier input channels kept in fp32, applied to the sensitive layers; the
  server's `int8` (`server_int8`).
"""

from __future__ import annotations

import copy
import warnings
from typing import Callable, Iterable

import torch
from torch import nn
with warnings.catch_warnings():
    # torch.ao.quantization warns that it moves to torchao; its eager kernels are what runs here.
    warnings.simplefilter("ignore")
    from torch.ao.quantization import (
        DeQuantStub,
        QuantStub,
        default_dynamic_qconfig,
        get_default_qconfig,
        per_channel_dynamic_qconfig,
        quantize_dynamic,
    )

Embed = Callable[[nn.Module, list[str]], torch.Tensor]

#: all-MiniLM-L6-v2's eight most sensitive Linear layers, most sensitive first:
#: agreement lost when each alone is quantized (dynamic per-channel), measured
#: on the first 128 calibration sentences by `bench/server_quantization.py`.
#: Measuring takes minutes on 2 cores, too slow for a precision switch, so the
#: server ships the result. Kept wholly in fp32 they give mean cosine 0.994 but
#: only ~1.5x; with just their outlier channels in fp32 (the server's int8)
#: cosine 0.992 at ~2x (bench/server_quantization.py, docs/model-server.md).
MINILM_SENSITIVE = (
    "encoder.layer.0.output.dense",
    "encoder.layer.1.output.dense",
    "encoder.layer.4.intermediate.dense",
    "encoder.layer.3.intermediate.dense",
    "encoder.layer.1.intermediate.dense",
    "encoder.layer.2.intermediate.dense",
    "encoder.layer.2.output.dense",
    "encoder.layer.0.intermediate.dense",
)


def default_sensitive(model: nn.Module) -> list[str]:
    """Layers kept in fp32 for a model without a measured list: the FFN
    projections of the first two layers, the most sensitive kind in MiniLM."""
    names = linear_names(model)
    return [n for n in names if n.endswith(("intermediate.dense", "output.dense")) and "attention" not in n and (".0." in n or ".1." in n)]


#: share of input channels kept in fp32 in the sensitive layers of the server's int8
OUTLIER_FRACTION = 0.01


def server_int8(model: nn.Module, is_minilm: bool, calibrate: Callable[[nn.Module], None]) -> tuple[nn.Module, list[str]]:
    """The server's `int8`: every Linear int8 (dynamic, per-channel weights);
    in the sensitive layers the 1% of input channels with the largest
    calibration activations stay fp32 (`OutlierSplitLinear`), which keeps
    per-tensor activation scales from being stretched by them.
    Returns the model and the names of the split layers."""
    split = list(MINILM_SENSITIVE) if is_minilm else default_sensitive(model)
    return outlier_split(model, calibrate, OUTLIER_FRACTION, only=split), split


def linear_names(model: nn.Module) -> list[str]:
    """Names of the model's Linear layers, in order."""
    return [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]


def _dynamic(model: nn.Module, qconfig, skip: Iterable[str] = ()) -> nn.Module:
    skip = set(skip)
    spec = {name: qconfig for name in linear_names(model) if name not in skip}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quantize_dynamic(copy.deepcopy(model), spec, dtype=torch.qint8)


def dynamic_per_tensor(model: nn.Module, **_) -> nn.Module:
    return _dynamic(model, default_dynamic_qconfig)


def dynamic_per_channel(model: nn.Module, skip: Iterable[str] = (), **_) -> nn.Module:
    return _dynamic(model, per_channel_dynamic_qconfig, skip)


class _StaticLinear(nn.Module):
    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.quant, self.linear, self.dequant = QuantStub(), linear, DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.linear(self.quant(x)))


def _replace(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, module)


def static_per_channel(model: nn.Module, calibrate: Callable[[nn.Module], None], **_) -> nn.Module:
    """Observers on every Linear's input and output, run over the calibration set, then converted."""
    from torch.ao.quantization import convert, prepare

    q = copy.deepcopy(model)
    for name in linear_names(q):
        wrapper = _StaticLinear(q.get_submodule(name))
        wrapper.qconfig = get_default_qconfig("x86")
        _replace(q, name, wrapper)
    prepare(q, inplace=True)
    calibrate(q)
    convert(q, inplace=True)
    return q


class WeightOnlyLinear(nn.Module):
    """int8 weights with per-output-channel scales, dequantized at each call."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        w = linear.weight.detach()
        scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
        self.register_buffer("qweight", torch.round(w / scale[:, None]).to(torch.int8))
        self.register_buffer("scale", scale)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.qweight.to(x.dtype) * self.scale[:, None].to(x.dtype), self.bias)


def weight_only(model: nn.Module, **_) -> nn.Module:
    q = copy.deepcopy(model)
    for name in linear_names(q):
        _replace(q, name, WeightOnlyLinear(q.get_submodule(name)))
    return q


class _Smooth(nn.Module):
    """Divides the input by a per-channel scale that was multiplied into the weights."""

    def __init__(self, inv_scale: torch.Tensor, linear: nn.Module):
        super().__init__()
        self.register_buffer("inv_scale", inv_scale)
        self.linear = linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x * self.inv_scale)


def activation_ranges(model: nn.Module, calibrate: Callable[[nn.Module], None]) -> dict[str, torch.Tensor]:
    """Per-input-channel max |x| of every Linear over the calibration set."""
    ranges: dict[str, torch.Tensor] = {}
    hooks = []
    for name in linear_names(model):
        def hook(_m, args, _out, name=name):
            amax = args[0].detach().abs().reshape(-1, args[0].shape[-1]).amax(dim=0)
            ranges[name] = torch.maximum(ranges[name], amax) if name in ranges else amax
        hooks.append(model.get_submodule(name).register_forward_hook(hook))
    try:
        calibrate(model)
    finally:
        for h in hooks:
            h.remove()
    return ranges


def smooth_dynamic(model: nn.Module, calibrate: Callable[[nn.Module], None], skip: Iterable[str] = (), alpha: float = 0.5, **_) -> nn.Module:
    """SmoothQuant: s_j = max|X_j|^a / max|W_j|^(1-a); W' = W * s, X' = X / s; then dynamic per-channel."""
    skip = set(skip)
    ranges = activation_ranges(model, calibrate)
    smoothed = copy.deepcopy(model)
    names = [n for n in linear_names(smoothed) if n not in skip]
    for name in names:
        linear = smoothed.get_submodule(name)
        w_max = linear.weight.detach().abs().amax(dim=0).clamp(min=1e-5)
        s = (ranges[name].clamp(min=1e-5) ** alpha / w_max ** (1 - alpha)).clamp(min=1e-2, max=1e2)
        linear.weight.data *= s[None, :]
        _replace(smoothed, name, _Smooth(1.0 / s, linear))
    spec = {f"{name}.linear": per_channel_dynamic_qconfig for name in names}
    return quantize_dynamic(smoothed, spec, dtype=torch.qint8)


def mean_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean cosine similarity of matching rows."""
    return float(nn.functional.cosine_similarity(a.float(), b.float(), dim=1).mean())


def layer_sensitivity(model: nn.Module, embed: Embed, texts: list[str], reference: torch.Tensor, build=dynamic_per_channel) -> dict[str, float]:
    """Agreement lost when each Linear alone is quantized: 1 - mean cosine with fp32."""
    names = linear_names(model)
    out = {}
    for name in names:
        q = build(model, skip=[n for n in names if n != name])
        out[name] = 1.0 - mean_cosine(embed(q, texts), reference)
    return out


class BF16Linear(nn.Module):
    """A Linear run in bfloat16 (native on CPUs with avx512_bf16/AMX), fp32 in and out."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.linear = copy.deepcopy(linear).to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.to(torch.bfloat16)).to(x.dtype)


def dynamic_with_bf16(model: nn.Module, skip: Iterable[str] = (), **_) -> nn.Module:
    """Dynamic per-channel int8 everywhere except `skip`, which run in bf16 instead of fp32."""
    q = dynamic_per_channel(model, skip=skip)
    for name in skip:
        _replace(q, name, BF16Linear(model.get_submodule(name)))
    return q


class OutlierSplitLinear(nn.Module):
    """LLM.int8()-style decomposition with a fixed outlier set: the few input
    channels whose calibration activations are largest stay in fp32, the rest
    go through a dynamic int8 Linear whose per-tensor activation scale is then
    no longer stretched by them.

    Why the int8 part takes the whole width with the outlier channels zeroed,
    not a gather of the others: a gather of 99% of the channels cost as much as
    a tenth of the int8 forward on the server's short length-grouped batches,
    where a zeroed copy is one contiguous copy. The zeros change neither the
    activations' dynamic range (it always includes 0) nor the product, and the
    int8 weight's outlier columns are zero too, so each output channel's weight
    scale is taken over the same columns as before. The fp32 part is
    accumulated into the int8 result in place (one GEMM, no extra add pass)."""

    def __init__(self, linear: nn.Linear, outliers: torch.Tensor):
        super().__init__()
        self.register_buffer("outlier_idx", outliers.sort().values)
        inner = nn.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None)
        weight = linear.weight.detach().clone()
        weight[:, self.outlier_idx] = 0.0
        inner.weight.data = weight
        if linear.bias is not None:
            inner.bias.data = linear.bias.detach().clone()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.int8 = quantize_dynamic(nn.Sequential(inner), {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)[0]
        self.register_buffer("outlier_weight", linear.weight.detach()[:, self.outlier_idx].t().contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.int8(x.index_fill(-1, self.outlier_idx, 0.0)).contiguous()
        flat = y.view(-1, y.shape[-1])
        flat.addmm_(x.reshape(-1, x.shape[-1]).index_select(-1, self.outlier_idx), self.outlier_weight)
        return y


def outlier_split(
    model: nn.Module, calibrate: Callable[[nn.Module], None], fraction: float = 0.02, skip: Iterable[str] = (), only: Iterable[str] | None = None, **_
) -> nn.Module:
    """Every Linear int8 except its top `fraction` input channels by calibration
    activation range (at least one), which stay fp32; `skip` layers stay fp32.
    With `only`, just those layers are split and the rest are plain dynamic
    per-channel int8 (the split's extra ops cost time on short sequences)."""
    skip = set(skip)
    only = None if only is None else set(only)
    ranges = activation_ranges(model, calibrate)
    q = copy.deepcopy(model)
    plain = []
    for name in linear_names(q):
        if name in skip:
            continue
        if only is not None and name not in only:
            plain.append(name)
            continue
        linear = q.get_submodule(name)
        k = max(1, int(round(fraction * linear.in_features)))
        _replace(q, name, OutlierSplitLinear(linear, ranges[name].topk(k).indices))
    if plain:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = quantize_dynamic(q, {name: per_channel_dynamic_qconfig for name in plain}, dtype=torch.qint8)
    return q
