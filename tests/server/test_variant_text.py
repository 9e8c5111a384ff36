"""The variants' training text: news and docstrings' prose, no held-out sentence; read, never imported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from forescale_server.variant_text import (
    DOC_PACKAGES,
    doc_sentences,
    docstrings,
    eval_sentences,
    lee_corpus_path,
    package_dir,
    split_sentences,
    training_sentences,
)

PACKAGE = '''"""A toy package. It has a module docstring."""

def add(a, b):
    """Add two numbers and return the sum.

    The sum is computed exactly for integers. It may round for floats.

    Parameters
    ----------
    a, b : numbers
        Never part of the prose.

    Examples
    --------
    >>> add(1, 2)
    3
    """


def _hidden():
    """A private helper that is never read as text."""


class Graph:
    """A graph of nodes and edges.

    See the example below::

        Graph(nodes=3)
    """
'''


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "toy"
    (root / "tests").mkdir(parents=True)
    (root / "__init__.py").write_text(PACKAGE)
    (root / "tests" / "test_toy.py").write_text('"""A test module that is never read as training text."""\n')
    (root / "broken.py").write_text("def (:\n")  # not Python: skipped, not fatal
    return root


def test_docstrings_are_read_with_ast_skipping_private_names_and_tests(tmp_path: Path) -> None:
    docs = list(docstrings(_package(tmp_path)))
    assert len(docs) == 3 and not any("private" in d or "test module" in d for d in docs)
    assert "toy" not in sys.modules  # read, never imported


@pytest.mark.parametrize("sentence, kept", [
    ("Add two numbers and return the sum.", True),
    ("The sum is computed exactly for integers.", True),
    ("It may round for floats.", True),
    ("A graph of nodes and edges.", True),
    ("Never part of the prose.", False),             # under a section header
    ("See the example below::", False),              # a literal block
    ("A toy package.", False),                       # under five words
])
def test_only_the_prose_before_the_first_section_is_kept(tmp_path: Path, sentence: str, kept: bool) -> None:
    assert (sentence in doc_sentences(docstrings(_package(tmp_path)))) is kept


def test_the_training_text_mixes_both_sources_and_holds_out_the_evaluation() -> None:
    texts = training_sentences()
    assert len(texts) == len(set(texts)) > 10_000
    assert not set(texts) & set(eval_sentences())
    first = training_sentences(2000)
    assert first == texts[:2000]  # seeded: the same list every build
    news = set(split_sentences(lee_corpus_path().read_text(encoding="utf-8", errors="replace")))
    share = sum(t in news for t in first) / len(first)
    assert share == pytest.approx(len(news) / len(texts), abs=0.05)  # a limit takes both kinds in proportion


def test_a_missing_package_is_named() -> None:
    with pytest.raises(ValueError, match="training text needs the package no_such_pkg_xyz"):
        package_dir("no_such_pkg_xyz")
    assert all(package_dir(name).is_dir() for name in DOC_PACKAGES)
