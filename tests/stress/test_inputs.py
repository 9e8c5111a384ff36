"""Request inputs (forescale_stress.inputs): distinct or Zipf-drawn, and lengthened for a request-mix shift."""

from __future__ import annotations

import json

import pytest

from forescale_stress.inputs import InputPicker, lengthen


@pytest.mark.parametrize("text,scale,expected", [
    ("a b c", 1.0, "a b c"),
    ("a b c", 2.0, "a b c a b c"),
    ("a b c", 1.5, "a b c a"),        # round(4.5) = 4 (banker's rounding)
    ("a b c d", 0.5, "a b"),
    ("a b c", 0.01, "a"),             # never empty
])
def test_lengthen_repeats_the_words_in_order(text, scale, expected):
    assert lengthen(text, scale) == expected


def _words(body: bytes) -> int:
    return len(json.loads(body)["input"][0].split())


@pytest.mark.parametrize("distinct", [0, 20], ids=["every-input-new", "zipf-drawn"])
def test_the_scale_lengthens_every_input_from_the_next_request_on(distinct):
    plain = InputPicker("embeddings", "minilm", distinct, 1.0, seed=3)
    scaled = InputPicker("embeddings", "minilm", distinct, 1.0, seed=3, scale=4.0)
    before = [_words(plain.next()) for _ in range(50)]
    after = [_words(scaled.next()) for _ in range(50)]
    # the fresh inputs' serial tag "#n" is one word that is not lengthened
    tag = 1 if not distinct else 0
    assert [a - tag for a in after] == [4 * (b - tag) for b in before]
    scaled.set_scale(1.0)
    assert [_words(scaled.next()) for _ in range(50)] == [_words(plain.next()) for _ in range(50)]


def test_lengthened_inputs_are_new_inputs_to_a_cache():
    picker = InputPicker("embeddings", "minilm", 5, 1.0, seed=0)
    short = {picker.next() for _ in range(200)}
    picker.set_scale(2.0)
    long = {picker.next() for _ in range(200)}
    assert len(short) == len(long) == 5 and not short & long


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan")])
def test_a_scale_that_is_not_positive_is_refused(scale):
    with pytest.raises(ValueError, match="scale must be > 0"):
        InputPicker("embeddings", "minilm", 0, 1.0, seed=0, scale=scale)
