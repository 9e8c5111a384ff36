"""POST /admin/faults: only with --enable-faults; each fault's effect."""

from __future__ import annotations

import time

import pytest

from .conftest import AUTH, RecordingBackend, serving


async def test_faults_are_404_without_the_flag(recording):
    async with serving(recording, enable_faults=False) as (client, _):
        response = await client.post("/admin/faults", json={"cache_flush": True}, headers=AUTH)
        assert response.status == 404 and "--enable-faults" in (await response.json())["error"]["message"]


@pytest.mark.parametrize(
    "body,message",
    [
        ({}, "exactly one of"),
        ({"latency_ms": 100}, "needs 'seconds'"),
        ({"latency_ms": -1, "seconds": 1}, "'latency_ms' must be"),
        ({"slowdown": 0.5, "seconds": 1}, "'slowdown' must be"),
        ({"slowdown": 2, "latency_ms": 5, "seconds": 1}, "exactly one of"),
        ({"leak_mb": 10_000}, "'leak_mb' must be an integer"),
        ({"cache_flush": "yes"}, "must be true"),
    ],
)
async def test_bad_fault_bodies_are_400(recording, body, message):
    async with serving(recording, enable_faults=True) as (client, _):
        response = await client.post("/admin/faults", json=body, headers=AUTH)
        assert response.status == 400 and message in (await response.json())["error"]["message"]


async def test_latency_and_slowdown_lengthen_compute_then_expire():
    backend = RecordingBackend(batch_s=0.02)
    async with serving(backend, enable_faults=True) as (client, _):
        async def timed():
            started = time.perf_counter()
            assert (await client.post("/v1/embeddings", json={"input": [f"t{time.perf_counter()}"]})).status == 200
            return time.perf_counter() - started

        baseline = await timed()
        await client.post("/admin/faults", json={"latency_ms": 200, "seconds": 0.5}, headers=AUTH)
        assert await timed() >= 0.2
        await client.post("/admin/faults", json={"clear": True}, headers=AUTH)
        await client.post("/admin/faults", json={"slowdown": 6, "seconds": 1}, headers=AUTH)
        assert await timed() >= 0.1  # 0.02 s of compute x 6
        await client.post("/admin/faults", json={"clear": True}, headers=AUTH)
        assert await timed() < baseline + 0.1


async def test_cache_flush_and_bounded_leak(recording):
    async with serving(recording, enable_faults=True, max_leak_mb=8) as (client, server):
        await client.post("/v1/embeddings", json={"input": ["a", "b"]})
        body = await (await client.post("/admin/faults", json={"cache_flush": True}, headers=AUTH)).json()
        assert body["cache_entries"] == 0
        body = await (await client.post("/admin/faults", json={"leak_mb": 4}, headers=AUTH)).json()
        assert body["faults"]["leaked_mb"] == 4
        over = await client.post("/admin/faults", json={"leak_mb": 6}, headers=AUTH)
        assert over.status == 400 and "bound is 8 MiB" in (await over.json())["error"]["message"]
        metrics = await (await client.get("/metrics")).text()
        assert f"forescale_fault_leaked_bytes{{deployment=\"chat\",pool=\"b\",precision=\"fp32\"}} {float(4 << 20)!r}" in metrics or "forescale_fault_leaked_bytes{deployment=\"chat\",pool=\"b\",precision=\"fp32\"} 4.194304e+06" in metrics
        await client.post("/admin/faults", json={"leak_mb": 0}, headers=AUTH)
        assert server.faults.leaked_mb == 0
