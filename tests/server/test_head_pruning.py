"""Pruning removes exactly the chosen heads (and the model still runs)."""

from __future__ import annotations

import pytest
import torch

from forescale_server.head_pruning import heads_per_layer, prune_heads
from forescale_server.head_sensitivity import HeadGates


def tiny_bert(seed: int = 0):
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32)
    return BertModel(config, add_pooling_layer=False).eval()


@pytest.mark.parametrize("heads", [{0: [1]}, {0: [0, 3], 1: [2]}, {1: [0, 1, 2]}, {}])
def test_pruned_model_equals_the_model_with_those_heads_gated_off(heads):
    model = tiny_bert()
    ids = torch.randint(0, 60, (2, 7))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    with HeadGates(model) as gates, torch.no_grad():
        for layer, drop in heads.items():
            gates.gates[layer].data[drop] = 0.0
        expected = model(input_ids=ids, attention_mask=mask).last_hidden_state
    prune_heads(model, heads)
    with torch.no_grad():
        got = model(input_ids=ids, attention_mask=mask).last_hidden_state
    assert heads_per_layer(model) == [4 - len(heads.get(0, [])), 4 - len(heads.get(1, []))]
    for layer, drop in heads.items():
        attention = model.encoder.layer[layer].attention
        kept = 4 - len(drop)
        assert attention.self.query.weight.shape == (kept * 4, 16)
        assert attention.self.value.weight.shape == (kept * 4, 16)
        assert attention.output.dense.weight.shape == (16, kept * 4)
    assert torch.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("heads, message", [
    ({2: [0]}, "layer 2 does not exist"),
    ({0: [4]}, "cannot remove"),
    ({0: [0, 1, 2, 3]}, "without attention"),
])
def test_bad_head_choices_are_refused(heads, message):
    with pytest.raises(ValueError, match=message):
        prune_heads(tiny_bert(), heads)
