"""A causal language model served with torch, its keys and values in a paged
KV cache (`kv_cache.PagedKVCache`).

Decoding is greedy. Within a batch, sequences are decoded one after another:
each step reads the sequence's blocks, runs one token and writes the new
position back. That keeps memory proportional to tokens held, at the price of
a gather per step (no fused paged-attention kernel here).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from torch import nn

from .backend import COMPLETIONS, BatchResult
from .calibration import calibration_sentences
from .errors import bad_request
from .kv_cache import BlockAllocator, PagedKVCache, leak_kv_blocks

log = logging.getLogger("forescale.server")

AGREEMENT_PROMPTS = 32


class DecoderBackend:
    """Greedy completions from a local Hugging Face causal LM; fp32, bf16, int8 on CPU."""

    task = COMPLETIONS
    emulated = False

    def __init__(self, path: Path, model_name: str, precision: str = "fp32", device: str = "auto", threads: int = 0, kv_blocks: int = 1024, block_size: int = 16):
        self.path = Path(path)
        self.model_name = model_name
        self.aliases = (model_name, self.path.name)
        self.precision = "fp32"
        self.device = torch.device("cuda" if device in ("auto", "cuda") and torch.cuda.is_available() else "cpu")
        self.threads = threads
        self.kv_blocks = kv_blocks
        self.block_size = block_size
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="forescale-model")
        self._variants: dict[str, nn.Module] = {}
        self._seq = itertools.count()
        self._profiler = None

    def load_sync(self) -> None:
        from tokenizers import Tokenizer
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        if self.threads:
            torch.set_num_threads(self.threads)
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        tok_file = self.path / "tokenizer.json"
        if not tok_file.is_file():
            raise ValueError(f"{self.path} has no tokenizer.json")
        self.tokenizer = Tokenizer.from_file(str(tok_file))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        model = AutoModelForCausalLM.from_pretrained(str(self.path)).eval().to(self.device)
        self._variants["fp32"] = model
        cfg = model.config
        self.max_context = int(getattr(cfg, "max_position_embeddings", 2048))
        #: token-id prompts at or over this are refused before they reach a batch
        self.vocab_size = int(cfg.vocab_size)
        heads = cfg.num_attention_heads
        kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
        self.kv = PagedKVCache(cfg.num_hidden_layers, kv_heads, head_dim, self.kv_blocks, self.block_size, device=self.device)
        self.generate("warm-up", 2)

    async def load(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self.load_sync)

    def supported_precisions(self) -> tuple[str, ...]:
        return ("fp32", "fp16", "bf16") if self.device.type == "cuda" else ("fp32", "bf16", "int8")

    def _encode(self, prompt: str | tuple[int, ...]) -> list[int]:
        # A token-id prompt is taken as given (the server checked it against vocab_size).
        ids = list(prompt) if isinstance(prompt, tuple) else self.tokenizer.encode(prompt).ids
        return ids or [0]

    def generate(self, prompt: str, max_tokens: int, model: nn.Module | None = None) -> tuple[list[int], int]:
        """Greedy token ids after `prompt`, and the prompt's token count."""
        from transformers import DynamicCache

        model = model or self._variants[self.precision]
        ids = self._encode(prompt)[-(self.max_context - max_tokens):]
        needed = self.kv.allocator.blocks_for(len(ids) + max_tokens)
        if needed > self.kv.allocator.num_blocks:
            raise bad_request(f"prompt ({len(ids)} tokens) plus max_tokens {max_tokens} needs {needed} KV blocks; the pool has {self.kv.allocator.num_blocks}")
        seq = next(self._seq)
        dtype = next(model.parameters()).dtype if self.precision != "int8" else torch.float32
        out: list[int] = []
        try:
            with torch.inference_mode():
                step_ids = torch.tensor([ids], device=self.device)
                position = 0
                for _ in range(max_tokens):
                    cache = DynamicCache(ddp_cache_data=self.kv.read(seq, dtype)) if position else DynamicCache()
                    result = model(input_ids=step_ids, cache=cache, use_cache=True)
                    t = step_ids.shape[1]
                    # Keep only the new positions; earlier ones are already in the blocks.
                    new = [(layer.keys[0, :, -t:].float(), layer.values[0, :, -t:].float()) for layer in result.past_key_values.layers]
                    self.kv.write(seq, new, position)
                    position += t
                    token = int(result.logits[0, -1].argmax())
                    out.append(token)
                    step_ids = torch.tensor([[token]], device=self.device)
        finally:
            self.kv.free(seq)
        return out, len(ids)

    def run_sync(self, items: list[tuple[str, int]]) -> BatchResult:
        t0 = time.perf_counter()
        generated = [self.generate(prompt, n) for prompt, n in items]
        t1 = time.perf_counter()
        outputs = [(self.tokenizer.decode(tokens), n_prompt, len(tokens)) for tokens, n_prompt in generated]
        return BatchResult(outputs, compute_s=t1 - t0, postprocess_s=time.perf_counter() - t1)

    async def run_batch(self, items: list[tuple[str, int]]) -> BatchResult:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.run_sync, items)

    def next_tokens(self, model: nn.Module, prompts: list[str]) -> torch.Tensor:
        """Greedy next token at every position of every prompt (teacher forcing)."""
        out = []
        with torch.inference_mode():
            for prompt in prompts:
                ids = torch.tensor([self._encode(prompt)[: self.max_context]], device=self.device)
                out.append(model(input_ids=ids).logits[0].argmax(-1).cpu())
        return torch.cat(out)

    def prepare_sync(self, precision: str) -> float:
        """Build the variant; agreement = share of next-token predictions equal to fp32's."""
        if precision == "fp32":
            return 1.0
        base = self._variants["fp32"]
        if precision not in self._variants:
            if precision in ("fp16", "bf16"):
                self._variants[precision] = copy.deepcopy(base).to(torch.float16 if precision == "fp16" else torch.bfloat16)
            else:
                from .quantization import dynamic_per_channel

                self._variants[precision] = dynamic_per_channel(base)
        prompts = list(calibration_sentences()[:AGREEMENT_PROMPTS])
        ref, got = self.next_tokens(base, prompts), self.next_tokens(self._variants[precision], prompts)
        return float((ref == got).float().mean())

    async def prepare_precision(self, precision: str) -> float:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.prepare_sync, precision)

    def activate_precision(self, precision: str) -> None:
        if precision not in self._variants:
            raise ValueError(f"precision {precision!r} was not prepared")
        self.precision = precision

    @property
    def kv_allocator(self) -> BlockAllocator | None:
        """The KV pool's bookkeeping, once the model is loaded."""
        return self.kv.allocator if hasattr(self, "kv") else None

    async def leak_kv(self, share: float) -> dict:
        """The `kv_fragmentation` fault. On the model's thread: `generate` reserves blocks there."""
        if self.kv_allocator is None:
            raise RuntimeError("the model is not loaded yet")
        return await asyncio.get_running_loop().run_in_executor(self._executor, leak_kv_blocks, self.kv_allocator, share)

    def stats(self) -> dict:
        kv = self.kv_allocator
        stats = {"kv_used": kv.used, "kv_free": kv.available, "kv_fragmentation": kv.fragmentation} if kv else {}
        if self.device.type == "cuda":
            stats["gpu_memory_bytes"] = torch.cuda.memory_allocated(self.device)
        return stats

    def _profile_begin_sync(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self._profiler = profile(activities=[ProfilerActivity.CPU])
        self._profiler.__enter__()

    def _profile_end_sync(self) -> str:
        prof, self._profiler = self._profiler, None
        if prof is None:
            return ""
        prof.__exit__(None, None, None)
        return prof.key_averages().table(sort_by="cpu_time_total", row_limit=25)

    async def profile_begin(self) -> bool:
        await asyncio.get_running_loop().run_in_executor(self._executor, self._profile_begin_sync)
        return True

    async def profile_end(self) -> str:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._profile_end_sync)
