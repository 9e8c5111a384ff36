"""A sentence-embedding encoder served with torch (the default: all-MiniLM-L6-v2).

Loaded with transformers directly, then mean pooling over the attention mask
and L2 normalisation: the same vectors as sentence-transformers' `encode` for
this model, without its per-call overhead. Inference runs in one worker
thread, so the event loop stays free for HTTP while a batch computes.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import orjson
import torch
from torch import nn

from forescale_profiles.precision import PRECISIONS

from .backend import EMBEDDINGS, MINILM_ALIASES, BatchResult
from .buffer_pool import BufferPool
from .calibration import calibration_sentences
from .length_buckets import length_groups
from .variant_manifest import VariantManifest

log = logging.getLogger("forescale.server")

#: how many calibration sentences the agreement check at a precision switch uses
AGREEMENT_SENTENCES = 64


def _device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda but CUDA is not available")
    return torch.device(device)


class _TokenIds:
    """A token-id input in the shape of a `tokenizers.Encoding` (only `.ids` is read)."""

    __slots__ = ("ids",)

    def __init__(self, ids: list[int]):
        self.ids = ids


class EncoderBackend:
    """Embeddings from a BERT-style encoder; precisions fp32, fp16, bf16 and int8 (CPU)."""

    task = EMBEDDINGS
    emulated = False

    def __init__(self, path: Path, model_name: str = "minilm", precision: str = "fp32", device: str = "auto", threads: int = 0, max_batch: int = 32, pool_size: int = 2,
                 variant: VariantManifest | None = None):
        self.path = Path(path)
        #: the built variant served (`forescale serve --model-path`), None for the model itself
        self.variant = variant
        self.model_name = model_name
        self.aliases = tuple({model_name, *(MINILM_ALIASES if model_name in MINILM_ALIASES else ())})
        self.precision = "fp32"
        self.device = _device(device)
        self.threads = threads
        self.max_batch = max_batch
        self.pool_size = pool_size
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="forescale-model")
        self._variants: dict[str, nn.Module] = {}
        self._reference: torch.Tensor | None = None
        self._profiler = None
        #: layers of the int8 variant whose outlier input channels stay fp32
        self.int8_split: list[str] = []

    # --- loading ----------------------------------------------------------

    def load_sync(self) -> None:
        """Load tokenizer, weights and buffers; one warm-up batch."""
        from tokenizers import Tokenizer
        from transformers import AutoModel

        if self.threads:
            torch.set_num_threads(self.threads)
        self.max_len = 256
        st_config = self.path / "sentence_bert_config.json"
        if st_config.is_file():
            self.max_len = int(json.loads(st_config.read_text()).get("max_seq_length", 256))
        self.tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_len)
        # The pooler is not used by mean pooling; leaving it out saves its matmul.
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()  # the unused pooler's weights are reported as "unexpected"
        hf_logging.disable_progress_bar()
        if self.variant is not None:
            from .variant_loading import load_variant_model

            model = load_variant_model(self.path, self.variant, self.threads)
        else:
            model = AutoModel.from_pretrained(str(self.path), add_pooling_layer=False)
        self._variants["fp32"] = model.eval().to(self.device)
        config = json.loads((self.path / "config.json").read_text())
        self.dim = int(config["hidden_size"])
        #: token-id inputs at or over this are refused before they reach a batch
        self.vocab_size = int(config["vocab_size"])
        pin = self.device.type == "cuda"

        def allocate():
            shape = (self.max_batch, self.max_len)
            return {k: torch.zeros(shape, dtype=torch.long, pin_memory=pin) for k in ("input_ids", "attention_mask")}

        self.pool = BufferPool(allocate, self.pool_size)
        self.embed_texts(["warm-up"] * min(4, self.max_batch))

    async def load(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self.load_sync)

    def supported_precisions(self) -> tuple[str, ...]:
        # int8 uses fbgemm (CPU only); fp16 matmuls on CPU are slow, while bf16 has native kernels on
        # recent x86 (avx512_bf16), so it stays available on CPU.
        if self.variant is not None and self.variant.architecture == "onnx":
            return ("fp32",)  # a frozen onnxruntime graph: there are no torch weights to cast or quantize
        return ("fp32", "fp16", "bf16") if self.device.type == "cuda" else ("fp32", "bf16", "int8")

    # --- compute ----------------------------------------------------------

    def _fill(self, encodings: list, buffers: dict) -> tuple[torch.Tensor, torch.Tensor]:
        length = max(len(e.ids) for e in encodings)
        ids, mask = buffers["input_ids"][: len(encodings), :length], buffers["attention_mask"][: len(encodings), :length]
        ids.zero_()
        mask.zero_()
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = torch.as_tensor(e.ids)
            mask[row, :n] = 1
        return ids, mask

    def _forward(self, model: nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.device.type == "cuda":
            ids, mask = ids.to(self.device, non_blocking=True), mask.to(self.device, non_blocking=True)
        with torch.inference_mode():
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state.float()
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return nn.functional.normalize(pooled, p=2, dim=1)

    def _embed_encodings(self, model: nn.Module, encodings: list) -> torch.Tensor:
        """Vectors in input order; the batch runs as length groups (`length_buckets`)
        so that short inputs are not padded to the longest one."""
        out = torch.empty(len(encodings), self.dim)
        for group in length_groups([len(e.ids) for e in encodings]):
            buffers = self.pool.acquire()
            try:
                ids, mask = self._fill([encodings[i] for i in group], buffers)
                out[group] = self._forward(model, ids, mask).cpu()
            finally:
                self.pool.release(buffers)
        return out

    def embed_with(self, model: nn.Module, texts: list[str]) -> torch.Tensor:
        """Normalised embeddings of `texts` by `model` (any variant), in chunks of max_batch."""
        out = []
        for start in range(0, len(texts), self.max_batch):
            out.append(self._embed_encodings(model, self.tokenizer.encode_batch(texts[start:start + self.max_batch])))
        return torch.cat(out)

    def embed_texts(self, texts: list[str]) -> torch.Tensor:
        """Embeddings at the precision in force."""
        return self.embed_with(self._variants[self.precision], texts)

    def _encode_items(self, items: list) -> list:
        """Encodings of texts and token-id inputs, in input order. Token ids are
        taken as given (this model's vocabulary, special tokens included when the
        client wants them), truncated like text to the model's context."""
        texts = [x for x in items if isinstance(x, str)]
        encoded = iter(self.tokenizer.encode_batch(texts) if texts else [])
        return [next(encoded) if isinstance(x, str) else _TokenIds(list(x[: self.max_len])) for x in items]

    def run_sync(self, texts: list) -> BatchResult:
        t0 = time.perf_counter()
        encodings = self._encode_items(texts)
        t1 = time.perf_counter()
        vectors = self._embed_encodings(self._variants[self.precision], encodings)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        # 7 decimals keep cosine exact to ~1e-7 and halve the JSON. orjson writes the same shortest
        # decimals as json.dumps 13x faster (0.21 against 2.75 ms for a batch of 32 x 384): that was
        # 3.2 ms of a distilled-int8 batch-32 request's 36 ms, more than its tokenising.
        rows = np.round(vectors.numpy().astype(np.float64), 7)
        outputs = [(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY).decode(), len(e.ids)) for row, e in zip(rows, encodings)]
        t3 = time.perf_counter()
        return BatchResult(outputs, preprocess_s=t1 - t0, compute_s=t2 - t1, postprocess_s=t3 - t2)

    async def run_batch(self, items: list[str]) -> BatchResult:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.run_sync, items)

    # --- precision --------------------------------------------------------

    def _calibration(self) -> list[str]:
        return list(calibration_sentences()[:AGREEMENT_SENTENCES])

    def reference(self) -> torch.Tensor:
        """fp32 embeddings of the calibration sentences (computed once)."""
        if self._reference is None:
            self._reference = self.embed_with(self._variants["fp32"], self._calibration())
        return self._reference

    def build_variant(self, precision: str) -> nn.Module:
        """The model at `precision`, built from the fp32 weights."""
        base = self._variants["fp32"]
        if precision in ("fp16", "bf16"):
            return copy.deepcopy(base).to(torch.float16 if precision == "fp16" else torch.bfloat16)
        if precision == "int8":
            from .quantization import server_int8

            if self.device.type != "cpu":
                raise ValueError("int8 here uses CPU kernels (fbgemm); on CUDA serve fp16/bf16")
            texts = self._calibration()
            if self.variant is not None and self.variant.int8_split:
                from .quantization import OUTLIER_FRACTION, outlier_split

                # a variant names its own sensitive layers (a 4-layer student has no encoder.layer.4)
                self.int8_split = list(self.variant.int8_split)
                model = outlier_split(base, lambda m: self.embed_with(m, texts), OUTLIER_FRACTION, only=self.int8_split)
            else:
                model, self.int8_split = server_int8(base, self.model_name in MINILM_ALIASES, lambda m: self.embed_with(m, texts))
            log.info("int8: dynamic per-channel everywhere; outlier channels of %d sensitive layers in fp32", len(self.int8_split))
            return model
        raise ValueError(f"unknown precision {precision!r}")

    def prepare_sync(self, precision: str) -> float:
        from .quantization import mean_cosine

        if precision == "fp32":
            return 1.0
        if precision not in self._variants:
            self._variants[precision] = self.build_variant(precision)
        return mean_cosine(self.embed_with(self._variants[precision], self._calibration()), self.reference())

    async def prepare_precision(self, precision: str) -> float:
        # The single worker thread also runs batches: preparing there keeps torch
        # single-threaded per model and simply queues requests meanwhile (none dropped).
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.prepare_sync, precision)

    def activate_precision(self, precision: str) -> None:
        if precision not in self._variants:
            raise ValueError(f"precision {precision!r} was not prepared")
        self.precision = precision

    # --- observability ----------------------------------------------------

    def served_bytes(self) -> int:
        """Bytes of the model at the precision in force, serialised (an ONNX graph: its file)."""
        import io

        model = self._variants[self.precision]
        session = getattr(model, "session", None)
        if session is not None:
            return int(model.path.stat().st_size)
        buffer = io.BytesIO()
        torch.save(model.state_dict(), buffer)
        return buffer.tell()

    def variant_info(self) -> dict | None:
        """Which built variant this is (None for the model itself)."""
        v = self.variant
        if v is None:
            return None
        return {"variant": v.name, "recipe": v.recipe, "teacher": v.teacher, "architecture": v.architecture,
                "path": str(self.path), "built_quality": v.quality, "commit": v.commit}

    def stats(self) -> dict:
        if self.device.type == "cuda":
            return {"gpu_memory_bytes": torch.cuda.memory_allocated(self.device)}
        return {}

    def _profile_begin_sync(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device.type == "cuda" else [])
        self._profiler = profile(activities=activities, record_shapes=False)
        self._profiler.__enter__()

    def _profile_end_sync(self) -> str:
        prof, self._profiler = self._profiler, None
        if prof is None:
            return ""
        prof.__exit__(None, None, None)
        sort = "cuda_time_total" if self.device.type == "cuda" else "cpu_time_total"
        return prof.key_averages().table(sort_by=sort, row_limit=25)

    async def profile_begin(self) -> bool:
        await asyncio.get_running_loop().run_in_executor(self._executor, self._profile_begin_sync)
        return True

    async def profile_end(self) -> str:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._profile_end_sync)
