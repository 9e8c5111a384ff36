"""What users see names only what they have: no design or peers file, no section signs, no issue or session
numbers. Checked where users read: the docs, the CRDs and the chart they install, and every string literal
the code can print or ship (messages, events, profile sources); `--help` is checked in tests/cli.

Docstrings and comments are for developers and not checked here.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: a reference a user cannot follow: files that are not in the repository, their sections, the work log
UNFOLLOWABLE = re.compile(r"DESIGN\.md|PEERS\.md|STYLE\.md|§|\b[Ii]ssue \d+|\b[Ss]ession \d+"
                         r"|\b[A-Za-z]+(?:st|nd|rd|th) session\b")  # "the twelfth session": the work log again
#: the packages that ship (the source roots), and the files users read or install
PACKAGES = ("cli", "operator", "predictor", "model-server", "sim", "profiles", "devcluster", "stress")
SHIPPED_FILES = ("README.md", "SECURITY.md", "docs/*.md", "crds/**/*.yaml", "charts/forescale/**/*",
                 "monitoring/**/*", "docker/*")


def _shipped_files() -> list[Path]:
    return sorted({p for pattern in SHIPPED_FILES for p in ROOT.glob(pattern) if p.is_file() and p.suffix != ".png"})


@pytest.mark.parametrize("path", _shipped_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_files_users_read_cite_nothing_they_do_not_have(path):
    hits = [f"{n}: {line.strip()}" for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
            if UNFOLLOWABLE.search(line)]
    assert not hits, f"{path.relative_to(ROOT)}:\n" + "\n".join(hits)


def _printable_strings(path: Path) -> list[tuple[int, str]]:
    """String literals that are not docstrings: what the code can print, post or ship."""
    tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text()).readline))
    found = []
    for i, token in enumerate(tokens):
        if token.type != tokenize.STRING:
            continue
        j = i - 1
        while j >= 0 and tokens[j].type in (tokenize.NL, tokenize.COMMENT):
            j -= 1
        docstring = j < 0 or tokens[j].type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.ENCODING)
        if not docstring:
            found.append((token.start[0], token.string))
    return found


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_no_printed_string_cites_what_users_do_not_have():
    # e.g. `forescale replay` printed "calibration: a100-opt-13b (PEERS.md §6: ...)": the profile's source
    hits = [f"{path.relative_to(ROOT)}:{line}: {text[:100]}" for path in _sources()
            for line, text in _printable_strings(path) if UNFOLLOWABLE.search(text)]
    assert not hits, "\n".join(hits)


def test_the_calibration_sources_replay_prints_name_the_published_benchmarks():
    from forescale_profiles.service_time import A100_BERT_BASE, A100_OPT13B, DEMO_HEAVY, T4_BERT_BASE

    assert "TensorRT BERT benchmark" in A100_BERT_BASE.source and "TensorRT BERT benchmark" in T4_BERT_BASE.source
    assert "TensorRT BERT benchmark" in DEMO_HEAVY.source
    assert A100_OPT13B.source.startswith("DistServe's simulator (github.com/LLMServe/DistServe")
