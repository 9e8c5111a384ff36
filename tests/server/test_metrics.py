"""The /metrics exposition: names, labels from the environment, stage histograms."""

from __future__ import annotations

import pytest

from forescale_server.config import Labels
from forescale_server.metrics import STAGES, latency_buckets

from .conftest import serving


def test_labels_come_from_the_pod_environment():
    assert Labels.from_env({"FORESCALE_DEPLOYMENT": "chat", "FORESCALE_POOL": "b"}) == Labels("chat", "b")
    assert Labels.from_env({}) == Labels("local", "a")


def test_buckets_resolve_a_p99_between_5_ms_and_10_s():
    buckets = latency_buckets()
    inside = [(lo, hi) for lo, hi in zip(buckets, buckets[1:]) if hi > 0.005]
    assert buckets[-1] == 10.0
    assert all(hi / lo <= 1.25 for lo, hi in inside)


async def test_every_series_carries_deployment_pool_and_precision(recording):
    async with serving(recording) as (client, _):
        await client.post("/v1/embeddings", json={"input": ["a", "b"]})
        await client.post("/v1/embeddings", json={"input": ["a"]})
        await client.post("/v1/embeddings", json={"input": []})
        text = await (await client.get("/metrics")).text()
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert samples
    for line in samples:
        assert 'deployment="chat"' in line and 'pool="b"' in line and 'precision="' in line, line
    for stage in STAGES:
        assert f'forescale_request_duration_seconds_count{{deployment="chat",pool="b",precision="fp32",stage="{stage}"}} 2.0' in text
    for needle in (
        'forescale_requests_total{code="200",deployment="chat",pool="b",precision="fp32"} 2.0',
        'forescale_requests_total{code="400",deployment="chat",pool="b",precision="fp32"} 1.0',
        'forescale_cache_hits_total{deployment="chat",pool="b",precision="fp32"} 1.0',
        'forescale_cache_misses_total{deployment="chat",pool="b",precision="fp32"} 2.0',
        "forescale_batch_size_bucket",
        "forescale_queue_depth{",
        "forescale_emulated{",
        "forescale_quality_agreement{",
        # read by the diagnosis: request lengths, device busy time, out-of-memory warnings (at 0 from the start)
        'forescale_input_tokens_count{deployment="chat",pool="b",precision="fp32"} 3.0',
        'forescale_input_tokens_sum{deployment="chat",pool="b",precision="fp32"} 3.0',
        'forescale_oom_warnings_total{deployment="chat",pool="b",precision="int8"} 0.0',
        # the cache's too, so that a cold cache's hit ratio reads 0% on the dashboard, not "No data"
        'forescale_cache_hits_total{deployment="chat",pool="b",precision="int8"} 0.0',
        'forescale_cache_misses_total{deployment="chat",pool="b",precision="int8"} 0.0',
    ):
        assert needle in text, needle
    assert "forescale_output_tokens" not in text.replace("# HELP forescale_output_tokens", "").replace(
        "# TYPE forescale_output_tokens", ""), "embeddings have no output tokens"


async def test_completions_record_prompt_and_completion_lengths():
    from forescale_server.emulated_backend import make_emulated

    backend = make_emulated("a100-opt-13b", "opt-13b", "fp16")
    async with serving(backend, precision="fp16") as (client, _):
        for prompt, n in (("one two three", 4), ("four", 2)):
            response = await client.post("/v1/completions", json={"prompt": prompt, "max_tokens": n, "model": "opt-13b"})
            assert response.status == 200
        text = await (await client.get("/metrics")).text()
    busy = [float(line.split()[-1]) for line in text.splitlines() if line.startswith("forescale_device_busy_seconds_total{")]
    # the profile's prefill and decode time of the two batches, as the emulated device slept it
    assert busy == [pytest.approx((_batch_ms(backend.profile, 3, 4) + _batch_ms(backend.profile, 1, 2)) / 1000)]
    for needle in ('forescale_input_tokens_sum{deployment="chat",pool="b",precision="fp16"} 4.0',
                   'forescale_input_tokens_count{deployment="chat",pool="b",precision="fp16"} 2.0',
                   'forescale_output_tokens_sum{deployment="chat",pool="b",precision="fp16"} 6.0',
                   'forescale_kv_fragmentation_ratio{deployment="chat",pool="b",precision="fp16"} 0.0',
                   'forescale_kv_blocks_free{deployment="chat",pool="b",precision="fp16"} 3914.0'):
        assert needle in text, needle


@pytest.mark.parametrize("path,status", [("/healthz", 200), ("/readyz", 200)])
async def test_health_endpoints(recording, path, status):
    async with serving(recording) as (client, _):
        response = await client.get(path)
        assert response.status == status


async def test_readyz_is_503_until_the_model_loads():
    import asyncio

    from .conftest import RecordingBackend

    class SlowLoad(RecordingBackend):
        async def load(self):
            await asyncio.sleep(0.3)

    from aiohttp.test_utils import TestClient, TestServer

    from forescale_server.admin_token import AdminToken
    from forescale_server.http_app import build_app
    from forescale_server.server import ModelServer

    from .conftest import make_config

    server = ModelServer(SlowLoad(), make_config(), AdminToken(None))
    client = TestClient(TestServer(build_app(server)))
    await client.start_server()
    try:
        assert (await client.get("/readyz")).status == 503
        early = await client.post("/v1/embeddings", json={"input": ["x"]})
        assert early.status == 503 and "loading" in (await early.json())["error"]["message"]
        await server.wait_ready()
        assert (await client.get("/readyz")).status == 200
    finally:
        await client.close()


def _batch_ms(profile, prompt_tokens: int, steps: int) -> float:
    """One sequence's prefill, then one decode iteration per output token."""
    return profile.prefill_ms("fp16", prompt_tokens) + sum(profile.decode_iter_ms("fp16", 1, prompt_tokens + i) for i in range(steps))
