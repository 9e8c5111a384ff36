"""The admin API: token handling, bodies, and each endpoint's effect."""

from __future__ import annotations

import asyncio
import logging

import pytest

from .conftest import AUTH, TOKEN, RecordingBackend, serving

ENDPOINTS = [
    ("/admin/precision", {"precision": "int8"}),
    ("/admin/warmup", {"inputs": ["a"]}),
    ("/admin/log-level", {"level": "DEBUG", "seconds": 1}),
    ("/admin/profile", {"requests": 1, "timeout_seconds": 0.1}),
]


@pytest.mark.parametrize("path,body", ENDPOINTS)
async def test_admin_is_404_without_a_configured_token(recording, path, body):
    async with serving(recording, token=None) as (client, _):
        response = await client.post(path, json=body, headers=AUTH)
        assert response.status == 404
        assert "admin API is off" in (await response.json())["error"]["message"]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}, {"Authorization": TOKEN}])
@pytest.mark.parametrize("path,body", ENDPOINTS)
async def test_admin_is_401_with_a_bad_or_missing_token(recording, path, body, headers):
    async with serving(recording) as (client, _):
        response = await client.post(path, json=body, headers=headers)
        assert response.status == 401
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert (await response.json())["error"]["type"] == "authentication_error"


BAD_BODIES = [
    ("/admin/precision", {"precision": "fp64"}, "unknown precision"),
    ("/admin/precision", {}, "unknown precision"),
    ("/admin/precision", {"precision": "int8", "x": 1}, "unknown field"),
    ("/admin/precision", {"precision": "fp16"}, "not available on this server"),
    ("/admin/warmup", {}, "exactly one of"),
    ("/admin/warmup", {"inputs": ["a"], "top": 3}, "exactly one of"),
    ("/admin/warmup", {"inputs": []}, "non-empty list"),
    ("/admin/warmup", {"top": 0}, "'top' must be an integer"),
    ("/admin/log-level", {"level": "LOUD"}, "unknown log level"),
    ("/admin/log-level", {"level": "DEBUG", "seconds": -5}, "'seconds' must be"),
    ("/admin/profile", {}, "'requests' is required"),
    ("/admin/profile", {"requests": "ten"}, "'requests' must be an integer"),
]


@pytest.mark.parametrize("path,body,message", BAD_BODIES)
async def test_bad_admin_body_is_400(recording, path, body, message):
    async with serving(recording) as (client, _):
        response = await client.post(path, json=body, headers=AUTH)
        assert response.status == 400
        assert message in (await response.json())["error"]["message"]


async def test_malformed_admin_json_is_400(recording):
    async with serving(recording) as (client, _):
        response = await client.post("/admin/precision", data=b"{nope", headers=AUTH)
        assert response.status == 400 and "malformed JSON" in (await response.json())["error"]["message"]


async def test_precision_switch_reports_agreement_empties_the_cache_and_exports_it(recording):
    async with serving(recording) as (client, server):
        await client.post("/v1/embeddings", json={"input": ["cached"]})
        assert len(server.cache) == 1
        response = await client.post("/admin/precision", json={"precision": "int8"}, headers=AUTH)
        assert response.status == 200
        body = await response.json()
        assert body["precision"] == "int8" and body["previous"] == "fp32" and body["agreement"] == 0.99
        assert len(server.cache) == 0
        metrics = await (await client.get("/metrics")).text()
        assert 'forescale_quality_agreement{deployment="chat",pool="b",precision="int8"} 0.99' in metrics


async def test_precision_switch_under_load_drops_no_request():
    from forescale_server.config import BatchingConfig

    backend = RecordingBackend(batch_s=0.005)
    async with serving(backend, batching=BatchingConfig(max_batch=8, max_wait_s=0.005, min_batch=2, max_queue=1000)) as (client, _):
        async def load():
            return await asyncio.gather(*(client.post("/v1/embeddings", json={"input": [f"r{i}", f"s{i}"]}) for i in range(60)))

        async def switches():
            out = []
            for precision in ("int8", "bf16", "fp32", "int8"):
                out.append(await client.post("/admin/precision", json={"precision": precision}, headers=AUTH))
                await asyncio.sleep(0.01)
            return out

        results, switched = await asyncio.gather(load(), switches())
        assert [r.status for r in results] == [200] * 60
        assert all(r.status == 200 for r in switched)
        assert {"fp32", "int8"} <= set(backend.precisions_seen)  # batches really ran at several precisions


async def test_warmup_inputs_and_top_fill_the_cache(recording):
    async with serving(recording) as (client, server):
        response = await client.post("/admin/warmup", json={"inputs": ["w1", "w2"]}, headers=AUTH)
        assert (await response.json())["warmed"] == 2
        for text in ["hot"] * 5 + ["warm"] * 3 + ["cold"]:
            await client.post("/v1/embeddings", json={"input": [text]})
        server.cache.clear()
        response = await client.post("/admin/warmup", json={"top": 2}, headers=AUTH)
        assert (await response.json())["warmed"] == 2
        batches_before = len(recording.batches)
        await client.post("/v1/embeddings", json={"input": ["hot", "warm"]})
        assert len(recording.batches) == batches_before  # both served from the cache


async def test_log_level_is_raised_then_restored(recording):
    logger = logging.getLogger("forescale")
    logger.setLevel(logging.WARNING)
    async with serving(recording) as (client, _):
        response = await client.post("/admin/log-level", json={"level": "DEBUG", "seconds": 1}, headers=AUTH)
        assert response.status == 200 and (await response.json())["restore_to"] == "WARNING"
        assert logger.level == logging.DEBUG
        await asyncio.sleep(1.2)
        assert logger.level == logging.WARNING


async def test_profile_returns_a_stage_table_for_the_next_requests(recording):
    async with serving(recording) as (client, _):
        profile = asyncio.ensure_future(client.post("/admin/profile", json={"requests": 3}, headers=AUTH))
        await asyncio.sleep(0.05)
        for i in range(3):
            await client.post("/v1/embeddings", json={"input": [f"p{i}"]})
        body = await (await profile).json()
        assert body["requests"] == 3 and body["complete"]
        assert set(body["stages"]) == {"queue", "preprocess", "compute", "postprocess", "total"}
        assert "stage" in body["table"] and "p99_ms" in body["table"]


async def test_token_is_never_logged(recording, caplog):
    caplog.set_level(logging.DEBUG)
    async with serving(recording) as (client, _):
        await client.post("/admin/precision", json={"precision": "int8"}, headers=AUTH)
        await client.post("/admin/precision", json={"precision": "int8"}, headers={"Authorization": "Bearer nope"})
    assert TOKEN not in caplog.text


def test_token_file_wins_and_bad_file_is_a_clear_error(tmp_path):
    from forescale_server.admin_token import AdminToken

    path = tmp_path / "token"
    path.write_text("from-file\n")
    token = AdminToken.from_env({"FORESCALE_ADMIN_TOKEN_FILE": str(path), "FORESCALE_ADMIN_TOKEN": "from-env"})
    assert token.check("Bearer from-file") and not token.check("Bearer from-env")
    assert "from-file" not in repr(token)
    assert not AdminToken.from_env({}).enabled
    with pytest.raises(ValueError, match="cannot be read"):
        AdminToken.from_env({"FORESCALE_ADMIN_TOKEN_FILE": str(tmp_path / "missing")})
