"""A tiny stand-in for the model server (DESIGN.md §4) used by the stress
tests: OpenAI embeddings and completions with a fixed service time on a few
workers, a result cache, and the admin endpoints the stress tool calls.

Run as a script: `python fake_server.py --port 0 [--token-file F]
[--enable-faults]`; it prints `PORT <n>` on stdout once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from aiohttp import web


class State:
    def __init__(self, service_ms: float, workers: int, token: str | None, faults: bool):
        self.service_ms = service_ms
        self.sem = asyncio.Semaphore(workers)
        self.token = token
        self.faults_enabled = faults
        self.extra_ms = 0.0
        self.extra_until = 0.0
        self.slowdown = 1.0
        self.slow_until = 0.0
        self.precision_factor = 1.0
        self.cache: set[str] = set()
        self.leak: list[bytes] = []
        self.calls: list[tuple[str, dict]] = []
        self.flaky = 0
        self.log_file: str | None = None
        #: a cold start: service time x cold_factor for cold_seconds after the first request
        self.cold_seconds, self.cold_factor = 0.0, 1.0
        self.first_request: float | None = None

    def cost_ms(self, key: str) -> float:
        now = time.monotonic()
        ms = self.service_ms * self.precision_factor
        if self.first_request is None:
            self.first_request = now
        if now < self.first_request + self.cold_seconds:
            ms *= self.cold_factor
        if key in self.cache:
            ms *= 0.1  # a cache hit skips most of the compute
        if now < self.slow_until:
            ms *= self.slowdown
        if now < self.extra_until:
            ms += self.extra_ms
        return ms


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=status)


async def _serve(request: web.Request, kind: str) -> web.Response:
    state: State = request.app["state"]
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "body is not JSON")
    text = json.dumps(body.get("input") if kind == "embeddings" else body.get("prompt"))
    async with state.sem:
        await asyncio.sleep(state.cost_ms(text) / 1000.0)
    state.cache.add(text)
    if kind == "embeddings":
        return web.json_response({"object": "list", "data": [{"object": "embedding", "embedding": [0.1, 0.2], "index": 0}],
                                  "model": body.get("model")})
    return web.json_response({"object": "text_completion", "choices": [{"text": "ok", "index": 0}]})


async def embeddings(request: web.Request) -> web.Response:
    return await _serve(request, "embeddings")


async def completions(request: web.Request) -> web.Response:
    return await _serve(request, "completions")


async def not_openai(request: web.Request) -> web.Response:
    return web.json_response({"hello": "world"})


async def flaky(request: web.Request) -> web.Response:
    """Every second request fails with 503."""
    state: State = request.app["state"]
    state.flaky += 1
    if state.flaky % 2 == 0:
        return _error(503, "overloaded")
    return await _serve(request, "embeddings")


async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def _admin(handler):
    async def wrapped(request: web.Request) -> web.Response:
        state: State = request.app["state"]
        if state.token is None:
            return _error(404, "admin API is off")
        if request.headers.get("Authorization") != f"Bearer {state.token}":
            return _error(401, "bad token")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "body is not JSON")
        state.calls.append((request.path, body))
        if state.log_file:
            with open(state.log_file, "a") as log:
                log.write(json.dumps([request.path, body]) + "\n")
        return handler(state, body)

    return wrapped


def _faults(state: State, body: dict) -> web.Response:
    if not state.faults_enabled:
        return _error(404, "faults are off")
    now = time.monotonic()
    if "latency_ms" in body and "seconds" in body:
        state.extra_ms, state.extra_until = float(body["latency_ms"]), now + float(body["seconds"])
    elif "slowdown" in body and "seconds" in body:
        state.slowdown, state.slow_until = float(body["slowdown"]), now + float(body["seconds"])
    elif body.get("cache_flush") is True:
        state.cache.clear()
    elif "leak_mb" in body:
        state.leak.append(bytearray(int(body["leak_mb"]) * 1024 * 1024))
    else:
        return _error(400, "unknown fault")
    return web.json_response({"ok": True})


def _precision(state: State, body: dict) -> web.Response:
    factors = {"fp32": 1.5, "fp16": 1.0, "bf16": 1.0, "int8": 0.5}
    if body.get("precision") not in factors:
        return _error(400, "precision must be one of fp32, fp16, bf16, int8")
    state.precision_factor = factors[body["precision"]]
    state.cache.clear()
    return web.json_response({"precision": body["precision"]})


def _warmup(state: State, body: dict) -> web.Response:
    if "top" not in body and "inputs" not in body:
        return _error(400, "give inputs or top")
    return web.json_response({"warmed": body.get("top", 0)})


def make_app(service_ms: float = 2.0, workers: int = 4, token: str | None = None, faults: bool = False) -> web.Application:
    app = web.Application()
    app["state"] = State(service_ms, workers, token, faults)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/plain/v1/embeddings", not_openai)
    app.router.add_post("/flaky/v1/embeddings", flaky)
    app.router.add_get("/healthz", health)
    app.router.add_get("/readyz", health)
    app.router.add_post("/admin/faults", _admin(_faults))
    app.router.add_post("/admin/precision", _admin(_precision))
    app.router.add_post("/admin/warmup", _admin(_warmup))
    return app


async def _main(args: argparse.Namespace) -> None:
    token = open(args.token_file).read().strip() if args.token_file else None
    app = make_app(args.service_ms, args.workers, token, args.enable_faults)
    app["state"].log_file = args.log_file
    app["state"].cold_seconds, app["state"].cold_factor = args.cold_seconds, args.cold_factor
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--service-ms", type=float, default=2.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--token-file")
    parser.add_argument("--enable-faults", action="store_true")
    parser.add_argument("--log-file", help="append each accepted admin call here as JSON")
    parser.add_argument("--cold-seconds", type=float, default=0.0, help="a cold start this long after the first request")
    parser.add_argument("--cold-factor", type=float, default=1.0, help="service time multiplier during the cold start")
    try:
        asyncio.run(_main(parser.parse_args()))
    except KeyboardInterrupt:
        sys.exit(0)
