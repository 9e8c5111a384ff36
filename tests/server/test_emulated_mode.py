"""The emulated-GPU server: the real HTTP server around a service-time profile,
without torch, quick to start, labelled as emulation."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from forescale_devcluster.procs import free_port
from forescale_profiles.service_time import PROFILES
from forescale_server.emulated_backend import EMULATED_AGREEMENT, make_emulated

from .conftest import AUTH, serving

NO_TORCH_SCRIPT = r"""
import asyncio, json, sys
from aiohttp.test_utils import TestClient, TestServer
from forescale_server.admin_token import AdminToken
from forescale_server.backend import make_backend
from forescale_server.config import ServerConfig
from forescale_server.http_app import build_app
from forescale_server.server import ModelServer
import forescale_server.cli  # the command-line module too

async def main():
    backend = make_backend("minilm", "fp16", "demo")
    server = ModelServer(backend, ServerConfig(precision="fp16", emulate_gpu="demo"), AdminToken("t"))
    client = TestClient(TestServer(build_app(server)))
    await client.start_server()
    await server.wait_ready()
    r = await client.post("/v1/embeddings", json={"input": ["a", "b"]})
    s = await client.post("/admin/precision", json={"precision": "int8"}, headers={"Authorization": "Bearer t"})
    m = await (await client.get("/metrics")).text()
    await client.close()
    print(json.dumps({"status": r.status, "switch": s.status, "emulated": 'forescale_emulated{' in m and '} 1.0' in m,
                      "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules}))

asyncio.run(main())
"""


def test_emulated_server_never_imports_torch():
    out = subprocess.run([sys.executable, "-c", NO_TORCH_SCRIPT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"status": 200, "switch": 200, "emulated": True, "torch": False, "transformers": False}


def test_forescale_serve_emulated_starts_fast_and_says_so():
    port = free_port()
    env = dict(os.environ, FORESCALE_DEPLOYMENT="chat", FORESCALE_POOL="a", FORESCALE_PRECISION="fp16")
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "forescale_cli.main", "serve", "--emulate-gpu", "demo", "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready_after = None
        while time.perf_counter() - started < 20:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
                    body = json.loads(response.read())
                    ready_after = time.perf_counter() - started
                    break
            except OSError:
                time.sleep(0.05)
        assert ready_after is not None, "emulated server did not become ready"
        # "about a second" on an idle machine; this one is shared by several test runs.
        assert ready_after < 8.0
        assert body["emulated"] is True and body["precision"] == "fp16"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            metrics = response.read().decode()
        assert 'forescale_emulated{deployment="chat",pool="a",precision="fp16"} 1.0' in metrics
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
    assert "EMULATED GPU" in stderr


@pytest.mark.parametrize("precision,batch", [("fp16", 1), ("fp16", 8), ("int8", 8), ("fp32", 32)])
async def test_emulated_compute_follows_the_profile(precision, batch):
    profile = PROFILES["demo"]
    backend = make_emulated("demo", "minilm", precision)
    await backend.load()
    started = time.perf_counter()
    result = await backend.run_batch([f"x{i}" for i in range(batch)])
    elapsed = time.perf_counter() - started
    expected = profile.batch_ms(precision, batch) / 1000.0
    assert result.compute_s == pytest.approx(expected)
    assert expected <= elapsed < expected + 0.3  # a sleep: late by the event loop's stalls on a loaded machine
    vectors = [json.loads(v) for v, _ in result.outputs]
    assert all(len(v) == 384 and abs(sum(x * x for x in v) - 1) < 1e-4 for v in vectors)


async def test_emulated_slowdown_fault_scales_the_profile():
    backend = make_emulated("demo", "minilm", "fp16")
    async with serving(backend, enable_faults=True, precision="fp16") as (client, _):
        await client.post("/admin/faults", json={"slowdown": 2.5, "seconds": 5}, headers=AUTH)
        started = time.perf_counter()
        await client.post("/v1/embeddings", json={"input": ["slow"]})
        elapsed = time.perf_counter() - started
    assert elapsed >= 2.5 * PROFILES["demo"].batch_ms("fp16", 1) / 1000.0


async def test_emulated_agreement_comes_from_the_documented_table():
    backend = make_emulated("demo", "minilm", "fp16")
    async with serving(backend, precision="fp16") as (client, _):
        body = await (await client.post("/admin/precision", json={"precision": "int8"}, headers=AUTH)).json()
    assert body["agreement"] == EMULATED_AGREEMENT["int8"] and body["emulated"] is True


async def test_emulated_decoder_profile_serves_completions():
    backend = make_emulated("a100-opt-13b", "opt-13b", "fp16")
    async with serving(backend, precision="fp16") as (client, _):
        response = await client.post("/v1/completions", json={"prompt": "hello there", "max_tokens": 3, "model": "opt-13b"})
        body = await response.json()
    assert response.status == 200
    assert body["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}


@pytest.mark.parametrize("words,factor", [(1, 1.0), (128, 1.0), (256, 2.0), (384, 3.0), (2000, 4.0)])
async def test_emulated_encoder_inputs_longer_than_the_profile_cost_more(words, factor):
    backend = make_emulated("demo", "minilm", "fp16")
    await backend.load()
    result = await backend.run_batch(["short", " ".join(["w"] * words)])
    assert result.compute_s == pytest.approx(factor * PROFILES["demo"].batch_ms("fp16", 2) / 1000.0)
    assert [n for _, n in result.outputs] == [1, words]


async def test_emulated_decoder_holds_kv_blocks_while_a_batch_runs_and_frees_them():
    backend = make_emulated("a100-opt-13b", "opt-13b", "fp16")
    seen = []

    async def watch():
        while True:
            seen.append(backend.stats()["kv_used"])
            await asyncio.sleep(0.005)

    watcher = asyncio.ensure_future(watch())
    await backend.run_batch([("a b c d", 30), ("e f", 2)])  # 34 and 4 tokens: 3 + 1 blocks of 16
    watcher.cancel()
    assert max(seen) == 4 and backend.stats()["kv_used"] == 0


async def test_emulated_decoder_runs_in_turns_when_the_kv_pool_cannot_hold_the_batch():
    backend = make_emulated("a100-opt-13b", "opt-13b", "fp16")
    pool = backend.kv_allocator
    whole = await backend.run_batch([("p", 16)] * 4)
    pool.leak(pool.num_blocks - 2)  # room for two sequences of one block each
    turns = await backend.run_batch([("p", 16)] * 4)
    assert turns.compute_s > 1.5 * whole.compute_s, "two turns of two instead of one of four"
    assert pool.used == pool.leaked
