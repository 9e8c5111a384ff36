"""Real English text for building and judging variants, from different sources.

- **Training**, two kinds of prose:
  - the Lee background corpus (299 Australian news articles, Lee, Pincombe &
    Welsh 2005) as shipped inside the PyPI package `gensim`
    (`gensim/test/test_data/lee_background.cor`; gensim is LGPL-2.1). Read as
    a file: gensim itself is not imported;
  - the docstrings of the installed packages numpy, scipy, networkx, sympy
    (BSD-3-Clause), torch (BSD-3-Clause) and transformers (Apache-2.0): the
    project's own requirements and theirs (sympy and networkx come with
    torch, scipy with gensim), read from their source files with `ast`:
    nothing is imported, so nothing runs. Only the prose before a docstring's
    first section (Parameters, Examples ...) is kept, and no doctest.
  Why both: a student trained on news alone learned the news (its train
  distance fell to 0.08) and stayed at a mean cosine of 0.72 on technical
  prose; with the docstrings beside the news it reached 0.90 in one epoch
  (docs/model-server.md). A service distils on the kind of text it serves.
  Why six packages: the student is limited by its data, not its epochs. On
  the 13,949 sentences of news, numpy, scipy and networkx it stopped at a
  mean cosine of 0.907 and a pairwise Spearman of 0.862 after 3 epochs; with
  sympy, torch and transformers (69,373 sentences) it reached 0.9314 / 0.9018
  after one epoch and 0.9411 / 0.9165 after two (measured 6 December 2026).
- **Evaluation (held out)**: the server's calibration sentences (the Zen of
  Python and Python 3.11 standard-library docstrings, PSF License) after the
  first 64, which the int8 precision uses to calibrate its outlier channels:
  236 sentences that no recipe has seen.

No sentence of one source is in the other; the split is by source.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import random
import re
from pathlib import Path
from typing import Iterator

from .calibration import calibration_sentences

#: the packages whose docstrings are training text (see above)
DOC_PACKAGES = ("numpy", "scipy", "networkx", "sympy", "torch", "transformers")
TRAIN_SOURCE = ("gensim (PyPI, LGPL-2.1): test/test_data/lee_background.cor, the Lee background news corpus, split into "
                "sentences; and the docstrings' prose of numpy, scipy, networkx, sympy, torch (PyPI, BSD-3-Clause) and "
                "transformers (PyPI, Apache-2.0), read with ast")
EVAL_SOURCE = "forescale_server/calibration_sentences.txt after its first 64 (those calibrate int8): Zen of Python + Python 3.11 stdlib docstrings (PSF License)"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
#: a numpydoc section header ("Parameters" over a dashed line): a docstring's prose ends there
_SECTION = re.compile(r"\n\s*\n(?=[A-Z][A-Za-z ]+\n\s*-{3,})")


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


def package_dir(name: str) -> Path:
    """Where an installed package's sources are (found, not imported)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"training text needs the package {name} (pip install {name}): its docstrings are read as text")
    return Path(list(spec.submodule_search_locations)[0])


def docstrings(root: Path) -> Iterator[str]:
    """The docstrings of the public modules, classes and functions under `root`, file by file in
    sorted order, parsed with `ast` (nothing is imported); test folders are skipped."""
    for path in sorted(root.rglob("*.py")):
        if any(part in ("tests", "testing") for part in path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module) or (
                    isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_")):
                doc = ast.get_docstring(node)
                if doc:
                    yield doc


def doc_sentences(docs: Iterator[str], min_words: int = 5, max_words: int = 60) -> list[str]:
    """Whole sentences of the docstrings' prose: before the first section header, without
    doctests or literal blocks, ending in . ! or ?, in order, without duplicates."""
    out, seen = [], set()
    for doc in docs:
        for para in _SECTION.split(doc)[0].split("\n\n"):
            if ">>>" in para or "::" in para:
                continue
            for s in _SENTENCE_END.split(" ".join(para.split())):
                if min_words <= len(s.split()) <= max_words and s[-1] in ".!?" and s not in seen:
                    seen.add(s)
                    out.append(s)
    return out


@functools.lru_cache(maxsize=None)
def _package_sentences(name: str) -> tuple[str, ...]:
    """One package's docstring sentences, parsed once per process (torch's and transformers' take ~10 s each)."""
    return tuple(doc_sentences(docstrings(package_dir(name))))


def training_sentences(limit: int | None = None) -> list[str]:
    """The news and the docstrings, shuffled together (seeded: the same list every build), so that
    a `limit` takes both kinds in proportion; no held-out sentence."""
    news = split_sentences(lee_corpus_path().read_text(encoding="utf-8", errors="replace"))
    docs = [s for name in DOC_PACKAGES for s in _package_sentences(name)]
    held_out = set(calibration_sentences())
    sentences = [s for s in dict.fromkeys(news + docs) if s not in held_out]
    random.Random(0).shuffle(sentences)
    return sentences[:limit] if limit else sentences


def eval_sentences() -> list[str]:
    from .encoder_backend import AGREEMENT_SENTENCES

    return list(calibration_sentences()[AGREEMENT_SENTENCES:])
