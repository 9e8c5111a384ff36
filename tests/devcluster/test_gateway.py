"""The gateway against a small fake API and in-process upstream servers."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from fake_kube_api import FakeKubeApi

from forescale_devcluster.gateway import Backend, Endpoint, Gateway, pick_backend, pick_endpoint, pod_url

pytestmark = pytest.mark.timeout(60)

ROUTE_ROOT = "apis/gateway.networking.k8s.io/v1"


class Upstreams:
    """In-process model-server look-alikes; each answers with its own pod name."""

    def __init__(self) -> None:
        self.servers: dict[str, TestServer] = {}
        self.status: dict[str, int] = {}

    async def add(self, pod: str) -> int:
        async def embeddings(request: web.Request) -> web.Response:
            body = await request.json()
            code = self.status.get(pod, 200)
            headers = {"Retry-After": "2"} if code == 429 else {}
            return web.json_response({"pod": pod, "input": body["input"]}, status=code, headers=headers)

        app = web.Application()
        app.router.add_post("/v1/embeddings", embeddings)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        self.servers[pod] = server
        return server.port

    async def close(self) -> None:
        for server in self.servers.values():
            await server.close()


def pod(name: str, pool: str, port: int, ready: bool = True) -> dict:
    return {"metadata": {"name": name, "namespace": "ml",
                         "labels": {"forescale.io/deployment": "chat", "forescale.io/pool": pool},
                         "annotations": {"forescale.io/port": str(port)}},
            "status": {"podIP": "127.0.0.1",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def service(name: str, pool: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ml"},
            "spec": {"selector": {"forescale.io/deployment": "chat", "forescale.io/pool": pool}}}


def route(weight_a: int, weight_b: int) -> dict:
    return {"metadata": {"name": "chat", "namespace": "ml"},
            "spec": {"parentRefs": [{"name": "inference-gateway"}],
                     "rules": [{"backendRefs": [{"name": "chat-a", "port": 80, "weight": weight_a},
                                                {"name": "chat-b", "port": 80, "weight": weight_b}]}]}}


@pytest.fixture
async def cluster():
    """A fake API with Services chat-a/chat-b, two ready pods in a, one in b, and route 70/30."""
    api, ups = FakeKubeApi(), Upstreams()
    api.url = await api.start()
    for name, pool in (("chat-a-1", "a"), ("chat-a-2", "a"), ("chat-b-1", "b")):
        api.put(pod(name, pool, await ups.add(name)), "api/v1", "pods")
    api.put(service("chat-a", "a"), "api/v1", "services")
    api.put(service("chat-b", "b"), "api/v1", "services")
    api.put(route(70, 30), ROUTE_ROOT, "httproutes")
    api.upstreams = ups
    yield api
    await ups.close()
    await api.stop()


async def until(check, timeout: float = 10.0) -> None:
    """Wait for the gateway's next refresh to show a change (no fixed sleeps: the CPUs are shared)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "the gateway did not pick up the change"
        await asyncio.sleep(0.05)


async def post_many(url: str, n: int, concurrency: int = 16) -> list[tuple[int, dict, dict]]:
    results: list[tuple[int, dict, dict]] = []
    sem = asyncio.Semaphore(concurrency)

    async def one(session: aiohttp.ClientSession, i: int) -> None:
        async with sem, session.post(url + "/v1/embeddings", json={"input": [f"q{i}"]}) as resp:
            results.append((resp.status, await resp.json(), dict(resp.headers)))

    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(one(session, i) for i in range(n)))
    return results


async def test_splits_by_route_weights_and_balances_within_a_pool(cluster):
    async with Gateway(cluster.url, "ml", "chat", refresh_seconds=0.2) as gw:
        results = await post_many(gw.url, 400)
        assert all(code == 200 for code, _, _ in results)
        per_pod: dict[str, int] = {}
        for _, body, headers in results:
            per_pod[body["pod"]] = per_pod.get(body["pod"], 0) + 1
            assert headers["X-Forescale-Pod"] == body["pod"]
        a = per_pod.get("chat-a-1", 0) + per_pod.get("chat-a-2", 0)
        assert abs(a / 400 - 0.70) <= 0.03, per_pod
        # Least-outstanding with round-robin ties: neither pod of a starves.
        assert min(per_pod["chat-a-1"], per_pod["chat-a-2"]) >= 0.3 * a, per_pod
        assert gw.requests_by_backend() == {"chat-a": a, "chat-b": 400 - a}
        async with aiohttp.ClientSession() as session, session.get(gw.url + "/metrics") as resp:
            text = await resp.text()
        assert f'forescale_gateway_requests_total{{backend="chat-a",code="200"}} {float(a)}' in text
        assert 'forescale_gateway_backend_weight{backend="chat-b"} 30.0' in text
        assert 'forescale_gateway_ready_pods{backend="chat-a"} 2.0' in text


async def test_follows_weight_changes_and_pod_readiness(cluster):
    async with Gateway(cluster.url, "ml", "chat", refresh_seconds=0.1) as gw:
        cluster.put(route(0, 100), ROUTE_ROOT, "httproutes")
        await until(lambda: [b.weight for b in gw.backends] == [0, 100])
        results = await post_many(gw.url, 50)
        assert {body["pod"] for _, body, _ in results} == {"chat-b-1"}
        # b's only pod turns not ready: requests for b get a 503 that names the backend.
        cluster.get("api/v1", "pods", "ml", "chat-b-1")["status"]["conditions"][0]["status"] = "False"
        await until(lambda: gw.backends[1].endpoints == [])
        code, body, _ = (await post_many(gw.url, 1))[0]
        assert code == 503
        assert body["error"]["message"] == "no ready pod for backend chat-b (weight 100)"


