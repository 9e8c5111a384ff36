"""Serving benchmarks for the model server on the real all-MiniLM-L6-v2.

    .venv/bin/python bench/server_throughput.py [--seconds 8] [--only batching|cache|mix]

1. Dynamic batching vs one request at a time (`--max-batch 1`) vs a plain
   one-request-per-call handler around sentence-transformers' `encode`, under
   the same open-loop (Poisson) offered loads, one input per request, cache off,
   distinct inputs. Reports achieved rate and p99 per step, and per server the
   highest offered rate whose p99 stays under the SLO.
2. The cache-hit path: p99 of `ModelServer.embeddings` in-process for a cached
   input, and of the HTTP round trip.
3. Quantization and the cache together vs each alone: closed-loop clients
   replaying a repeated mix of real sentences (Zipf s=1.1 over the 300
   calibration sentences: real text, synthetic repetition), throughput relative
   to fp32 without cache.

The load generator runs on the same 2 shared cores as the server, as do other
jobs: absolute figures are noisy and pessimistic; compare the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from forescale_server.calibration import calibration_sentences

TOKEN = "bench"
#: torch threads in every server (--threads); 1 by default: on 2 cores shared
#: with other jobs, two OpenMP threads get descheduled and barrier waits dominate
THREADS = 1
SLO_MS = 250.0

PLAIN_ST_SERVER = r'''
import asyncio, sys
from concurrent.futures import ThreadPoolExecutor
import torch
from aiohttp import web
from sentence_transformers import SentenceTransformer
from forescale_server.model_files import minilm_dir
torch.set_num_threads(int(sys.argv[2]))
model = SentenceTransformer(str(minilm_dir()), device="cpu")
pool = ThreadPoolExecutor(1)

async def embed(request):
    body = await request.json()
    vectors = await asyncio.get_running_loop().run_in_executor(pool, lambda: model.encode(body["input"]).tolist())
    return web.json_response({"data": [{"embedding": v, "index": i} for i, v in enumerate(vectors)]})

async def ready(request):
    return web.json_response({"status": "ready"})

app = web.Application()
app.router.add_post("/v1/embeddings", embed)
app.router.add_get("/readyz", ready)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
'''


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_forescale(*flags: str) -> tuple[subprocess.Popen, str]:
    port = _port()
    env = dict(os.environ, FORESCALE_ADMIN_TOKEN=TOKEN)
    proc = subprocess.Popen([sys.executable, "-m", "forescale_cli.main", "serve", "--port", str(port), "--threads", str(THREADS), "--log-level", "WARNING", *flags],
                            env=env, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def start_plain() -> tuple[subprocess.Popen, str]:
    port = _port()
    proc = subprocess.Popen([sys.executable, "-c", PLAIN_ST_SERVER, str(port), str(THREADS)], stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


async def wait_ready(session: aiohttp.ClientSession, base: str) -> None:
    for _ in range(900):
        try:
            async with session.get(base + "/readyz") as r:
                if r.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError(f"{base} never became ready")


def p99(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(0.99 * len(values)))] if values else float("nan")


async def open_loop(session, base: str, rate: float, seconds: float, tag: str) -> dict:
    """Poisson arrivals at `rate` for `seconds`; one distinct input per request."""
    texts = calibration_sentences()
    rng = random.Random(hash(tag) & 0xFFFF)
    latencies, errors, tasks = [], 0, []

    async def one(i: int):
        nonlocal errors
        started = time.perf_counter()
        try:
            async with session.post(base + "/v1/embeddings", json={"input": [f"{texts[i % len(texts)]} {abs(hash(tag)) % 1000}{i}"]}) as r:
                await r.read()
                if r.status != 200:
                    errors += 1
                    return
        except aiohttp.ClientError:
            errors += 1
            return
        latencies.append((time.perf_counter() - started) * 1000)

    begin = time.perf_counter()
    t, i = 0.0, 0
    while t < seconds:
        delay = begin + t - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(i)))
        i += 1
        t += rng.expovariate(rate)
    sent_over = time.perf_counter() - begin
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - begin
    # Poisson counts vary: "offered" is what was really sent per second.
    return {"offered": len(tasks) / sent_over, "achieved": len(latencies) / elapsed, "p99_ms": p99(latencies), "errors": errors,
            "sent": len(tasks), "done": len(latencies)}


async def batching_comparison(seconds: float, rates: list[float]) -> None:
    servers = {
        "forescale (dynamic batching)": lambda: start_forescale("--cache-policy", "none", "--max-batch", "32", "--max-wait-ms", "5"),
        "forescale --max-batch 1": lambda: start_forescale("--cache-policy", "none", "--max-batch", "1"),
        "plain sentence-transformers": start_plain,
    }
    best = {}
    print(f"\n1. same offered load, one input per request, cache off; {seconds:.0f} s per step; SLO p99 {SLO_MS:.0f} ms")
    print(f"{'server':<30}{'offered':>9}{'achieved':>10}{'p99 ms':>10}{'errors':>8}")
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for name, start in servers.items():
            proc, base = start()
            try:
                await wait_ready(session, base)
                await open_loop(session, base, 5, 1.0, "warm")
                best[name] = 0.0
                for rate in rates:
                    step = await open_loop(session, base, rate, seconds, f"{name}-{rate}")
                    print(f"{name:<30}{step['offered']:>9.0f}{step['achieved']:>10.1f}{step['p99_ms']:>10.1f}{step['errors']:>8}")
                    # Sustained: everything sent was served, without errors, within the SLO at p99.
                    if step["p99_ms"] <= SLO_MS and step["errors"] == 0 and step["done"] == step["sent"]:
                        best[name] = max(best[name], step["offered"])
                    elif step["p99_ms"] > 4 * SLO_MS:
                        break  # far past the knee: higher rates only queue
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    ref = best["forescale --max-batch 1"] or float("nan")
    print(f"\nhighest offered rate served with p99 <= {SLO_MS:.0f} ms (ratio to one-at-a-time):")
    for name, value in best.items():
        print(f"  {name:<30}{value:>8.1f} req/s{value / ref:>8.2f}x")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def closed_loop_comparison(clients: int, requests: int, rounds: int = 2) -> None:
    """The same `clients` concurrent callers against each server (each sends its
    next request when the last one returns), servers alternated for `rounds`
    rounds: throughput, p99, and the server process's CPU per request, which
    neighbours on the CPU disturb far less than wall time."""
    texts = calibration_sentences()
    servers = {
        "forescale (dynamic batching)": lambda: start_forescale("--cache-policy", "none", "--max-batch", "32", "--max-wait-ms", "5"),
        "forescale --max-batch 1": lambda: start_forescale("--cache-policy", "none", "--max-batch", "1"),
        "plain sentence-transformers": start_plain,
    }
    rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name in servers}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for r in range(rounds):
            for name, start in servers.items():
                proc, base = start()
                try:
                    await wait_ready(session, base)
                    counter = iter(range(requests))
                    latencies: list[float] = []

                    async def client():
                        for i in counter:
                            started = time.perf_counter()
                            async with session.post(base + "/v1/embeddings", json={"input": [f"{texts[i % len(texts)]} {r}{i}"]}) as resp:
                                await resp.read()
                            latencies.append((time.perf_counter() - started) * 1000)

                    cpu0, started = _cpu_seconds(proc.pid), time.perf_counter()
                    await asyncio.gather(*(client() for _ in range(clients)))
                    elapsed = time.perf_counter() - started
                    rows[name].append((requests / elapsed, p99(latencies), (_cpu_seconds(proc.pid) - cpu0) / requests * 1000))
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
    best = {name: max(v, key=lambda row: row[0]) for name, v in rows.items()}
    ref = best["forescale --max-batch 1"]
    print(f"\n1b. closed loop: {clients} concurrent clients, {requests} distinct one-input requests, cache off; best of {rounds} alternated rounds")
    for name, (rate, tail, cpu) in best.items():
        print(f"  {name:<30}{rate:>8.1f} req/s{rate / ref[0]:>7.2f}x   p99 {tail:8.1f} ms   server CPU {cpu:6.2f} ms/request ({ref[2] / cpu:.2f}x less)")


async def cache_hit_path() -> None:
    from forescale_server.admin_token import AdminToken
    from forescale_server.backend import make_backend
    from forescale_server.config import ServerConfig
    from forescale_server.request_parsing import EmbeddingRequest
    from forescale_server.server import ModelServer

    server = ModelServer(make_backend("minilm", "fp32", None, threads=THREADS), ServerConfig(), AdminToken(None))
    await server.start()
    await server.wait_ready()
    req = EmbeddingRequest(inputs=["Beautiful is better than ugly."], model=None)
    await server.embeddings(req)  # fills the cache
    times = []
    for _ in range(2000):
        started = time.perf_counter()
        await server.embeddings(req)
        times.append((time.perf_counter() - started) * 1000)
    await server.stop()
    proc, base = start_forescale()
    http_times = []
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, base)
            body = {"input": ["Beautiful is better than ugly."]}
            async with session.post(base + "/v1/embeddings", json=body) as r:
                await r.read()
            for _ in range(1000):
                started = time.perf_counter()
                async with session.post(base + "/v1/embeddings", json=body) as r:
                    await r.read()
                http_times.append((time.perf_counter() - started) * 1000)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print("\n2. cache-hit path (goal p99 < 1 ms)")
    print(f"  in-process ModelServer.embeddings: p50 {statistics.median(times):.3f} ms, p99 {p99(times):.3f} ms")
    print(f"  HTTP round trip (client on the same cores): p50 {statistics.median(http_times):.3f} ms, p99 {p99(http_times):.3f} ms")


async def quant_and_cache(requests: int, clients: int) -> None:
    texts = calibration_sentences()
    rng = random.Random(0)
    weights = [1 / (i + 1) ** 1.1 for i in range(len(texts))]
    mix = rng.choices(range(len(texts)), weights, k=requests)
    configs = {"fp32, no cache": ("fp32", "none"), "int8, no cache": ("int8", "none"), "fp32 + cache": ("fp32", "lru"), "int8 + cache": ("int8", "lru")}
    results = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for name, (precision, policy) in configs.items():
            proc, base = start_forescale("--precision", precision, "--cache-policy", policy)
            try:
                await wait_ready(session, base)
                queue = list(mix)
                latencies = []

                async def client():
                    while queue:
                        idx = queue.pop()
                        started = time.perf_counter()
                        async with session.post(base + "/v1/embeddings", json={"input": [texts[idx]]}) as r:
                            await r.read()
                        latencies.append((time.perf_counter() - started) * 1000)

                started = time.perf_counter()
                await asyncio.gather(*(client() for _ in range(clients)))
                results[name] = (requests / (time.perf_counter() - started), p99(latencies))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    distinct = len(set(mix))
    print(f"\n3. quantization and cache on a repeated real mix ({requests} requests, {distinct} distinct sentences, {clients} closed-loop clients)")
    base_rate = results["fp32, no cache"][0]
    for name, (rate, tail) in results.items():
        print(f"  {name:<18}{rate:>8.1f} req/s{rate / base_rate:>7.2f}x   p99 {tail:7.1f} ms")
    q, c, both = (results[k][0] / base_rate for k in ("int8, no cache", "fp32 + cache", "int8 + cache"))
    print(f"  product of the separate gains {q * c:.2f}x vs measured together {both:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description="model-server throughput benchmarks")
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds per offered-load step")
    parser.add_argument("--rates", default="10,20,40,80,120,160,240", help="offered loads, req/s")
    parser.add_argument("--only", choices=["batching", "closed", "cache", "mix"], default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each server")
    args = parser.parse_args()
    global THREADS
    THREADS = args.threads
    rates = [float(r) for r in args.rates.split(",")]
    if args.only in (None, "batching"):
        asyncio.run(batching_comparison(args.seconds, rates))
    if args.only in (None, "closed"):
        asyncio.run(closed_loop_comparison(32, 600))
    if args.only in (None, "cache"):
        asyncio.run(cache_hit_path())
    if args.only in (None, "mix"):
        asyncio.run(quant_and_cache(1500, 16))


if __name__ == "__main__":
    main()
