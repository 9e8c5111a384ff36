"""The operator's admin calls to model servers: endpoints, readiness, token, failures."""

from __future__ import annotations

import pytest
from aiohttp import web

from forescale_operator.admin_client import AdminClient, admin_port_problem, pod_endpoint, pod_is_ready, summarize


def _pod(ip="10.0.0.5", ports=None, annotations=None, phase="Running", ready="True", deleting=False):
    meta = {"name": "chat-a-x", "annotations": annotations or {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"containers": [{"name": "server", "ports": ports if ports is not None else [{"name": "http", "containerPort": 8000}]}]},
        "status": {"phase": phase, "podIP": ip, "conditions": [{"type": "Ready", "status": ready}]},
    }


@pytest.mark.parametrize(
    "pod, endpoint",
    [
        (_pod(), "http://10.0.0.5:8000"),
        (_pod(ports=[{"name": "metrics", "containerPort": 9000}, {"name": "http", "containerPort": 8080}]), "http://10.0.0.5:8080"),
        (_pod(ports=[{"containerPort": 7000}]), "http://10.0.0.5:7000"),
        (_pod(annotations={"forescale.io/admin-port": "9999"}), "http://10.0.0.5:9999"),
        (_pod(ip="fd00::5"), "http://[fd00::5]:8000"),
        (_pod(ip=None), None),
        (_pod(ports=[]), None),
    ],
)
def test_pod_endpoint(pod, endpoint):
    assert pod_endpoint(pod) == endpoint


@pytest.mark.parametrize("value,problem", [
    ("9999", False), (" 8000 ", False), (8000, False), ("http", True), ("-1", True), ("0", True), ("65536", True),
    ("", True), ("80.5", True), ("１２３", True),
])
def test_a_bad_admin_port_annotation_is_skipped_not_raised(value, problem):
    """Issue 19, defect 6: `forescale.io/admin-port: "http"` raised ValueError on every tick."""
    pod = _pod(annotations={"forescale.io/admin-port": value})
    assert (admin_port_problem(pod) is not None) is problem
    assert (pod_endpoint(pod) is None) is problem


@pytest.mark.parametrize(
    "pod, ready",
    [(_pod(), True), (_pod(ready="False"), False), (_pod(phase="Pending"), False), (_pod(deleting=True), False)],
)
def test_pod_is_ready(pod, ready):
    assert pod_is_ready(pod) is ready


@pytest.fixture
async def admin_server():
    seen = []

    async def precision(request: web.Request):
        seen.append((request.headers.get("Authorization"), await request.json()))
        if request.headers.get("Authorization") != "Bearer s3cret":
            return web.json_response({"error": {"message": "bad token", "type": "unauthorized"}}, status=401)
        return web.json_response({"precision": "int8", "agreement": 0.99})

    app = web.Application()
    app.router.add_post("/admin/precision", precision)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


async def test_post_all_reaches_every_pod_and_reports_failures(admin_server):
    url, seen = admin_server
    client = AdminClient("s3cret", timeout=2)
    results = await client.post_all([url, url, "http://127.0.0.1:9"], "/admin/precision", {"precision": "int8"})
    assert [r.ok for r in results] == [True, True, False]
    assert results[0].body == {"precision": "int8", "agreement": 0.99}
    assert seen[0] == ("Bearer s3cret", {"precision": "int8"})
    text = summarize(results)
    assert text.startswith("2/3 pods; http://127.0.0.1:9:")
    assert "s3cret" not in text and all("s3cret" not in r.detail for r in results)


async def test_wrong_token_is_reported_not_raised(admin_server):
    url, _ = admin_server
    results = await AdminClient("wrong").post_all([url], "/admin/precision", {"precision": "int8"})
    assert (results[0].ok, results[0].status, results[0].detail) == (False, 401, "bad token")


async def test_without_a_token_nothing_is_sent(admin_server):
    url, seen = admin_server
    results = await AdminClient(None).post_all([url], "/admin/precision", {"precision": "int8"})
    assert not results[0].ok and "FORESCALE_ADMIN_TOKEN_SECRET" in results[0].detail
    assert seen == []
