"""HTTP routes (aiohttp) around a `ModelServer`."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Awaitable, Callable

from aiohttp import web, web_protocol

from . import admin_bodies
from .completion_stream import completion_events
from .connection_guard import ConnectionGuard, default_max_connections
from .errors import APIError
from .request_parsing import decode_json_object, parse_completion_request, parse_embedding_request
from .server import ModelServer

log = logging.getLogger("forescale.server")
SERVER_KEY = web.AppKey("server", ModelServer)
GUARD_KEY = web.AppKey("connection_guard", ConnectionGuard)


def _json(body: dict | str, status: int = 200, headers: dict | None = None) -> web.Response:
    text = body if isinstance(body, str) else json.dumps(body)
    return web.Response(text=text, status=status, content_type="application/json", headers=headers)


def _error(exc: APIError) -> web.Response:
    return _json(exc.body(), exc.status, exc.headers)


@web.middleware
async def _errors(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Every failure becomes a JSON error; inference requests are counted by code."""
    server = request.app[SERVER_KEY]
    guard = request.app.get(GUARD_KEY)
    if guard is not None:
        guard.request_started(request.transport)
    try:
        response = await handler(request)
    except APIError as exc:
        response = _error(exc)
    except web.HTTPRequestEntityTooLarge:
        response = _error(APIError(413, f"request body is over the {server.limits.max_body_bytes}-byte limit"))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        kind = {404: "not_found_error", 405: "method_not_allowed"}.get(exc.status, "invalid_request_error")
        response = _error(APIError(exc.status, f"{exc.reason}: {request.method} {request.path}", kind))
    except Exception:  # noqa: BLE001 - a bug must not take the server down or leak a traceback to the client
        log.exception("internal error on %s %s", request.method, request.path)
        response = _error(APIError(500, "internal server error", "server_error"))
    finally:
        if guard is not None:
            guard.request_finished(request.transport)
    if response.status == 408:
        response.force_close()  # the rest of a late body may still come: do not read it as the next request
    if request.path.startswith("/v1/"):
        server.metrics.observe_request(server.backend.precision, response.status)
    return response


async def _body(request: web.Request, server: ModelServer) -> bytes:
    declared = request.content_length
    if declared is not None and declared > server.limits.max_body_bytes:
        raise APIError(413, f"request body is {declared} bytes; the limit is {server.limits.max_body_bytes}")
    timeout = server.config.connections.body_timeout_s
    try:
        return await asyncio.wait_for(request.read(), timeout)
    except asyncio.TimeoutError:
        raise APIError(408, f"request body did not arrive within {timeout:g} s") from None
    except web_protocol.RequestPayloadError as exc:
        # e.g. a body that is not gzip under `Content-Encoding: gzip`: the client's fault, not ours
        detail = str(exc).replace("\n", " ").split("message:", 1)[-1].strip()
        raise APIError(400, f"request body could not be read: {detail}") from None


async def embeddings(request: web.Request) -> web.Response:
    server = request.app[SERVER_KEY]
    req = parse_embedding_request(await _body(request, server), server.limits)
    return _json(await server.embeddings(req))


async def completions(request: web.Request) -> web.StreamResponse:
    server = request.app[SERVER_KEY]
    req = parse_completion_request(await _body(request, server), server.limits)
    result = await server.completions(req)
    if not req.stream:
        return _json(result)
    # Errors come before the stream opens, so they stay plain JSON errors with their status.
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    for event in completion_events(result, req.include_usage):
        await response.write(event)
    await response.write_eof()
    return response


async def models(request: web.Request) -> web.Response:
    return _json(request.app[SERVER_KEY].models())


async def model(request: web.Request) -> web.Response:
    return _json(request.app[SERVER_KEY].model_card(request.match_info["model"]))


