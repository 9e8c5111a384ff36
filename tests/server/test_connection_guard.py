"""Defect 2 of issue 19: half-sent requests were held for ever and no connection cap existed.

Over real sockets: a request head must arrive within the header timeout, a
body within the body timeout, and connections beyond the cap are closed at
accept while the ones already open are served.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import aiohttp
import pytest

from forescale_server.admin_token import AdminToken
from forescale_server.config import ConnectionLimits
from forescale_server.connection_guard import default_max_connections
from forescale_server.http_app import start_serving
from forescale_server.server import ModelServer

from .conftest import RecordingBackend, make_config

GOOD = b'POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{"input": "a"}'


async def _serve(**limits):
    config = replace(make_config(), connections=ConnectionLimits(**limits))
    server = ModelServer(RecordingBackend(), config, AdminToken(None))
    runner, site = await start_serving(server, "127.0.0.1", 0)
    await server.wait_ready()
    return runner, site


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bytes | None:
    """What the server sent before closing, or None if it is still open after `seconds`."""
    try:
        return await asyncio.wait_for(reader.read(), seconds)
    except asyncio.TimeoutError:
        return None
    except ConnectionResetError:
        return b""


async def _post(port: int) -> int:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"http://127.0.0.1:{port}/v1/embeddings", json={"input": "ok"}) as r:
            return r.status


HALF_SENT = [
    ("nothing at all", b""),
    ("half a request line", b"POST /v1/embed"),
    ("headers without the blank line", b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"),
]


@pytest.mark.parametrize("name,sent", HALF_SENT, ids=[c[0] for c in HALF_SENT])
async def test_a_half_sent_request_head_is_closed_after_the_header_timeout(name, sent):
    runner, site = await _serve(header_timeout_s=0.3)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        writer.write(sent)
        await writer.drain()
        assert await _closed_within(reader, 3.0) is not None
        assert site.guard.timed_out == 1
        assert await _post(site.port) == 200
        writer.close()
    finally:
        await runner.cleanup()


async def test_a_slowloris_trickle_does_not_reset_the_clock():
    runner, site = await _serve(header_timeout_s=0.5)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        closed_after = None
        for i, byte in enumerate(GOOD[:60]):
            try:
                writer.write(bytes([byte]))
                await writer.drain()
            except ConnectionError:
                closed_after = i
                break
            if reader.at_eof():
                closed_after = i
                break
            await asyncio.sleep(0.05)
        assert closed_after is not None or await _closed_within(reader, 1.0) is not None
        assert site.guard.timed_out == 1
    finally:
        await runner.cleanup()


async def test_a_late_body_is_a_408_and_the_connection_closes():
    runner, site = await _serve(body_timeout_s=0.3)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        writer.write(GOOD[:-5])  # the head and part of the body
        await writer.drain()
        answer = await _closed_within(reader, 3.0)
        assert answer is not None and b" 408 " in answer.split(b"\r\n", 1)[0]
        assert b"did not arrive within 0.3 s" in answer
    finally:
        await runner.cleanup()


async def test_keep_alive_requests_are_not_cut_by_the_header_timeout():
    runner, site = await _serve(header_timeout_s=0.3)
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(4):
                async with session.post(f"http://127.0.0.1:{site.port}/v1/embeddings", json={"input": "ok"}) as r:
                    assert r.status == 200
                await asyncio.sleep(0.15)  # 0.6 s in all on one connection, each request well inside the limit
        assert site.guard.timed_out == 0
    finally:
        await runner.cleanup()


async def test_connections_beyond_the_cap_are_refused_at_accept_and_the_rest_served():
    runner, site = await _serve(max_connections=8, header_timeout_s=1.0)
    try:
        held = [await asyncio.open_connection("127.0.0.1", site.port) for _ in range(8)]
        await asyncio.sleep(0.05)
        assert site.guard.open == 8
        reader, _ = await asyncio.open_connection("127.0.0.1", site.port)
        assert await _closed_within(reader, 1.0) == b""  # closed at once, nothing sent
        assert site.guard.refused >= 1
        # The holders send nothing: the header timeout frees their slots and service resumes.
        await asyncio.sleep(1.3)
        assert site.guard.open == 0
        assert await _post(site.port) == 200
        for _, writer in held:
            writer.close()
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("fd_limit,cap", [(256, 128), (64, 16), (1024, 896), (1 << 20, 4096)])
def test_the_default_cap_stays_under_the_descriptor_limit(fd_limit, cap):
    assert default_max_connections(fd_limit) == cap
