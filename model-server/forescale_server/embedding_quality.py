"""How close a variant's embeddings are to the teacher's on held-out sentences."""

from __future__ import annotations

import numpy as np


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)


def mean_cosine(a, b) -> float:
    """Mean cosine similarity of matching rows."""
    return float(np.mean(np.sum(_unit(a) * _unit(b), axis=1)))


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (as Spearman's rho needs)."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(len(x), dtype=np.float64)
    sorted_x = x[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_x)) + 1]
    ends = np.r_[starts[1:], len(x)]
    for s, e in zip(starts, ends):
        if e - s > 1:
            ranks[order[s:e]] = (s + e - 1) / 2.0
    return ranks


def spearman(x, y) -> float:
    rx, ry = _ranks(np.asarray(x, dtype=np.float64)), _ranks(np.asarray(y, dtype=np.float64))
    rx -= rx.mean()
    ry -= ry.mean()
    denom = np.sqrt((rx * rx).sum() * (ry * ry).sum())
    return float((rx * ry).sum() / denom) if denom > 0 else 0.0


def pairwise_spearman(reference, candidate) -> float:
    """Spearman correlation of all pairwise cosine similarities (upper triangle)."""
    ref, cand = _unit(reference), _unit(candidate)
    iu = np.triu_indices(len(ref), 1)
    return spearman((ref @ ref.T)[iu], (cand @ cand.T)[iu])


def quality(reference, candidate) -> dict:
    return {"mean_cosine": round(mean_cosine(candidate, reference), 6),
            "spearman": round(pairwise_spearman(reference, candidate), 6),
            "eval_sentences": int(len(reference))}
