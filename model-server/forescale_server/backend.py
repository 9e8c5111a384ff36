"""The model backend interface and its factory.

A backend turns a batch of inputs into outputs and knows its precisions. One
implementation per file: `encoder_backend` (real sentence embeddings, torch),
`decoder_backend` (a causal LM with a paged KV cache, torch) and
`emulated_backend` (a service-time profile, no torch). This module must not
import torch: the emulated server imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

EMBEDDINGS = "embeddings"
COMPLETIONS = "completions"

#: names a client may use for the default model
MINILM_ALIASES = ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")


@dataclass
class BatchResult:
    """Outputs of one batch, in input order, and the time each stage took.

    Embeddings: each output is `(json_fragment, prompt_tokens)`, the vector
    already serialised so that a cache hit costs no encoding. Completions:
    `(text, prompt_tokens, completion_tokens)`.
    """

    outputs: list[Any]
    preprocess_s: float = 0.0
    compute_s: float = 0.0
    postprocess_s: float = 0.0
    extra: dict = field(default_factory=dict)


class Backend(Protocol):
    """What the server needs from a model."""

    #: the name clients send as `model`, and accepted aliases
    model_name: str
    aliases: tuple[str, ...]
    #: EMBEDDINGS or COMPLETIONS
    task: str
    emulated: bool
    #: the precision in force
    precision: str

    def supported_precisions(self) -> tuple[str, ...]:
        """Precisions this backend can switch to on this hardware."""

    async def load(self) -> None:
        """Load weights and warm up; `/readyz` turns ready afterwards."""

    async def run_batch(self, items: list[Any]) -> BatchResult:
        """Run one batch. Items are strings (embeddings) or `(prompt, max_tokens)`."""

    async def prepare_precision(self, precision: str) -> float:
        """Build the variant for `precision` (serving goes on meanwhile) and
        return its agreement with fp32 on the calibration set."""

    def activate_precision(self, precision: str) -> None:
        """Make a prepared precision the one in force; called between batches."""

    def stats(self) -> dict:
        """Scrape-time values: optional kv_used, kv_free, gpu_memory_bytes."""

    async def profile_begin(self) -> bool:
        """Start a profiler around the next batches; False when there is none (emulation)."""

    async def profile_end(self) -> str:
        """Stop it and return its table."""


def make_backend(model: str, precision: str, emulate_gpu: str | None, device: str = "auto", threads: int = 0, max_batch: int = 32,
                 variant=None, variant_dir=None) -> Backend:
    """Choose the backend for `forescale serve` flags. Emulation never imports torch.
    `variant` is the checked manifest of `variant_dir` (`--model-path`)."""
    if variant is not None:
        from .encoder_backend import EncoderBackend

        return EncoderBackend(variant_dir, variant.teacher, precision=precision, device=device, threads=threads, max_batch=max_batch, variant=variant)
    if emulate_gpu:
        from .emulated_backend import make_emulated

        return make_emulated(emulate_gpu, model, precision)
    from .model_files import resolve_model

    kind, path = resolve_model(model)
    if kind == EMBEDDINGS:
        from .encoder_backend import EncoderBackend

        return EncoderBackend(path, model, precision=precision, device=device, threads=threads, max_batch=max_batch)
    from .decoder_backend import DecoderBackend

    return DecoderBackend(path, model, precision=precision, device=device, threads=threads)