async def healthz(request: web.Request) -> web.Response:
    return _json({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    server = request.app[SERVER_KEY]
    if server.ready:
        return _json({"status": "ready", "model": server.backend.model_name, "precision": server.backend.precision, "emulated": server.backend.emulated,
                      "variant": server.variant_name()})
    return _json({"status": "not ready", "reason": server.load_error or "loading"}, 503)


async def metrics(request: web.Request) -> web.Response:
    server = request.app[SERVER_KEY]
    return web.Response(body=server.metrics.exposition(), content_type="text/plain", charset="utf-8", headers={"X-Content-Version": "0.0.4"})


def _admin(handler: Callable[[ModelServer, dict], Awaitable[dict] | dict], faults: bool = False):
    """Token check (404 when the admin API is off, 401 on a bad token), then the JSON body."""

    async def route(request: web.Request) -> web.Response:
        server = request.app[SERVER_KEY]
        if not server.token.enabled:
            raise APIError(404, "the admin API is off: set FORESCALE_ADMIN_TOKEN_FILE or FORESCALE_ADMIN_TOKEN", "not_found_error")
        if not server.token.check(request.headers.get("Authorization")):
            raise APIError(401, "missing or invalid bearer token", "authentication_error", {"WWW-Authenticate": "Bearer"})
        if faults and not server.config.enable_faults:
            raise APIError(404, "fault injection is off: start the server with --enable-faults", "not_found_error")
        body = decode_json_object(await _body(request, server), server.limits)
        result = handler(server, body)
        if hasattr(result, "__await__"):
            result = await result
        return _json(result)

    return route


def _precision(server: ModelServer, body: dict):
    return server.switch_precision(admin_bodies.parse_precision(body))


def _warmup(server: ModelServer, body: dict):
    return server.warmup(admin_bodies.parse_warmup(body, server.limits.max_items, server.limits.max_input_chars))


def _log_level(server: ModelServer, body: dict):
    req = admin_bodies.parse_log_level(body)
    return server.set_log_level(req.level, req.seconds)


def _profile(server: ModelServer, body: dict):
    requests, timeout = admin_bodies.parse_profile(body)
    return server.profile(requests, timeout)


def _model(server: ModelServer, body: dict):
    return server.model_info()


def _faults(server: ModelServer, body: dict):
    return server.fault(admin_bodies.parse_fault(body, server.config.max_leak_mb))


def build_app(server: ModelServer) -> web.Application:
    """The aiohttp application; starts and stops the server with it."""
    app = web.Application(middlewares=[_errors], client_max_size=server.limits.max_body_bytes)
    app[SERVER_KEY] = server
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/v1/models", models)
    # `{model:.+}`: ids such as sentence-transformers/all-MiniLM-L6-v2 hold a slash
    app.router.add_get("/v1/models/{model:.+}", model)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/admin/precision", _admin(_precision))
    app.router.add_post("/admin/warmup", _admin(_warmup))
    app.router.add_post("/admin/log-level", _admin(_log_level))
    app.router.add_post("/admin/profile", _admin(_profile))
    app.router.add_post("/admin/faults", _admin(_faults, faults=True))
    app.router.add_post("/admin/model", _admin(_model))

    async def on_startup(_: web.Application) -> None:
        await server.start()

    async def on_cleanup(_: web.Application) -> None:
        await server.stop()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


class GuardedSite(web.TCPSite):
    """A TCP site whose connections go through a `ConnectionGuard` (cap at accept, request-head timeout)."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, guard: ConnectionGuard) -> None:
        super().__init__(runner, host, port, shutdown_timeout=10)
        self.guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site, so runner.cleanup() stops it
        self._server = await asyncio.get_running_loop().create_server(self.guard, self._host, self._port, backlog=self._backlog)
        self._bound_port = self._server.sockets[0].getsockname()[1] if self._server.sockets else self._port


async def start_serving(server: ModelServer, host: str, port: int) -> tuple[web.AppRunner, GuardedSite]:
    """Listen on host:port behind a `ConnectionGuard`; `site.port` is the bound port."""
    limits = server.config.connections
    app = build_app(server)
    # lingering_time: after an early answer (a 408, a 413) aiohttp reads the rest of the body
    # for this long before closing; its 10 s default would let a late body hold the slot on.
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=10, keepalive_timeout=limits.keepalive_timeout_s,
                           lingering_time=1.0)
    guard = ConnectionGuard(lambda: runner.server(), max_connections=limits.max_connections or default_max_connections(),
                            header_timeout_s=limits.header_timeout_s)
    app[GUARD_KEY] = guard  # before setup: the app is frozen after it
    await runner.setup()
    site = GuardedSite(runner, host, port, guard)
    await site.start()
    return runner, site


async def run(server: ModelServer, host: str, port: int) -> None:
    """Serve until cancelled (SIGINT/SIGTERM are handled by the caller)."""
    runner, site = await start_serving(server, host, port)
    log.info("listening on http://%s:%d (started in %.2f s; at most %d connections, %g s for a request head)",
             host, port, time.perf_counter() - _T0, site.guard.max_connections, site.guard.header_timeout_s)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


_T0 = time.perf_counter()
