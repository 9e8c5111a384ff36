"""Real English text for building and judging variants, from two different sources.

- **Training**: the Lee background corpus (299 Australian news articles, Lee,
  Pincombe & Welsh 2005) as shipped inside the PyPI package `gensim`
  (`gensim/test/test_data/lee_background.cor`; gensim is LGPL-2.1). Read as a
  file: gensim itself is not imported.
- **Evaluation (held out)**: the server's calibration sentences (the Zen of
  Python and Python 3.11 standard-library docstrings, PSF License) after the
  first 64, which the int8 precision uses to calibrate its outlier channels:
  236 sentences that no recipe has seen.

No sentence of one source is in the other; the split is by source.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from .calibration import calibration_sentences

TRAIN_SOURCE = "gensim (PyPI, LGPL-2.1): test/test_data/lee_background.cor, the Lee background news corpus, split into sentences"
EVAL_SOURCE = "forescale_server/calibration_sentences.txt after its first 64 (those calibrate int8): Zen of Python + Python 3.11 stdlib docstrings (PSF License)"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def lee_corpus_path() -> Path:
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("training text needs the package gensim (pip install gensim): its wheel ships the Lee news corpus")
    path = Path(list(spec.submodule_search_locations)[0]) / "test" / "test_data" / "lee_background.cor"
    if not path.is_file():
        raise ValueError(f"{path} is missing from the installed gensim")
    return path


def split_sentences(text: str, min_words: int = 5, max_words: int = 60) -> list[str]:
    """Sentences of `text` with `min_words`..`max_words` words, in order, without duplicates."""
    out, seen = [], set()
    for line in text.splitlines():
        for s in _SENTENCE_END.split(line.strip()):
            s = s.strip()
            if min_words <= len(s.split()) <= max_words and s not in seen:
                seen.add(s)
                out.append(s)
    return out


def training_sentences(limit: int | None = None) -> list[str]:
    sentences = split_sentences(lee_corpus_path().read_text(encoding="utf-8", errors="replace"))
    held_out = set(calibration_sentences())
    sentences = [s for s in sentences if s not in held_out]
    return sentences[:limit] if limit else sentences


def eval_sentences() -> list[str]:
    from .encoder_backend import AGREEMENT_SENTENCES

    return list(calibration_sentences()[AGREEMENT_SENTENCES:])
