"""Shared helpers for the model-server tests: an in-process HTTP client around
a `ModelServer` with an injected backend."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

from forescale_devcluster.procs import free_port
from forescale_server.admin_token import AdminToken
from forescale_server.backend import EMBEDDINGS, BatchResult
from forescale_server.config import BatchingConfig, CacheConfig, Labels, ServerConfig
from forescale_server.http_app import build_app
from forescale_server.server import ModelServer

TOKEN = "test-token-123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class RecordingBackend:
    """A test double: records batch sizes, sleeps `batch_s` per batch, returns
    a one-number vector per input (its length)."""

    task = EMBEDDINGS
    emulated = True

    def __init__(self, batch_s: float = 0.0, fail: bool = False):
        self.model_name = "minilm"
        self.aliases = ("minilm",)
        self.precision = "fp32"
        self.batch_s = batch_s
        self.fail = fail
        self.batches: list[list[str]] = []
        self.precisions_seen: list[str] = []

    def supported_precisions(self):
        return ("fp32", "bf16", "int8")

    async def load(self):
        return None

    async def run_batch(self, items):
        self.batches.append(list(items))
        self.precisions_seen.append(self.precision)
        if self.fail:
            raise RuntimeError("backend exploded")
        if self.batch_s:
            await asyncio.sleep(self.batch_s)
        return BatchResult([(f"[{len(x)}]", 1) for x in items], compute_s=self.batch_s)

    async def prepare_precision(self, precision):
        await asyncio.sleep(0.01)
        return {"fp32": 1.0, "bf16": 0.999, "int8": 0.99}[precision]

    def activate_precision(self, precision):
        self.precision = precision

    def stats(self):
        return {}

    async def profile_begin(self):
        return False

    async def profile_end(self):
        return ""


def make_config(**overrides) -> ServerConfig:
    base = ServerConfig(batching=BatchingConfig(max_batch=8, max_wait_s=0.005, min_batch=2, max_queue=64),
                        cache=CacheConfig("lru", 1000), labels=Labels("chat", "b"))
    return replace(base, **overrides)


@contextlib.asynccontextmanager
async def serving(backend, token: str | None = TOKEN, **overrides) -> AsyncIterator[tuple[TestClient, ModelServer]]:
    """An HTTP client talking to a ready server around `backend`."""
    server = ModelServer(backend, make_config(**overrides), AdminToken(token))
    client = TestClient(TestServer(build_app(server)))
    await client.start_server()
    try:
        await server.wait_ready()
        yield client, server
    finally:
        await client.close()


@pytest.fixture
def recording():
    return RecordingBackend()


@contextlib.contextmanager
def served_process(args: list[str], ready_within_s: float = 120.0):
    """`forescale serve ARGS` in a child process, as a user starts it; yields its
    base URL once /readyz answers 200, and stops it afterwards."""
    import json
    import os
    import subprocess
    import sys
    import tempfile
    import time
    import urllib.request

    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([sys.executable, "-m", "forescale_cli.main", "serve", "--port", str(port), *args],
                            env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=log, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_within_s
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"forescale serve {' '.join(args)} exited {proc.returncode}:\n{log.read()[-3000:]}")
            try:
                with urllib.request.urlopen(base + "/readyz", timeout=1) as response:
                    if json.loads(response.read()).get("status") == "ready":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"forescale serve {' '.join(args)} was not ready within {ready_within_s} s")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def build_tiny_llama(path):
    """A two-layer causal LM with random weights and MiniLM's tokenizer, saved
    as a Hugging Face directory (no model hub here)."""
    import shutil

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from forescale_server.model_files import minilm_dir

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    model = LlamaForCausalLM(config)
    model.save_pretrained(path)
    shutil.copy(minilm_dir() / "tokenizer.json", path)
    return model
