"""Fixtures of the simulator's tests: the real traces (skipped with a message
naming FORESCALE_TRACES when absent) and small slices of them in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    path = Path(os.environ.get("FORESCALE_TRACES", REPO.parent / "shared" / "traces"))
    if not path.is_dir():
        pytest.skip(f"real traces not found at {path}; set FORESCALE_TRACES to the traces folder")
    return path


def _slice(src: Path, dst: Path, lines: int) -> Path:
    if not src.is_file():
        pytest.skip(f"real trace {src} not found; set FORESCALE_TRACES to the traces folder")
    with src.open(encoding="utf-8") as fin, dst.open("w", encoding="utf-8") as fout:
        for i, line in enumerate(fin):
            if i >= lines:
                break
            fout.write(line)
    return dst


@pytest.fixture
def azure_slice(traces_dir: Path, tmp_path: Path) -> Path:
    """The first 2,000 requests (~6 minutes) of the Azure conversation trace."""
    return _slice(traces_dir / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv", tmp_path / "azure.csv", 2001)


@pytest.fixture
def mooncake_slice(traces_dir: Path, tmp_path: Path) -> Path:
    """The first 500 requests of the Mooncake conversation trace."""
    return _slice(traces_dir / "mooncake" / "conversation_trace.jsonl", tmp_path / "mooncake.jsonl", 500)


@pytest.fixture
def servegen_slice(traces_dir: Path, tmp_path: Path) -> Path:
    """Three ServeGen clients (the first 200 windows each) in a folder of their own."""
    folder = tmp_path / "servegen"
    folder.mkdir()
    for client in ("chunk-0-trace.csv", "chunk-1-trace.csv", "chunk-10-trace.csv"):
        _slice(traces_dir / "servegen" / "m-mid" / client, folder / client, 200)
    return folder
