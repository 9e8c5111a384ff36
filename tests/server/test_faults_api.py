"""POST /admin/faults: only with --enable-faults; each fault's effect."""

from __future__ import annotations

import asyncio
import time

import pytest

from forescale_server.emulated_backend import make_emulated

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
        ({"cache_flush": "yes", "seconds": 5}, "must be true"),
        ({"cache_flush": True, "seconds": 0}, "'seconds' must be"),
    ],
)
async def test_bad_fault_bodies_are_400(recording, body, message):
    async with serving(recording, enable_faults=True) as (client, _):
        response = await client.post("/admin/faults", json=body, headers=AUTH)
        assert response.status == 400 and message in (await response.json())["error"]["message"]


# (raw JSON body, the field the error names, words of its message); NaN is sent as the JSON token Python reads
BAD_DIAGNOSIS_FAULTS = [
    ('{"bogus": 1}', "bogus", "unknown fault 'bogus'"),
    ('{"oom": true, "seconds": 3}', "oom", "unknown fault 'oom'"),
    ('{"kv_fragmentation": NaN}', "kv_fragmentation", "'kv_fragmentation' must be a number from 0 to 1, got nan"),
    ('{"kv_fragmentation": -0.1}', "kv_fragmentation", "'kv_fragmentation' must be a number from 0 to 1"),
    ('{"kv_fragmentation": 1.5}', "kv_fragmentation", "'kv_fragmentation' must be a number from 0 to 1"),
    ('{"kv_fragmentation": "half"}', "kv_fragmentation", "'kv_fragmentation' must be a number"),
    ('{"kv_fragmentation": 0.5, "seconds": 3}', "seconds", "unknown field(s) 'seconds'"),
    ('{"memory_pressure": 0.5}', "seconds", "'memory_pressure' needs 'seconds'"),
    ('{"memory_pressure": NaN, "seconds": 3}', "memory_pressure", "'memory_pressure' must be a number from 0 to 1, got nan"),
    ('{"memory_pressure": -1, "seconds": 3}', "memory_pressure", "'memory_pressure' must be a number from 0 to 1"),
    ('{"memory_pressure": 0.5, "seconds": NaN}', "seconds", "'seconds' must be a number"),
    ('{"memory_pressure": 0.5, "seconds": -5}', "seconds", "'seconds' must be a number"),
    ('{"slowdown": NaN, "seconds": 3}', "slowdown", "'slowdown' must be a number"),
    ('{"latency_ms": Infinity, "seconds": 3}', "latency_ms", "'latency_ms' must be a number"),
    ('{"leak_mb": -1}', "leak_mb", "'leak_mb' must be an integer"),
    ('{"memory_pressure": 0.5, "kv_fragmentation": 0.5, "seconds": 3}', None, "got 'kv_fragmentation', 'memory_pressure'"),
]


@pytest.mark.parametrize("raw,field,message", BAD_DIAGNOSIS_FAULTS, ids=[raw for raw, _, _ in BAD_DIAGNOSIS_FAULTS])
async def test_bad_amounts_and_unknown_faults_are_400_naming_the_field(recording, raw, field, message):
    async with serving(recording, enable_faults=True) as (client, server):
        response = await client.post("/admin/faults", data=raw, headers={**AUTH, "Content-Type": "application/json"})
        error = (await response.json())["error"]
        assert response.status == 400 and message in error["message"], error
        assert error["param"] == field
        assert server.faults.memory_pressure() == 0.0, "a refused body changes nothing"


async def test_kv_fragmentation_needs_a_kv_cache(recording):
    async with serving(recording, enable_faults=True) as (client, _):
        response = await client.post("/admin/faults", json={"kv_fragmentation": 0.5}, headers=AUTH)
        error = (await response.json())["error"]
        assert response.status == 400 and "has no KV cache" in error["message"] and error["param"] == "kv_fragmentation"


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


async def test_a_timed_cache_flush_keeps_the_cache_from_answering_until_it_ends(recording):
    """A cache that stopped working: every lookup misses for `seconds`, then the cache fills again."""
    async with serving(recording, enable_faults=True) as (client, server):
        await client.post("/v1/embeddings", json={"input": ["a"]})
        await client.post("/v1/embeddings", json={"input": ["a"]})
        hits = _sample(await (await client.get("/metrics")).text(), "forescale_cache_hits_total")
        body = await (await client.post("/admin/faults", json={"cache_flush": True, "seconds": 0.6}, headers=AUTH)).json()
        assert body["cache_entries"] == 0 and body["faults"]["cache_off_seconds_left"] > 0
        for _ in range(3):
            await client.post("/v1/embeddings", json={"input": ["a"]})
        assert len(server.cache) == 0
        assert _sample(await (await client.get("/metrics")).text(), "forescale_cache_hits_total") == hits
        await asyncio.sleep(0.7)
        await client.post("/v1/embeddings", json={"input": ["a"]})
        await client.post("/v1/embeddings", json={"input": ["a"]})
        assert _sample(await (await client.get("/metrics")).text(), "forescale_cache_hits_total") == hits + 1


def _sample(metrics: str, name: str) -> float:
    """The sum of a series' samples over every label set in an exposition."""
    values = [float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(name + "{")]
    assert values, f"{name} is not in the exposition"
    return sum(values)


