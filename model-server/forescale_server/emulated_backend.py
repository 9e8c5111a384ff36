"""Emulated-GPU backends (`--emulate-gpu PROFILE`): the real server around a
service-time profile instead of a model. Never imports torch.

Compute is `await asyncio.sleep(profile batch time at this precision)`, so one
emulated pod costs almost no CPU and many of them fit on two cores. Outputs are
labelled as emulated: embeddings are fixed pseudo-random unit vectors chosen
by a hash of the input (pre-serialised once), completions a fixed word.

What the diagnosis reads is emulated too, so each cause can be injected for
real: an encoder's batch costs more for inputs longer than the profile's
measured length (a request-mix shift slows it), a decoder holds its sequences'
tokens in a paged KV pool (`kv_cache.BlockAllocator`, sized as vLLM sizes it),
and both report device memory (`emulated_memory.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import random
import zlib

from forescale_profiles.precision import PRECISIONS
from forescale_profiles.service_time import DecoderProfile, EncoderProfile, get_profile

from .backend import COMPLETIONS, EMBEDDINGS, MINILM_ALIASES, BatchResult
from .emulated_memory import DeviceMemory, device_for
from .kv_cache import BlockAllocator, KVCacheFull, leak_kv_blocks

log = logging.getLogger("forescale.server")

#: Agreement with fp32 reported after a precision switch in emulation: the
#: values the real server measures for all-MiniLM-L6-v2 at a switch (mean
#: cosine with fp32 on the first 64 calibration sentences; CPU kernels; fp16
#: measured with CPU fp16 matmuls, which the CPU server does not serve). The
#: pod's `forescale_emulated` gauge marks them as emulation.
EMULATED_AGREEMENT = {"fp32": 1.0, "fp16": 0.999999, "bf16": 0.99996, "int8": 0.99154}

_VECTORS = 256
_DIM = 384

#: the sequence length the encoder profiles were measured at (NVIDIA's BERT demo: seq 128): a batch
#: whose longest input is shorter still costs the profile's time (it is padded to a fixed length)
ENCODER_PROFILE_TOKENS = 128
#: BERT's position limit: longer inputs are truncated, so they cost no more than this
ENCODER_MAX_TOKENS = 512


def _unit_vectors(n: int, dim: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        v = [rng.gauss(0.0, 1.0) for _ in range(dim)]
        norm = sum(x * x for x in v) ** 0.5
        out.append(json.dumps([round(x / norm, 6) for x in v], separators=(",", ":")))
    return out


def _token_count(item: str | tuple[int, ...]) -> int:
    """Tokens of an input: words of a text (emulation has no tokenizer), or the token ids given."""
    return len(item) if isinstance(item, tuple) else max(1, len(item.split()))


def _key_bytes(item: str | tuple[int, ...]) -> bytes:
    return item.encode() if isinstance(item, str) else b",".join(str(t).encode() for t in item)


class _EmulatedBase:
    emulated = True

    def __init__(self, model_name: str, precision: str, device_memory: DeviceMemory):
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}")
        self.model_name = model_name
        self.aliases = tuple({model_name, *MINILM_ALIASES})
        self.precision = precision
        #: read by the server, which adds what the faults hold (`ModelServer._state`)
        self.device_memory = device_memory

    def supported_precisions(self) -> tuple[str, ...]:
        return PRECISIONS

    async def prepare_precision(self, precision: str) -> float:
        return EMULATED_AGREEMENT[precision]

    def activate_precision(self, precision: str) -> None:
        self.precision = precision

    def stats(self) -> dict:
        return {}

    async def profile_begin(self) -> bool:
        return False

    async def profile_end(self) -> str:
        return ""


class EmulatedEncoder(_EmulatedBase):
    """An encoder pod: batch time `base + per_item * b` from the profile."""

    task = EMBEDDINGS
    #: BERT's uncased WordPiece vocabulary, all-MiniLM-L6-v2's: token-id inputs are
    #: bounded as the real server bounds them
    vocab_size = 30522

    def __init__(self, profile: EncoderProfile, model_name: str, precision: str):
        super().__init__(model_name, precision, device_for(profile.name))
        self.profile = profile
        self._vectors: list[str] = []

    async def load(self) -> None:
        self._vectors = _unit_vectors(_VECTORS, _DIM)
        log.warning("EMULATED GPU: profile %r (%s); compute is a sleep, vectors are not real embeddings", self.profile.name, self.profile.source)

    async def run_batch(self, items: list[str]) -> BatchResult:
        tokens = [_token_count(item) for item in items]
        seconds = self.profile.batch_ms(self.precision, len(items)) * length_factor(max(tokens)) / 1000.0
        await asyncio.sleep(seconds)
        outputs = [(self._vectors[zlib.crc32(_key_bytes(item)) % _VECTORS], n) for item, n in zip(items, tokens)]
        return BatchResult(outputs, compute_s=seconds)


def length_factor(longest_tokens: int) -> float:
    """An encoder batch's cost relative to the profile's: linear in the padded length past the
    measured one (at these lengths BERT's cost is dominated by its length-linear layers), up to
    the truncation length."""
    return min(ENCODER_MAX_TOKENS, max(ENCODER_PROFILE_TOKENS, longest_tokens)) / ENCODER_PROFILE_TOKENS


class EmulatedDecoder(_EmulatedBase):
    """A decoder pod: the batch's prefill, then one decode iteration per token
    up to the longest `max_tokens`, with the profile's DistServe fit."""

    task = COMPLETIONS

    def __init__(self, profile: DecoderProfile, model_name: str, precision: str):
        super().__init__(model_name, precision, device_for(profile.name))
        self.profile = profile
        memory = self.device_memory
        self.kv_allocator = BlockAllocator(max(memory.kv_blocks(), 1), memory.block_size)
        self._seq = itertools.count()

    async def load(self) -> None:
        log.warning("EMULATED GPU: profile %r (%s); compute is a sleep, text is not generated", self.profile.name, self.profile.source)

    async def run_batch(self, items: list[tuple[str, int]]) -> BatchResult:
        """Each sequence holds the KV blocks of its prompt and output while the batch runs. When the
        pool cannot hold the whole batch, the sequences that fit run first and the rest after them
        (as a scheduler shrinks its running batch), so a full or leaking KV cache slows serving."""
        prompt_tokens = [_token_count(p) for p, _ in items]
        waiting = list(range(len(items)))
        ms = 0.0
        while waiting:
            running: list[tuple[int, int]] = []
            try:
                for i in waiting:
                    seq = next(self._seq)
                    try:
                        self.kv_allocator.reserve(seq, prompt_tokens[i] + items[i][1])
                    except KVCacheFull:
                        self.kv_allocator.free(seq)
                        if not running:
                            raise KVCacheFull(f"a sequence of {prompt_tokens[i] + items[i][1]} tokens does not fit: "
                                              f"{self.kv_allocator.available} of {self.kv_allocator.num_blocks} KV blocks "
                                              f"are free ({self.kv_allocator.leaked} leaked)") from None
                        break
                    running.append((i, seq))
                part_ms = self._batch_ms([prompt_tokens[i] for i, _ in running], max(items[i][1] for i, _ in running))
                await asyncio.sleep(part_ms / 1000.0)
                ms += part_ms
            finally:
                for _, seq in running:
                    self.kv_allocator.free(seq)
            waiting = waiting[len(running):]
        outputs = [(" emulated" * n, pt, n) for (_, n), pt in zip(items, prompt_tokens)]
        return BatchResult(outputs, compute_s=ms / 1000.0)

    def _batch_ms(self, prompt_tokens: list[int], steps: int) -> float:
        ms = self.profile.prefill_ms(self.precision, sum(prompt_tokens))
        context = sum(prompt_tokens)
        for _ in range(steps):
            ms += self.profile.decode_iter_ms(self.precision, len(prompt_tokens), context)
            context += len(prompt_tokens)
        return ms

    def stats(self) -> dict:
        kv = self.kv_allocator
        return {"kv_used": kv.used, "kv_free": kv.available, "kv_fragmentation": kv.fragmentation}

    async def leak_kv(self, share: float) -> dict:
        """The `kv_fragmentation` fault: leak `share` of the pool's blocks (0 gives them all back)."""
        return leak_kv_blocks(self.kv_allocator, share)


def make_emulated(profile_name: str, model_name: str, precision: str) -> EmulatedEncoder | EmulatedDecoder:
    """The emulated backend for a profile of `forescale_profiles.service_time.PROFILES`."""
    profile = get_profile(profile_name)
    if isinstance(profile, EncoderProfile):
        return EmulatedEncoder(profile, model_name, precision)
    return EmulatedDecoder(profile, model_name, precision)

