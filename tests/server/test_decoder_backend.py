"""A causal LM (tiny, random weights, built from a config) behind /v1/completions,
its keys and values in the paged KV cache."""

from __future__ import annotations

import shutil

import pytest
import torch

from forescale_server.decoder_backend import DecoderBackend
from forescale_server.model_files import minilm_dir, resolve_model

from .conftest import AUTH, serving


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    model = LlamaForCausalLM(config)
    model.save_pretrained(path)
    shutil.copy(minilm_dir() / "tokenizer.json", path)  # any tokenizer with a matching vocabulary
    return path, model


@pytest.fixture(scope="module")
def decoder(tiny_llama):
    path, _ = tiny_llama
    backend = DecoderBackend(path, "tiny", kv_blocks=64, block_size=4)
    backend.load_sync()
    return backend


def test_a_causal_lm_directory_resolves_to_completions(tiny_llama):
    kind, _ = resolve_model(str(tiny_llama[0]))
    assert kind == "completions"


def test_unknown_model_name_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown model"):
        resolve_model(str(tmp_path / "nope"))


@pytest.mark.parametrize("prompt,max_tokens", [("The quick brown fox", 9), ("Hello", 1), ("A longer prompt that spans several blocks of four tokens", 6)])
def test_paged_generation_matches_transformers_generate(decoder, tiny_llama, prompt, max_tokens):
    _, model = tiny_llama
    tokens, n_prompt = decoder.generate(prompt, max_tokens)
    ids = torch.tensor([decoder._encode(prompt)])
    expected = model.generate(ids, max_new_tokens=max_tokens, min_new_tokens=max_tokens, do_sample=False, pad_token_id=0)[0, ids.shape[1]:].tolist()
    assert tokens == expected and n_prompt == ids.shape[1]
    assert decoder.kv.allocator.used == 0  # every block returned when the sequence ended


def test_a_sequence_larger_than_the_pool_is_refused(tiny_llama):
    from forescale_server.errors import APIError

    small = DecoderBackend(tiny_llama[0], "tiny", kv_blocks=8, block_size=4)
    small.load_sync()
    with pytest.raises(APIError, match="needs 10 KV blocks; the pool has 8"):
        small.generate("one two three four five six seven eight", 30)
    assert small.kv.allocator.used == 0


async def test_completions_over_http_with_kv_metrics_and_int8(decoder):
    async with serving(decoder) as (client, _):
        response = await client.post("/v1/completions", json={"prompt": ["Hello world", "Second prompt"], "max_tokens": 4, "model": "tiny"})
        body = await response.json()
        assert response.status == 200 and len(body["choices"]) == 2
        assert body["usage"]["completion_tokens"] == 8
        bad = await client.post("/v1/completions", json={"prompt": "x", "max_tokens": 0})
        assert bad.status == 400 and "'max_tokens'" in (await bad.json())["error"]["message"]
        metrics = await (await client.get("/metrics")).text()
        assert 'forescale_kv_blocks_free{deployment="chat",pool="b",precision="fp32"} 64.0' in metrics
        switched = await (await client.post("/admin/precision", json={"precision": "int8"}, headers=AUTH)).json()
        assert 0.0 < switched["agreement"] <= 1.0
        again = await client.post("/v1/completions", json={"prompt": "Hello world", "max_tokens": 2})
        assert again.status == 200
        decoder.activate_precision("fp32")


async def test_kv_fragmentation_fault_leaks_real_kv_blocks_until_cleared(decoder):
    async with serving(decoder, enable_faults=True) as (client, _):
        try:
            body = await (await client.post("/admin/faults", json={"kv_fragmentation": 0.5}, headers=AUTH)).json()
            assert body["faults"]["kv_leaked_blocks"] == 32 and body["faults"]["kv_fragmentation"] == 0.75  # 1 token of 4
            metrics = await (await client.get("/metrics")).text()
            assert 'forescale_kv_blocks_used{deployment="chat",pool="b",precision="fp32"} 32.0' in metrics
            assert 'forescale_kv_fragmentation_ratio{deployment="chat",pool="b",precision="fp32"} 0.75' in metrics
            assert (await client.post("/v1/completions", json={"prompt": "Hello", "max_tokens": 2})).status == 200
            await client.post("/admin/faults", json={"kv_fragmentation": 1.0}, headers=AUTH)  # the rest of the pool
            full = await client.post("/v1/completions", json={"prompt": "Hello again", "max_tokens": 2})
            error = (await full.json())["error"]
            assert full.status == 503 and error["code"] == "kv_cache_full"
        finally:
            await client.post("/admin/faults", json={"clear": True}, headers=AUTH)
        assert decoder.kv.allocator.used == 0
        assert (await client.post("/v1/completions", json={"prompt": "Hello again", "max_tokens": 2})).status == 200
