"""The fused/frozen-graph variant: the encoder exported to ONNX by torch's
dynamo exporter (its optimiser folds constants) and run by onnxruntime with
all graph optimisations on (operator fusion: attention, LayerNorm, GELU).

The legacy TorchScript exporter was tried first: with transformers 5 it bakes
the traced sequence length and mask path into the graph, and its embeddings
were wrong (max error > 1); the dynamo export matches torch to ~5e-6.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

ONNX_FILE = "model.onnx"


class _LastHidden(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def export_onnx(model: nn.Module, path: Path, max_len: int = 512) -> None:
    """Export with dynamic batch and sequence length into one file."""
    ids = torch.randint(1000, 2000, (2, 12))
    mask = torch.ones_like(ids)
    mask[1, 8:] = 0  # a padded row, so the masking path is the general one
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=max_len)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            _LastHidden(model).eval(), (ids, mask), input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
            dynamic_shapes={"input_ids": {0: batch, 1: length}, "attention_mask": {0: batch, 1: length}},
            dynamo=True, optimize=True, verbose=False,
        )
    program.save(str(path), external_data=False)


class OnnxEncoder:
    """Called like a transformers encoder: `(input_ids=, attention_mask=)` ->
    an object with `last_hidden_state` (a CPU torch tensor)."""

    def __init__(self, path: Path, threads: int = 0):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.training = False

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> SimpleNamespace:
        feeds = {"input_ids": np.ascontiguousarray(input_ids.cpu().numpy()), "attention_mask": np.ascontiguousarray(attention_mask.cpu().numpy())}
        (hidden,) = self.session.run(None, feeds)
        return SimpleNamespace(last_hidden_state=torch.from_numpy(hidden))

    def eval(self) -> "OnnxEncoder":
        return self

    def to(self, device) -> "OnnxEncoder":
        if torch.device(device).type != "cpu":
            raise ValueError("the fused (ONNX) variant runs on onnxruntime's CPU provider only")
        return self
