"""`forescale variants report DIR`: the fp32 teacher and every variant in DIR,
each served by its own `forescale serve` process, measured side by side.

- Quality: embeddings of the held-out sentences fetched through each server
  (this is also the warm-up) against the teacher server's, as mean cosine and
  the Spearman correlation of all pairwise similarities.
- Speed: rounds; in each round every server in turn (the order rotates) gets
  sequential requests of 1 input and of 32 distinct inputs, cache off. p50 and
  p99 pool the request latencies of all rounds; throughput is inputs per
  second of the batch-32 requests in a server's best round, and the speed-up
  divides it by the teacher's.
- Stages: over the batch-32 requests of all rounds, the server's own mean
  per-stage times (from /metrics) and the rest of the client's time (HTTP and
  JSON on both sides). All rounds, not the last: the replay's lighter B takes
  the student's compute ratio from here, and one round's four requests moved
  it from 1.25 to 1.59 between runs on the shared cores.
- A built manifest whose quality differs from the re-measurement by more than
  `QUALITY_TOLERANCE` gets a warning.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .embedding_quality import quality
from .variant_manifest import MANIFEST, RECIPES, VariantError, read_manifest

TOKEN = "variants-report"
#: manifest and re-measured quality may differ by this much (both are deterministic
#: CPU computations; the server rounds vectors to 7 decimals and thread counts
#: change summation order, which moves cosines by ~1e-6)
QUALITY_TOLERANCE = 0.002
#: the seeds' figures, beside the measured rows
ANCHORS = {
    "int8": "TensorRT BERT-base A100: int8 ~0.6x fp16 time, 1.67x (NVIDIA's TensorRT BERT benchmark)",
    "pruned": "BERT-base, 20% heads: 22% lower latency (1.28x), 18% less compute, GLUE -1.2 points",
    "distilled": "12 -> 4 layers: 4x faster, -2.1% accuracy",
    "distilled-int8": "no seed figure for the combination",
    "fused": "graph optimisation on BERT: 15% lower latency (1.18x)",
}
STAGES = ("queue", "preprocess", "compute", "postprocess", "total")


class ReportError(ValueError):
    pass


@dataclass
class Served:
    name: str
    recipe: str
    args: list[str]
    manifest: object = None
    port: int = 0
    proc: subprocess.Popen | None = None
    b1: list[float] = field(default_factory=list)
    b32: list[float] = field(default_factory=list)
    b32_rounds: list[float] = field(default_factory=list)
    #: per stage, the server's seconds and request count over the batch-32 requests of all rounds
    stage_time: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    embeddings: np.ndarray | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict, token: str | None = None) -> dict:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def discover(directory: Path, teacher: str) -> list[Served]:
    """One `Served` per finished variant directory, in recipe order; bad ones refused naming the file."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ReportError(f"{directory}: no such directory")
    found = []
    for sub in sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            manifest = read_manifest(sub, teacher=teacher)
        except VariantError as exc:
            raise ReportError(str(exc)) from None
        found.append(Served(manifest.name, manifest.recipe, ["--model", teacher, "--model-path", str(sub)], manifest))
    if not found:
        raise ReportError(f"{directory}: no variant directories (sub-directories with a {MANIFEST}); run `forescale variants build --out {directory}`")
    order = {r: i for i, r in enumerate(RECIPES)}
    return sorted(found, key=lambda s: (order.get(s.recipe, 99), s.name))


def quality_warnings(name: str, built: dict, measured: dict, tolerance: float = QUALITY_TOLERANCE) -> list[str]:
    """One line per quality figure of the manifest that the re-measurement contradicts."""
    out = []
    for key in ("mean_cosine", "spearman"):
        if key not in built:
            out.append(f"{name}: {MANIFEST} has no {key}; re-measured {measured[key]:.4f}")
        elif abs(float(built[key]) - measured[key]) > tolerance:
            out.append(f"{name}: {MANIFEST} says {key} {float(built[key]):.4f}, re-measured {measured[key]:.4f} "
                       f"(more than {tolerance} apart: the files or the code changed since the build)")
    return out