@pytest.mark.parametrize("pressure,batch,served,refusals", [
    (0.0, 8, 8, 0),    # no pressure: one batch of 8
    (0.5, 8, 8, 0),    # room for 4 of the 8-item max batch: a batch of 8 items is split, nothing fails
    (1.0, 1, 0, 1),    # no room at all: a lone item is refused and its request fails
], ids=["none", "half", "full"])
async def test_memory_pressure_refuses_what_does_not_fit_logs_and_counts_it(caplog, pressure, batch, served, refusals):
    backend = RecordingBackend()
    async with serving(backend, enable_faults=True) as (client, server):
        if pressure:
            answer = await client.post("/admin/faults", json={"memory_pressure": pressure, "seconds": 30}, headers=AUTH)
            assert (await answer.json())["faults"]["memory_pressure"] == pressure
        with caplog.at_level("WARNING", logger="forescale.server"):
            response = await client.post("/v1/embeddings", json={"input": [f"x{i}" for i in range(batch)]})
            answer = await response.json()
        metrics = await (await client.get("/metrics")).text()
        room = server.faults.batch_room(8)
    if served:
        assert response.status == 200 and sum(len(b) for b in backend.batches) == served
        assert all(len(b) <= room for b in backend.batches)
    else:
        error = answer["error"]
        assert response.status == 503 and error["code"] == "out_of_memory" and "out of memory" in error["message"]
        assert backend.batches == [], "a refused allocation never reaches the device"
    oom_lines = [r for r in caplog.records if "out of memory" in r.getMessage() and r.levelname == "WARNING"]
    assert _sample(metrics, "forescale_oom_warnings_total") == len(oom_lines)
    assert (len(oom_lines) > 0) == (refusals > 0 or batch > room)


async def test_memory_pressure_expires_and_clear_lifts_it():
    backend = RecordingBackend()
    async with serving(backend, enable_faults=True) as (client, server):
        await client.post("/admin/faults", json={"memory_pressure": 1.0, "seconds": 0.2}, headers=AUTH)
        assert (await client.post("/v1/embeddings", json={"input": ["early"]})).status == 503
        await asyncio.sleep(0.3)
        assert (await client.post("/v1/embeddings", json={"input": ["late"]})).status == 200
        await client.post("/admin/faults", json={"memory_pressure": 1.0, "seconds": 60}, headers=AUTH)
        await client.post("/admin/faults", json={"clear": True}, headers=AUTH)
        assert server.faults.memory_pressure() == 0.0
        assert (await client.post("/v1/embeddings", json={"input": ["after clear"]})).status == 200


@pytest.mark.parametrize("share,leaked", [(0.25, 978), (0.5, 1957), (1.0, 3914)])
async def test_kv_fragmentation_leaks_blocks_that_raise_usage_and_fragmentation(share, leaked):
    backend = make_emulated("a100-opt-13b", "opt-13b", "fp16")
    async with serving(backend, enable_faults=True, precision="fp16") as (client, _):
        before = await (await client.get("/metrics")).text()
        body = await (await client.post("/admin/faults", json={"kv_fragmentation": share}, headers=AUTH)).json()
        after = await (await client.get("/metrics")).text()
        assert body["faults"]["kv_leaked_blocks"] == leaked and body["faults"]["kv_blocks"] == 3914
        assert _sample(before, "forescale_kv_blocks_used") == 0 and _sample(before, "forescale_kv_fragmentation_ratio") == 0
        assert _sample(after, "forescale_kv_blocks_used") == leaked
        assert _sample(after, "forescale_kv_fragmentation_ratio") == pytest.approx(15 / 16)  # one token in a 16-token block
        await client.post("/admin/faults", json={"kv_fragmentation": 0}, headers=AUTH)
        assert _sample(await (await client.get("/metrics")).text(), "forescale_kv_blocks_used") == 0


async def test_a_full_kv_pool_fails_a_completion_with_a_503_naming_it():
    backend = make_emulated("a100-opt-13b", "opt-13b", "fp16")
    async with serving(backend, enable_faults=True, precision="fp16") as (client, _):
        await client.post("/admin/faults", json={"kv_fragmentation": 1.0}, headers=AUTH)
        response = await client.post("/v1/completions", json={"prompt": "no room", "max_tokens": 2, "model": "opt-13b"})
        error = (await response.json())["error"]
        assert response.status == 503 and error["code"] == "kv_cache_full" and "3914 leaked" in error["message"]
        await client.post("/admin/faults", json={"clear": True}, headers=AUTH)
        response = await client.post("/v1/completions", json={"prompt": "room again", "max_tokens": 2, "model": "opt-13b"})
        assert response.status == 200


@pytest.mark.parametrize("fault,grows", [
    ({"leak_mb": 64}, True),                             # the leak counts as device memory in emulation
    ({"memory_pressure": 0.5, "seconds": 30}, True),     # half the device's room held
    ({"latency_ms": 50, "seconds": 30}, False),
])
async def test_emulated_device_memory_shows_what_the_faults_hold(fault, grows):
    backend = make_emulated("demo", "minilm", "fp16")
    async with serving(backend, enable_faults=True, precision="fp16", max_leak_mb=128) as (client, _):
        before = _sample(await (await client.get("/metrics")).text(), "forescale_gpu_memory_bytes")
        assert (await client.post("/admin/faults", json=fault, headers=AUTH)).status == 200
        after = _sample(await (await client.get("/metrics")).text(), "forescale_gpu_memory_bytes")
    assert before == backend.device_memory.used_bytes("fp16")
    assert (after >= 1.2 * before) == grows, (before, after)
