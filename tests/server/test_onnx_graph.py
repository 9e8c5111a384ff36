"""The fused variant's export: traced with dynamic shapes, and refused where it is not torch's math."""

from __future__ import annotations

import pytest
import torch
from types import SimpleNamespace

from forescale_server.onnx_graph import PARITY_SHAPES, PARITY_TOLERANCE, OnnxEncoder, _LastHidden, check_parity, export_onnx

from .variant_fixtures import tiny_teacher


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from transformers import AutoModel

    root = tmp_path_factory.mktemp("onnx")
    model = AutoModel.from_pretrained(str(tiny_teacher(root / "teacher"))).eval()
    export_onnx(model, root / "model.onnx")
    return model, OnnxEncoder(root / "model.onnx", threads=1)


@pytest.mark.parametrize("batch, length, padded_to", [
    (1, 1, None),      # one token: shorter than the trace's example
    (4, 12, 5),        # the example's length, another batch, a padded row
    (2, 100, 3),       # far longer than the example
    (7, 33, None),     # no padding at all: the general mask path with an all-ones mask
])
def test_the_graph_matches_torch_at_shapes_it_was_not_traced_at(exported, batch, length, padded_to):
    model, graph = exported
    ids = torch.randint(1000, 2000, (batch, length), generator=torch.Generator().manual_seed(length))
    mask = torch.ones_like(ids)
    if padded_to is not None:
        mask[-1, padded_to:] = 0
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).last_hidden_state
    hidden = graph(input_ids=ids, attention_mask=mask).last_hidden_state
    assert hidden.shape == expected.shape
    assert float((hidden - expected).abs().max()) < PARITY_TOLERANCE


class _Offset:
    """A stand-in graph whose hidden states are torch's plus `offset` (a wrong export)."""

    def __init__(self, model, offset: float):
        self.model, self.offset, self.path = _LastHidden(model), offset, "fake.onnx"

    def __call__(self, input_ids, attention_mask):
        with torch.no_grad():
            return SimpleNamespace(last_hidden_state=self.model(input_ids, attention_mask) + self.offset)


@pytest.mark.parametrize("offset, refused", [(0.0, False), (PARITY_TOLERANCE / 2, False), (PARITY_TOLERANCE * 10, True), (float("nan"), True)])
def test_a_graph_that_is_not_torch_s_math_is_refused_naming_the_shape(exported, offset, refused):
    model, _ = exported
    if not refused:
        check_parity(_LastHidden(model), _Offset(model, offset))
        return
    batch, length = PARITY_SHAPES[0]
    with pytest.raises(ValueError, match=rf"fake.onnx: the exported graph differs from torch by .* at batch {batch}, {length} tokens"):
        check_parity(_LastHidden(model), _Offset(model, offset))