def _start(served: Served, threads: int) -> None:
    served.port = _port()
    env = dict(os.environ, FORESCALE_ADMIN_TOKEN=TOKEN)
    env.pop("FORESCALE_PRECISION", None)
    served.proc = subprocess.Popen(
        [sys.executable, "-m", "forescale_cli.main", "serve", *served.args, "--port", str(served.port), "--threads", str(threads),
         "--cache-policy", "none", "--log-level", "WARNING", "--max-items", "64"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_ready(served: Served, deadline: float) -> None:
    while time.monotonic() < deadline:
        if served.proc.poll() is not None:
            raise ReportError(f"server for {served.name} exited: {served.proc.stderr.read()[-2000:]}")
        try:
            with urllib.request.urlopen(served.base + "/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise ReportError(f"server for {served.name} was not ready in time")


def _embed(served: Served, texts: list[str]) -> np.ndarray:
    rows = []
    for start in range(0, len(texts), 32):
        data = _post(served.base + "/v1/embeddings", {"input": texts[start:start + 32]})["data"]
        rows.extend(d["embedding"] for d in sorted(data, key=lambda d: d["index"]))
    return np.asarray(rows, dtype=np.float64)


_STAGE_LINE = re.compile(r'^forescale_request_duration_seconds_(sum|count)\{([^}]*)\} ([0-9.eE+-]+)$')


def _stage_totals(served: Served) -> dict[str, tuple[float, float]]:
    with urllib.request.urlopen(served.base + "/metrics", timeout=30) as r:
        text = r.read().decode()
    out: dict[str, list[float]] = {}
    for line in text.splitlines():
        m = _STAGE_LINE.match(line)
        if not m:
            continue
        stage = re.search(r'stage="([^"]+)"', m.group(2)).group(1)
        pair = out.setdefault(stage, [0.0, 0.0])
        pair[0 if m.group(1) == "sum" else 1] += float(m.group(3))
    return {k: (v[0], v[1]) for k, v in out.items()}


def _timed_requests(served: Served, chunks: list[list[str]]) -> tuple[list[float], float]:
    latencies = []
    started = time.perf_counter()
    for chunk in chunks:
        t0 = time.perf_counter()
        _post(served.base + "/v1/embeddings", {"input": chunk})
        latencies.append(time.perf_counter() - t0)
    return latencies, time.perf_counter() - started


def stage_means(stage_time: dict[str, list[float]], latencies: list[float]) -> dict[str, float]:
    """Mean ms per request of each server stage (seconds and counts summed over the rounds), and
    `http_and_json`: the client's mean latency less the server's total (where both are known)."""
    means = {k: 1000.0 * seconds / max(1.0, count) for k, (seconds, count) in stage_time.items()}
    if latencies and "total" in means:
        means["http_and_json"] = 1000.0 * float(np.mean(latencies)) - means["total"]
    return means


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def measure_report(directory: Path, teacher: str = "minilm", rounds: int = 3, threads: int = 1, n_b1: int = 24, n_b32: int = 4,
                   say: Callable[[str], None] = print) -> dict:
    from .variant_text import eval_sentences

    servers = [Served("fp32", "teacher", ["--model", teacher, "--precision", "fp32"])] + discover(directory, teacher)
    texts = eval_sentences()
    if len(texts) < 32:
        raise ReportError("too few held-out sentences to measure batch 32")
    try:
        for s in servers:
            _start(s, threads)
        deadline = time.monotonic() + 900
        for s in servers:
            _wait_ready(s, deadline)
            s.info = _post(s.base + "/admin/model", {}, TOKEN)
        say(f"{len(servers)} servers ready: {', '.join(s.name for s in servers)}")
        for s in servers:  # the quality fetch is every server's warm-up too
            s.embeddings = _embed(s, texts)
        for r in range(rounds):
            order = servers[r % len(servers):] + servers[:r % len(servers)]
            for s in order:
                tag = f" ({r})"  # distinct inputs per round; the same inputs for every server
                b1 = [[texts[(i * 7 + r) % len(texts)] + tag] for i in range(n_b1)]
                b32 = [[t + tag for t in texts[(i * 32 + r) % (len(texts) - 32):][:32]] for i in range(n_b32)]
                s.b1 += _timed_requests(s, b1)[0]
                before = _stage_totals(s)
                lat, elapsed = _timed_requests(s, b32)
                after = _stage_totals(s)
                s.b32 += lat
                s.b32_rounds.append(32 * n_b32 / elapsed)
                for k in STAGES:
                    if k not in after:
                        continue
                    seconds, count = before.get(k, (0.0, 0.0))
                    total = s.stage_time.setdefault(k, [0.0, 0.0])
                    total[0] += after[k][0] - seconds
                    total[1] += after[k][1] - count
            say(f"round {r + 1}/{rounds} done")
    finally:
        for s in servers:
            if s.proc is not None and s.proc.poll() is None:
                s.proc.terminate()
        for s in servers:
            if s.proc is not None:
                try:
                    s.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    s.proc.kill()
    reference = servers[0].embeddings
    base_rps = max(servers[0].b32_rounds)
    rows, warnings = [], []
    for s in servers:
        q = quality(reference, s.embeddings)
        row = {
            "name": s.name, "recipe": s.recipe, "precision": s.info.get("precision"), "size_bytes": s.info.get("served_bytes"),
            "p50_ms_b1": round(_pct(s.b1, 50), 3), "p99_ms_b1": round(_pct(s.b1, 99), 3),
            "p50_ms_b32": round(_pct(s.b32, 50), 3), "p99_ms_b32": round(_pct(s.b32, 99), 3),
            "throughput_rps": round(max(s.b32_rounds), 2), "speedup_vs_fp32_b32": round(max(s.b32_rounds) / base_rps, 3),
            "speedup_vs_fp32_b1": round(_pct(servers[0].b1, 50) / _pct(s.b1, 50), 3),
            "mean_cosine": q["mean_cosine"], "spearman": q["spearman"], "eval_sentences": q["eval_sentences"],
            "stages_ms_b32": {k: round(v, 3) for k, v in stage_means(s.stage_time, s.b32).items()},
            "anchor": ANCHORS.get(s.recipe, ""),
        }
        if s.manifest is not None:
            row["built_quality"] = s.manifest.quality
            warnings += quality_warnings(s.name, s.manifest.quality, q)
        rows.append(row)
    return {"teacher": teacher, "baseline": rows[0], "variants": rows[1:], "warnings": warnings, "rounds": rounds, "threads": threads,
            "requests_per_round": {"batch_1": n_b1, "batch_32": n_b32}, "held_out": "calibration sentences after the first 64"}


def render_table(result: dict) -> str:
    head = f"{'variant':<16}{'size MB':>8}{'b1 p50':>8}{'b1 p99':>8}{'b32 p50':>9}{'b32 p99':>9}{'inputs/s':>9}{'x b32':>7}{'x b1':>6}{'cos':>8}{'spearman':>9}  seed's figure"
    lines = [f"teacher {result['teacher']}; {result['rounds']} interleaved rounds, {result['threads']} thread(s) per server, cache off; "
             f"quality on {result['baseline']['eval_sentences']} held-out sentences", head]
    for row in [result["baseline"], *result["variants"]]:
        size = (row["size_bytes"] or 0) / 1e6
        lines.append(f"{row['name']:<16}{size:>8.1f}{row['p50_ms_b1']:>8.1f}{row['p99_ms_b1']:>8.1f}{row['p50_ms_b32']:>9.1f}{row['p99_ms_b32']:>9.1f}"
                     f"{row['throughput_rps']:>9.1f}{row['speedup_vs_fp32_b32']:>7.2f}{row['speedup_vs_fp32_b1']:>6.2f}{row['mean_cosine']:>8.4f}{row['spearman']:>9.4f}  {row['anchor']}")
    lines.append("")
    lines.append("batch-32 request, mean ms per stage (server's /metrics; http_and_json = client time - server total):")
    lines.append(f"{'variant':<16}" + "".join(f"{k:>14}" for k in (*STAGES, "http_and_json")))
    for row in [result["baseline"], *result["variants"]]:
        lines.append(f"{row['name']:<16}" + "".join(f"{row['stages_ms_b32'].get(k, float('nan')):>14.1f}" for k in (*STAGES, "http_and_json")))
    for w in result["warnings"]:
        lines.append(f"WARNING: {w}")
    return "\n".join(lines)
