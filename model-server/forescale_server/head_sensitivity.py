"""Attention-head sensitivity scores (Michel et al. 2019, "Are Sixteen Heads
Really Better than One?"): every head's output is multiplied by a gate
xi_i = 1, and S_i = (1/N) sum_j |dL_j/dxi_i| over N batches.

Here dL/dxi_i is the derivative of the loss with respect to the head's whole
output H_i (the seeds' dL/dH_ij), contracted with H_i: it says how much the
loss moves if the head's contribution is scaled, and dropping a head is
xi_i = 0. Gates are forward hooks on the self-attention modules, so the model
is not changed and any module with `num_attention_heads` and
`attention_head_size` that returns `(context, ...)` with context shaped
(batch, tokens, heads * head_size) can be scored.
"""

from __future__ import annotations

from typing import Callable, Iterable

import torch
from torch import nn


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """The self-attention modules, in layer order."""
    return [m for m in model.modules() if hasattr(m, "num_attention_heads") and hasattr(m, "attention_head_size") and isinstance(m, nn.Module)]


class HeadGates:
    """One gate per head of every attention module, all 1, differentiable."""

    def __init__(self, model: nn.Module):
        self.modules = attention_modules(model)
        if not self.modules:
            raise ValueError("the model has no attention modules with num_attention_heads/attention_head_size")
        self.gates = [torch.ones(m.num_attention_heads, requires_grad=True) for m in self.modules]
        self._hooks = []

    def __enter__(self) -> "HeadGates":
        for module, gate in zip(self.modules, self.gates):
            self._hooks.append(module.register_forward_hook(_gate_hook(gate, module.attention_head_size)))
        return self

    def __exit__(self, *exc) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks.clear()


def _gate_hook(gate: torch.Tensor, head_size: int):
    def hook(_module, _args, output):
        context = output[0] if isinstance(output, tuple) else output
        shape = context.shape
        gated = (context.view(*shape[:-1], -1, head_size) * gate[:, None]).view(shape)
        return (gated, *output[1:]) if isinstance(output, tuple) else gated
    return hook


def head_sensitivity(model: nn.Module, batches: Iterable, loss: Callable[[nn.Module, object], torch.Tensor]) -> list[torch.Tensor]:
    """S_i = (1/N) sum_j |dL(batch_j)/dxi_i|, one tensor of scores per attention
    module (layer). `loss(model, batch)` returns the scalar loss of one batch."""
    was_training = model.training
    model.eval()  # dropout off: the scores describe the served model
    totals: list[torch.Tensor] | None = None
    n = 0
    try:
        with HeadGates(model) as gates:
            for batch in batches:
                for g in gates.gates:
                    g.grad = None
                loss(model, batch).backward()
                grads = [g.grad.detach().abs().clone() for g in gates.gates]
                totals = grads if totals is None else [t + g for t, g in zip(totals, grads)]
                n += 1
    finally:
        model.train(was_training)
        model.zero_grad(set_to_none=True)
    if not n:
        raise ValueError("head sensitivity needs at least one batch")
    return [t / n for t in totals]


def lowest_heads(scores: list[torch.Tensor], fraction: float, keep_per_layer: int = 1) -> dict[int, list[int]]:
    """The `fraction` of all heads with the lowest scores, per layer index;
    every layer keeps at least `keep_per_layer` heads (a layer with none would
    have no attention at all)."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"prune fraction must be in [0, 1), got {fraction}")
    total = sum(len(s) for s in scores)
    target = int(round(fraction * total))
    ranked = sorted(((float(s[h]), layer, h) for layer, s in enumerate(scores) for h in range(len(s))))
    chosen: dict[int, list[int]] = {}
    for _, layer, head in ranked:
        if sum(len(v) for v in chosen.values()) >= target:
            break
        if len(scores[layer]) - len(chosen.get(layer, [])) <= keep_per_layer:
            continue
        chosen.setdefault(layer, []).append(head)
    return {layer: sorted(heads) for layer, heads in sorted(chosen.items())}
