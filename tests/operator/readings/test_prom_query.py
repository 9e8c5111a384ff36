"""`HttpPromQuery` against a small HTTP server standing in for Prometheus's /api/v1/query: every
answer shape, and every failure named in the readers' words (no patching: real sockets)."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from forescale_operator.readings.prom_query import HttpPromQuery
from forescale_predictor.errors import MetricsUnavailable


def _vector(*series) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [1.0, value]} for labels, value in series]}}


#: query -> (HTTP status, body: a dict sent as JSON, or text sent as is)
ANSWERS = {
    "one": (200, _vector(({}, "42.5"))),
    "none": (200, _vector()),
    "two": (200, _vector(({"pod": "a"}, "1"), ({"pod": "b"}, "2"))),
    "nan": (200, _vector(({}, "NaN"))),
    "scalar": (200, {"status": "success", "data": {"resultType": "scalar", "result": [1.0, "7"]}}),
    "matrix": (200, {"status": "success", "data": {"resultType": "matrix", "result": []}}),
    "bad": (400, {"status": "error", "errorType": "bad_data", "error": "parse error at char 4"}),
    "html": (502, "<html>Bad Gateway</html>"),
    "word": (200, _vector(({}, "lots"))),
    "by-job": (200, _vector(({"job": "x", "instance": "i"}, "3"))),
}


@pytest.fixture
async def prometheus():
    seen: list[dict] = []

    async def query(request: web.Request) -> web.Response:
        form = dict(await request.post())
        seen.append(form)
        if form["query"] == "slow":
            await asyncio.sleep(5)
        status, body = ANSWERS[form["query"]]
        text = body if isinstance(body, str) else json.dumps(body)
        return web.Response(status=status, text=text, content_type="application/json")

    app = web.Application()
    app.router.add_post("/api/v1/query", query)
    server = TestServer(app)
    await server.start_server()
    yield f"http://127.0.0.1:{server.port}", seen
    await server.close()


@pytest.mark.parametrize("query,value", [("one", 42.5), ("none", None), ("scalar", 7.0)])
async def test_scalar_answers(prometheus, query, value):
    url, seen = prometheus
    async with HttpPromQuery(url, at=1_790_000_000.0) as prom:
        assert await prom.scalar(query) == value
    assert seen[0] == {"query": query, "time": "1790000000.000"}, "every query at the one instant"


async def test_nan_passes_through_for_the_diagnosis_to_read_as_missing(prometheus):
    async with HttpPromQuery(prometheus[0]) as prom:
        value = await prom.scalar("nan")
    assert value != value


async def test_vector_keys_series_by_pod_or_by_their_labels(prometheus):
    async with HttpPromQuery(prometheus[0]) as prom:
        assert await prom.vector("two") == {"a": 1.0, "b": 2.0}
        assert await prom.vector("none") == {}
        assert await prom.vector("by-job") == {"instance=i,job=x": 3.0}


@pytest.mark.parametrize("call,query,message", [
    ("scalar", "two", "returned 2 series for 'two'; expected one"),
    ("scalar", "matrix", "answered a matrix to 'matrix'"),
    ("scalar", "bad", "rejected the query 'bad' (HTTP 400): parse error at char 4"),
    ("scalar", "html", "sent an unreadable answer (HTTP 502) to 'html'"),
    ("scalar", "word", "returned 'lots', not a number"),
    ("vector", "scalar", "answered a scalar, not a vector"),
])
async def test_bad_answers_are_unavailable_naming_the_query(prometheus, call, query, message):
    async with HttpPromQuery(prometheus[0]) as prom:
        with pytest.raises(MetricsUnavailable, match=message.replace("(", r"\(").replace(")", r"\)")):
            await getattr(prom, call)(query)


async def test_a_slow_prometheus_is_named_with_the_timeout(prometheus):
    async with HttpPromQuery(prometheus[0], timeout_s=0.2) as prom:
        with pytest.raises(MetricsUnavailable, match=r"did not answer within 0.2 s \(query 'slow'\)"):
            await prom.scalar("slow")


async def test_nothing_listening_is_connection_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with HttpPromQuery(f"http://127.0.0.1:{port}") as prom:
        with pytest.raises(MetricsUnavailable, match=f"cannot reach Prometheus at http://127.0.0.1:{port}: connection refused"):
            await prom.scalar("up")


@pytest.mark.parametrize("url", ["prometheus:9090", "ftp://p", ""])
def test_a_url_that_is_not_http_is_refused(url):
    with pytest.raises(ValueError, match="must be http"):
        HttpPromQuery(url)
