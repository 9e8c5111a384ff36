"""The real all-MiniLM-L6-v2 (bundled weights): vectors, precisions, agreement,
the buffer pool and the profiler. The model loads once per module."""

from __future__ import annotations

import asyncio
import json

import pytest
import torch

from forescale_server.calibration import calibration_sentences
from forescale_server.encoder_backend import EncoderBackend
from forescale_server.model_files import minilm_dir

from .conftest import AUTH, serving

SENTENCES = [
    "A man is eating food.",
    "The new movie is awesome.",
    "Kubernetes schedules pods onto nodes.",
    "Tail latency matters more than the mean.",
]


@pytest.fixture(scope="module")
def encoder():
    torch.set_num_threads(1)
    backend = EncoderBackend(minilm_dir(), "minilm", max_batch=16)
    backend.load_sync()
    yield backend
    backend.activate_precision("fp32")


def test_calibration_set_has_at_least_100_real_sentences():
    sentences = calibration_sentences()
    assert len(sentences) >= 100 and len(set(sentences)) == len(sentences)
    assert all(s[0].isupper() and len(s.split()) >= 2 and s[-1] in ".!?" for s in sentences)


def test_vectors_match_sentence_transformers(encoder):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(minilm_dir()), device="cpu").encode(SENTENCES, convert_to_tensor=True)
    ours = encoder.embed_texts(SENTENCES)
    cosine = torch.nn.functional.cosine_similarity(ours, reference.float(), dim=1)
    assert cosine.min() > 0.9999
    assert torch.allclose(ours.norm(dim=1), torch.ones(len(SENTENCES)), atol=1e-5)


def test_int8_agreement_is_measured_and_high(encoder):
    agreement = encoder.prepare_sync("int8")
    assert 0.99 <= agreement < 1.0  # measured, not assumed: int8 is close but not identical
    assert len(encoder.int8_split) == 8
    quantized = [name for name, m in encoder._variants["int8"].named_modules() if type(m).__name__ == "Linear" and "quantized" in type(m).__module__]
    assert len(quantized) == 36  # every Linear runs int8; 8 of them keep their outlier channels in fp32


def test_bf16_agreement_is_measured(encoder):
    assert 0.995 <= encoder.prepare_sync("bf16") <= 1.0


def test_buffer_pool_allocates_nothing_in_steady_state(encoder):
    before = encoder.pool.allocations
    for i in range(5):
        encoder.run_sync([f"steady traffic {i} {j}" for j in range(8)])
    assert encoder.pool.allocations == before


async def test_http_embeddings_and_precision_switch_under_load(encoder):
    async with serving(encoder) as (client, server):
        response = await client.post("/v1/embeddings", json={"input": SENTENCES[:2], "model": "all-MiniLM-L6-v2"})
        body = await response.json()
        assert response.status == 200 and len(body["data"]) == 2 and len(body["data"][0]["embedding"]) == 384
        expected = encoder.embed_texts(SENTENCES[:1])[0]
        got = torch.tensor(body["data"][0]["embedding"])
        assert torch.nn.functional.cosine_similarity(got, expected, dim=0) > 0.9999

        async def load():
            return await asyncio.gather(*(client.post("/v1/embeddings", json={"input": [f"{s} #{i}"]}) for i, s in enumerate(SENTENCES * 10)))

        async def switch():
            await asyncio.sleep(0.05)
            first = await client.post("/admin/precision", json={"precision": "int8"}, headers=AUTH)
            second = await client.post("/admin/precision", json={"precision": "fp32"}, headers=AUTH)
            return first, second

        results, (to_int8, to_fp32) = await asyncio.gather(load(), switch())
        assert [r.status for r in results] == [200] * len(results)
        assert to_int8.status == 200 and to_fp32.status == 200
        assert 0.99 <= (await to_int8.json())["agreement"] < 1.0
        metrics = await (await client.get("/metrics")).text()
        assert 'precision="int8"' in metrics and "forescale_quality_agreement" in metrics


async def test_profile_returns_the_torch_profiler_table(encoder):
    async with serving(encoder) as (client, _):
        profile = asyncio.ensure_future(client.post("/admin/profile", json={"requests": 2}, headers=AUTH))
        await asyncio.sleep(0.2)
        for i in range(2):
            await client.post("/v1/embeddings", json={"input": [f"profile me {i}"]})
        body = await (await profile).json()
    assert body["requests"] == 2
    assert "Self CPU" in body["table"] and "aten::" in body["table"]


async def test_precision_unavailable_on_cpu_is_400(encoder):
    async with serving(encoder) as (client, _):
        response = await client.post("/admin/precision", json={"precision": "fp16"}, headers=AUTH)
        assert response.status == 400 and "supported: fp32, bf16, int8" in (await response.json())["error"]["message"]
