"""Head sensitivity scores against a gradient computed by hand on a toy, and the head choice."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from forescale_server.head_sensitivity import head_sensitivity, lowest_heads


class ToyAttention(nn.Module):
    """Two heads of size 2 whose output is a fixed linear map of the input."""

    num_attention_heads = 2
    attention_head_size = 2

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 4, bias=False)
        with torch.no_grad():
            self.proj.weight.copy_(torch.tensor([[1.0, 0, 0], [0, 2.0, 0], [0, 0, -1.0], [1.0, 1.0, 1.0]]))

    def forward(self, x):
        return (self.proj(x), None)


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = ToyAttention()

    def forward(self, x):
        return self.attn(x)[0]


# L(batch) = sum over rows and positions of w . output, so with a gate xi_h on
# head h, dL/dxi_h = sum over rows of w[h-slice] . output[h-slice], by hand.
W = torch.tensor([0.5, -1.0, 2.0, 1.0])


def toy_loss(model, x):
    return (model(x) * W).sum()


def by_hand(x: torch.Tensor) -> torch.Tensor:
    out = x @ torch.tensor([[1.0, 0, 0], [0, 2.0, 0], [0, 0, -1.0], [1.0, 1.0, 1.0]]).T  # (rows, 4)
    weighted = out * W
    return torch.stack([weighted[:, 0:2].sum(), weighted[:, 2:4].sum()])


@pytest.mark.parametrize("batches", [
    [torch.tensor([[1.0, 2.0, 3.0]])],
    [torch.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 1.0]]), torch.tensor([[-3.0, 1.0, 2.0]])],
    [torch.tensor([[0.2, 0.1, -0.4]]), torch.tensor([[1.0, 1.0, 1.0]]), torch.tensor([[-1.0, 0.0, 2.0]])],
])
def test_scores_equal_the_hand_computed_mean_absolute_gradient(batches):
    scores = head_sensitivity(Toy(), batches, toy_loss)
    expected = torch.stack([by_hand(x).abs() for x in batches]).mean(0)
    assert len(scores) == 1
    assert torch.allclose(scores[0], expected, atol=1e-6)


def test_scores_on_a_tiny_bert_match_finite_differences(tmp_path):
    from transformers import BertConfig, BertModel

    from forescale_server.head_sensitivity import HeadGates

    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32), add_pooling_layer=False).eval()
    ids = torch.randint(0, 50, (3, 6))

    def loss(m, batch):
        return m(input_ids=batch).last_hidden_state.pow(2).mean()

    scores = head_sensitivity(model, [ids], loss)
    eps = 1e-3
    for layer, head in ((0, 1), (1, 3)):
        values = []
        for sign in (1, -1):
            with HeadGates(model) as gates, torch.no_grad():
                gates.gates[layer].data[head] += sign * eps
                values.append(float(loss(model, ids)))
        numeric = abs(values[0] - values[1]) / (2 * eps)
        assert scores[layer][head].item() == pytest.approx(numeric, rel=2e-2, abs=1e-6)


@pytest.mark.parametrize("scores, fraction, expected", [
    ([[0.5, 0.1, 0.9, 0.3], [0.2, 0.8, 0.05, 0.7]], 0.25, {0: [1], 1: [2]}),
    ([[0.5, 0.1, 0.9, 0.3], [0.2, 0.8, 0.05, 0.7]], 0.5, {0: [1, 3], 1: [0, 2]}),
    # the lowest three are all in layer 0, which must keep one head
    ([[0.01, 0.02, 0.03], [0.5, 0.6, 0.7]], 0.5, {0: [0, 1], 1: [0]}),
    ([[0.4, 0.3], [0.2, 0.1]], 0.0, {}),
])
def test_lowest_heads(scores, fraction, expected):
    assert lowest_heads([torch.tensor(s) for s in scores], fraction) == expected


def test_lowest_heads_rejects_a_bad_fraction():
    with pytest.raises(ValueError, match="prune fraction"):
        lowest_heads([torch.tensor([1.0, 2.0])], 1.0)