async def test_503_when_a_weighted_pool_has_no_ready_pod(cluster):
    del cluster.objects[("api/v1", "pods")][("ml", "chat-b-1")]
    async with Gateway(cluster.url, "ml", "chat", refresh_seconds=0.2) as gw:
        results = await post_many(gw.url, 100)
        codes = [code for code, _, _ in results]
        assert codes.count(503) == 30 and codes.count(200) == 70
        assert all(b["error"]["type"] == "unavailable" for c, b, _ in results if c == 503)


async def test_passes_status_codes_and_retry_after_through(cluster):
    cluster.upstreams.status.update({"chat-a-1": 429, "chat-a-2": 429, "chat-b-1": 429})
    async with Gateway(cluster.url, "ml", "chat") as gw:
        code, body, headers = (await post_many(gw.url, 1))[0]
    assert code == 429 and headers["Retry-After"] == "2" and body["pod"].startswith("chat-")


@pytest.mark.parametrize("change, message", [
    (lambda api: api.objects[(ROUTE_ROOT, "httproutes")].clear(), "HTTPRoute ml/chat not found"),
    (lambda api: api.put(route(0, 0), ROUTE_ROOT, "httproutes"), "HTTPRoute ml/chat has no backend with weight > 0"),
])
async def test_route_problems_answer_503_naming_the_route(cluster, change, message):
    change(cluster)
    async with Gateway(cluster.url, "ml", "chat") as gw:
        code, body, _ = (await post_many(gw.url, 1))[0]
        async with aiohttp.ClientSession() as session, session.get(gw.url + "/healthz") as resp:
            health = await resp.json()
    assert code == 503 and body["error"]["message"] == message
    assert health["route"] == "ml/chat"


async def test_a_refused_connection_is_retried_on_another_pod_of_the_backend(cluster):
    await cluster.upstreams.servers["chat-a-1"].close()
    cluster.put(route(1, 0), ROUTE_ROOT, "httproutes")
    async with Gateway(cluster.url, "ml", "chat", refresh_seconds=30) as gw:
        results = await post_many(gw.url, 10, concurrency=1)
        assert [e.pod for e in gw.backends[0].endpoints] == ["chat-a-2"]  # left out until the next refresh
    assert [code for code, _, _ in results] == [200] * 10
    assert {body["pod"] for _, body, _ in results} == {"chat-a-2"}


async def test_an_upstream_that_is_gone_gives_502(cluster):
    await cluster.upstreams.servers["chat-b-1"].close()
    cluster.put(route(0, 1), ROUTE_ROOT, "httproutes")
    async with Gateway(cluster.url, "ml", "chat") as gw:
        code, body, _ = (await post_many(gw.url, 1))[0]
    assert code == 502 and "chat-b-1" in body["error"]["message"]


@pytest.mark.parametrize("weights, n, expected", [
    ((70, 30), 10, {"a": 7, "b": 3}),
    ((1, 1), 4, {"a": 2, "b": 2}),
    ((100, 0), 5, {"a": 5}),
    ((0, 0), 3, {}),
])
def test_smooth_weighted_round_robin_is_exact(weights, n, expected):
    backends = [Backend("a", weights[0]), Backend("b", weights[1])]
    counts: dict[str, int] = {}
    for _ in range(n):
        chosen = pick_backend(backends)
        if chosen is not None:
            counts[chosen.name] = counts.get(chosen.name, 0) + 1
    assert counts == expected


def test_least_outstanding_then_round_robin():
    backend = Backend("a", 1, [Endpoint("p1", "u1", in_flight=3), Endpoint("p2", "u2"), Endpoint("p3", "u3")])
    assert [pick_endpoint(backend).pod for _ in range(4)] == ["p2", "p3", "p2", "p3"]
    assert pick_endpoint(Backend("b", 1)) is None


@pytest.mark.parametrize("pod_obj, url", [
    ({"metadata": {"annotations": {"forescale.io/port": "8123"}}, "status": {"podIP": "127.0.0.1"}},
     "http://127.0.0.1:8123"),
    ({"spec": {"containers": [{"ports": [{"containerPort": 9000}]}]}, "status": {"podIP": "10.0.0.5"}},
     "http://10.0.0.5:9000"),
    ({"spec": {"containers": [{"name": "x"}]}}, None),
])
def test_pod_url(pod_obj, url):
    assert pod_url(pod_obj) == url


@pytest.mark.parametrize("kwargs, message", [
    ({"api_url": "localhost:1", "namespace": "ml", "route": "chat"}, "must start with http"),
    ({"api_url": "http://x", "namespace": "", "route": "chat"}, "namespace and the name"),
    ({"api_url": "http://x", "namespace": "ml", "route": "chat", "refresh_seconds": 0}, "refresh_seconds"),
])
def test_bad_gateway_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Gateway(**kwargs)


@pytest.mark.parametrize("args, message", [
    (["--api", "nope", "-n", "ml", "--route", "chat"], "must start with http"),
    (["--api", "http://x", "-n", "", "--route", "chat"], "namespace and the name"),
])
def test_command_line_bad_input(capsys, args, message):
    from forescale_devcluster.gateway import main

    assert main(args) == 2
    assert message in capsys.readouterr().err
