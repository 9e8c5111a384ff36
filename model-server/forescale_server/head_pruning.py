"""Removing attention heads from a BERT encoder for real: the query, key and
value projections lose the heads' output rows and the attention output
projection loses the matching input columns, so the pruned model does less
work (not a mask). transformers 5 dropped `prune_heads`, so it is done here;
the self-attention reshapes with -1 heads, so layers may keep different
numbers of heads."""

from __future__ import annotations

import torch
from torch import nn

from .head_sensitivity import attention_modules


def _keep_rows(linear: nn.Linear, index: torch.Tensor) -> nn.Linear:
    out = nn.Linear(linear.in_features, len(index), bias=linear.bias is not None)
    out.weight.data = linear.weight.detach()[index].clone()
    if linear.bias is not None:
        out.bias.data = linear.bias.detach()[index].clone()
    return out


def _keep_columns(linear: nn.Linear, index: torch.Tensor) -> nn.Linear:
    out = nn.Linear(len(index), linear.out_features, bias=linear.bias is not None)
    out.weight.data = linear.weight.detach()[:, index].clone()
    if linear.bias is not None:
        out.bias.data = linear.bias.detach().clone()
    return out


def _output_projection(model: nn.Module, layer: int) -> nn.Module:
    """The module holding the attention output `dense` of layer `layer` (BERT: encoder.layer.N.attention.output)."""
    return model.get_submodule(f"encoder.layer.{layer}.attention.output")


def prune_heads(model: nn.Module, heads: dict[int, list[int]]) -> nn.Module:
    """Remove `heads` ({layer index: [head indices]}) in place; returns the model."""
    attention = attention_modules(model)
    for layer, drop in heads.items():
        layer = int(layer)
        if not 0 <= layer < len(attention):
            raise ValueError(f"layer {layer} does not exist (the model has {len(attention)})")
        module = attention[layer]
        n, size = module.num_attention_heads, module.attention_head_size
        drop = sorted(set(int(h) for h in drop))
        if any(not 0 <= h < n for h in drop):
            raise ValueError(f"layer {layer} has heads 0..{n - 1}; cannot remove {drop}")
        if len(drop) >= n:
            raise ValueError(f"removing heads {drop} would leave layer {layer} without attention")
        if not drop:
            continue
        kept = [h for h in range(n) if h not in drop]
        index = torch.cat([torch.arange(h * size, (h + 1) * size) for h in kept])
        module.query = _keep_rows(module.query, index)
        module.key = _keep_rows(module.key, index)
        module.value = _keep_rows(module.value, index)
        module.num_attention_heads = len(kept)
        module.all_head_size = len(kept) * size
        out = _output_projection(model, layer)
        out.dense = _keep_columns(out.dense, index)
    return model


def heads_per_layer(model: nn.Module) -> list[int]:
    return [m.num_attention_heads for m in attention_modules(model)]
