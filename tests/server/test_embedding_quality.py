"""Mean cosine and pairwise Spearman against hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from forescale_server.embedding_quality import mean_cosine, pairwise_spearman, spearman


@pytest.mark.parametrize("x, y, rho", [
    ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
    ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
    ([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], 0.8),  # 1 - 6*4/(5*24)
    ([1, 2, 2, 3], [1, 2, 3, 4], 0.9486833),  # ties get their mean rank
])
def test_spearman(x, y, rho):
    assert spearman(x, y) == pytest.approx(rho, abs=1e-6)


@pytest.mark.parametrize("a, b, expected", [
    ([[1, 0], [0, 1]], [[2, 0], [0, 3]], 1.0),
    ([[1, 0], [0, 1]], [[0, 1], [0, 1]], 0.5),
    ([[1, 0]], [[-1, 0]], -1.0),
])
def test_mean_cosine(a, b, expected):
    assert mean_cosine(np.array(a, float), np.array(b, float)) == pytest.approx(expected)


def test_pairwise_spearman_is_one_for_a_rotation_and_lower_for_noise():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(20, 8))
    q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    assert pairwise_spearman(ref, ref @ q) == pytest.approx(1.0)
    assert pairwise_spearman(ref, ref + rng.normal(scale=1.0, size=ref.shape)) < 0.95
