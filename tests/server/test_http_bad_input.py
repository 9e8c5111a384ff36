"""Every bad input of issue 4 gets a 4xx JSON error naming the problem, and the server keeps serving."""

from __future__ import annotations

import json

import pytest

from forescale_server.config import Limits

from .conftest import serving

LIMITS = Limits(max_body_bytes=4096, max_items=4, max_input_chars=50)

CASES = [
    ("malformed JSON", b'{"input": ["a"', 400, "malformed JSON"),
    ("not an object", b'["a"]', 400, "must be a JSON object"),
    ("empty body", b"", 400, "request body is empty"),
    ("missing input", b'{"model": "minilm"}', 400, "'input' is required"),
    ("wrong type", b'{"input": 42}', 400, "'input' must be a string, a list of strings, a list of token ids"),
    ("wrong item type", b'{"input": ["ok", 3]}', 400, "'input[1]' must be a string"),
    ("empty list", b'{"input": []}', 400, "'input' is empty"),
    ("empty string", b'{"input": ""}', 400, "'input[0]' is empty"),
    ("too long", json.dumps({"input": ["x" * 51]}).encode(), 400, "the limit is 50"),
    ("too many items", json.dumps({"input": ["a"] * 5}).encode(), 400, "has 5 items; the limit is 4"),
    ("body too large", json.dumps({"input": ["a" * 5000]}).encode(), 413, "limit"),
    ("unknown model", b'{"input": ["a"], "model": "gpt-9"}', 404, "unknown model 'gpt-9'"),
    ("model wrong type", b'{"input": ["a"], "model": 1}', 400, "'model' must be a string"),
    ("bad encoding", b'{"input": ["a"], "encoding_format": "int8"}', 400, "encoding_format"),
    ("empty token ids", b'{"input": [[]]}', 400, "'input[0]' is an empty list of token ids"),
    ("negative token id", b'{"input": [[5, -2]]}', 400, "'input[0][1]' must be a non-negative integer token id"),
    ("text mixed with token ids", b'{"input": [7, "a"]}', 400, "'input[0]' must be a string or a list of token ids"),
    ("bad dimensions", b'{"input": ["a"], "dimensions": 0}', 400, "'dimensions' must be a positive integer"),
    ("bad turn", b'{"input": ["a"], "conversation_id": "c", "turn": -1}', 400, "'turn' must be"),
]


@pytest.mark.parametrize("name,body,status,message", CASES, ids=[c[0] for c in CASES])
async def test_bad_embedding_request(recording, name, body, status, message):
    async with serving(recording, limits=LIMITS) as (client, _):
        response = await client.post("/v1/embeddings", data=body)
        assert response.status == status
        error = (await response.json())["error"]
        assert message in error["message"] and error["type"]
        assert set(error) == {"message", "type", "param", "code"}  # OpenAI's error object
        ok = await client.post("/v1/embeddings", json={"input": ["still serving"]})
        assert ok.status == 200


async def test_wrong_endpoint_and_unknown_route_are_json(recording):
    async with serving(recording) as (client, _):
        response = await client.post("/v1/completions", json={"prompt": "hi"})
        assert response.status == 400 and "serves /v1/embeddings" in (await response.json())["error"]["message"]
        response = await client.get("/v1/nothing")
        assert response.status == 404 and (await response.json())["error"]["type"] == "not_found_error"
        response = await client.get("/v1/embeddings")
        assert response.status == 405


async def test_backend_failure_is_a_500_json_without_traceback():
    from .conftest import RecordingBackend

    async with serving(RecordingBackend(fail=True)) as (client, _):
        response = await client.post("/v1/embeddings", json={"input": ["x"]})
        assert response.status == 500
        body = await response.json()
        assert body == {"error": {"message": "internal server error", "type": "server_error", "param": None, "code": None}}


async def test_full_queue_answers_429_with_retry_after():
    from forescale_server.config import BatchingConfig

    from .conftest import RecordingBackend

    backend = RecordingBackend(batch_s=0.3)
    async with serving(backend, batching=BatchingConfig(max_batch=1, max_wait_s=0, min_batch=1, max_queue=2)) as (client, _):
        import asyncio

        tasks = [asyncio.ensure_future(client.post("/v1/embeddings", json={"input": [f"q{i}"]})) for i in range(6)]
        responses = await asyncio.gather(*tasks)
        codes = sorted(r.status for r in responses)
        assert 429 in codes and 200 in codes
        rejected = next(r for r in responses if r.status == 429)
        assert int(rejected.headers["Retry-After"]) >= 1
        assert "queue is full" in (await rejected.json())["error"]["message"]
