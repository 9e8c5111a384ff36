"""Shared helpers for the model-server tests: an in-process HTTP client around
a `ModelServer` with an injected backend."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

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
