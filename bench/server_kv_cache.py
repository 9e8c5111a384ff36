"""Paged KV cache vs per-sequence pre-allocation to the maximum context, on the
Mooncake trace's real arrivals and input/output lengths.

    FORESCALE_TRACES=../shared/traces .venv/bin/python bench/server_kv_cache.py

Each request holds KV for its prompt from arrival, then grows one token per
decode step until its output is done. Decode speed is an assumption taken from
DistServe's published simulator fit (OPT-13B on A100: ~30 ms per iteration at batch ~32);
prefill time from the same fit. Memory is counted in tokens held:
- `paged`: `forescale_server.kv_cache.BlockAllocator` blocks of 16 tokens,
  allocated as sequences grow, freed when they end (sampled every second);
- `prealloc-max-context`: every running sequence holds the model's maximum
  context (the smallest power of two >= the longest request in the trace);
- `prealloc-request`: every running sequence holds input + its own output
  length from the start (an allocator that knows each request's max_tokens).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

from forescale_profiles.service_time import A100_OPT13B
from forescale_server.kv_cache import BlockAllocator

BLOCK = 16
DECODE_MS = 30.0


def load(path: Path) -> list[tuple[float, int, int]]:
    rows = []
    with path.open() as f:
        for line in f:
            r = json.loads(line)
            rows.append((r["timestamp"] / 1000.0, int(r["input_length"]), int(r["output_length"])))
    return rows


def main() -> None:
    root = Path(os.environ.get("FORESCALE_TRACES", Path(__file__).resolve().parents[1].parent / "shared" / "traces"))
    path = root / "mooncake" / "conversation_trace.jsonl"
    if not path.is_file():
        sys.exit(f"Mooncake trace not found at {path}; set FORESCALE_TRACES")
    requests = load(path)
    longest = max(i + o for _, i, o in requests)
    max_context = 1 << math.ceil(math.log2(longest))
    seqs = []
    for n, (t, inp, out) in enumerate(requests):
        prefill_s = A100_OPT13B.prefill_ms("fp16", inp) / 1000.0
        seqs.append((n, t, t + prefill_s, inp, out))
    horizon = int(max(s[2] + s[4] * DECODE_MS / 1000.0 for s in seqs)) + 2
    total_blocks = 10_000_000  # large enough never to refuse: we measure demand
    alloc = BlockAllocator(total_blocks, BLOCK)
    active: dict[int, tuple] = {}
    pending = sorted(seqs, key=lambda s: s[1])
    nxt = 0
    paged, pre_max, pre_req, concurrency = [], [], [], []
    for tick in range(horizon):
        while nxt < len(pending) and pending[nxt][1] <= tick:
            active[pending[nxt][0]] = pending[nxt]
            nxt += 1
        for sid, (_, start, decode_start, inp, out) in list(active.items()):
            generated = max(0, min(out, int((tick - decode_start) * 1000.0 / DECODE_MS)))
            if tick >= decode_start and generated >= out:
                alloc.free(sid)
                del active[sid]
                continue
            alloc.reserve(sid, inp + generated)
        paged.append(alloc.used * BLOCK)
        pre_max.append(len(active) * max_context)
        pre_req.append(sum(s[3] + s[4] for s in active.values()))
        concurrency.append(len(active))

    def row(name: str, series: list[int]) -> None:
        peak, mean = max(series), sum(series) / len(series)
        print(f"{name:<24}{peak / 1e6:>14.2f}{mean / 1e6:>14.3f}{peak / max(pre_max):>12.3f}{mean / (sum(pre_max) / len(pre_max)):>12.3f}")

    print(f"Mooncake conversation trace: {len(requests)} requests, longest {longest} tokens -> max context {max_context}")
    print(f"simulated {horizon} s at 1 s resolution; peak concurrency {max(concurrency)} sequences; block {BLOCK} tokens; decode {DECODE_MS} ms/token (assumed)")
    print(f"{'allocator':<24}{'peak Mtok':>14}{'mean Mtok':>14}{'peak ratio':>12}{'mean ratio':>12}")
    row("prealloc-max-context", pre_max)
    row("prealloc-request", pre_req)
    row("paged (BlockAllocator)", paged)
    print(f"paged / prealloc-max-context at peak: {max(paged) / max(pre_max):.3f}x (goal <= 0.65x)")
    print(f"paged / prealloc-request at peak:     {max(paged) / max(pre_req):.3f}x")


if __name__ == "__main__":
    main()
