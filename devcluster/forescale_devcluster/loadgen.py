"""Open-loop load generator: `POST /v1/embeddings` at a time-varying rate.

Open loop means arrivals follow the rate function whatever the server does:
a slow server makes requests pile up instead of slowing the sender, as real
users do (a closed-loop tester hides exactly the overload we want to see).
Concurrency is still bounded, to protect the two shared cores: an arrival
that finds `max_concurrency` requests in flight is recorded as dropped, not
delayed. Every request's scheduled time, latency, status and serving backend
go to an in-memory log, optionally to a CSV file.
"""

from __future__ import annotations

import asyncio
import csv
import itertools
import math
import random
import time
from dataclasses import asdict, dataclass, fields
from typing import Callable, Iterable, Iterator

import aiohttp

from forescale_devcluster.arrivals import poisson_arrivals
from forescale_devcluster.procs import wait_event

DROPPED = "dropped: concurrency limit"

_TOPICS = ("running shoes", "wireless earbuds", "winter jacket", "coffee grinder", "standing desk", "phone case",
           "gaming laptop", "yoga mat", "air fryer", "backpack", "smart watch", "desk lamp", "espresso machine",
           "rain boots", "bluetooth speaker", "office chair", "mechanical keyboard", "travel mug", "tent",
           "electric toothbrush", "sunglasses", "kids bike", "blender", "monitor arm")
_ASKS = ("best {t} under 100 dollars", "is the {t} on sale today", "how long does delivery of a {t} take",
         "return policy for a {t}", "compare two {t} models", "{t} with free shipping",
         "does the {t} come in black", "gift ideas like a {t}", "reviews of the cheapest {t}",
         "when will the {t} be back in stock", "can I pay for a {t} in installments", "{t} size guide",
         "why was my {t} order cancelled", "track my {t} order", "discount code for {t}")


class InputSampler:
    """Short, real-looking shopping queries; a share repeats from a small hot set, as real traffic does.

    Repeats exercise the server's result cache; the hot set is drawn with
    Zipf-like weights so a few queries dominate, like top searches in a sale.
    `scale` (settable while the load runs) makes every input that many times
    longer in words, its words repeated in order: a request-mix shift, as when
    users start pasting whole documents. Longer inputs are new inputs to a
    result cache, as new users' inputs are.
    """

    def __init__(self, seed: int = 0, repeat_fraction: float = 0.2, hot_set_size: int = 40) -> None:
        if not 0.0 <= repeat_fraction <= 1.0:
            raise ValueError(f"repeat_fraction must be within 0..1, got {repeat_fraction}")
        if hot_set_size < 1:
            raise ValueError(f"hot_set_size must be >= 1, got {hot_set_size}")
        self._rng = random.Random(seed)
        self.repeat_fraction = repeat_fraction
        self._hot = [self._fresh() for _ in range(hot_set_size)]
        self._weights = [1.0 / (rank + 1) for rank in range(hot_set_size)]
        self._count = 0
        self.scale = 1.0

    def _fresh(self) -> str:
        ask = self._rng.choice(_ASKS).format(t=self._rng.choice(_TOPICS))
        # A short tail keeps fresh inputs distinct from each other and from the hot set.
        tail = self._rng.choice(("", " please", " near me", " 2026", " for my mom", " in size m", " fast"))
        return f"{ask}{tail} #{self._rng.randrange(10**6)}"

    def next(self) -> str:
        """The next input text."""
        self._count += 1
        if self._rng.random() < self.repeat_fraction:
            text = self._rng.choices(self._hot, weights=self._weights)[0]
        else:
            text = self._fresh()
        return text if self.scale == 1.0 else lengthen(text, self.scale)


def lengthen(text: str, scale: float) -> str:
    """`text` with round(words x scale) words (at least one), its words repeated in order."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a number > 0, got {scale}")
    words = text.split()
    return " ".join(itertools.islice(itertools.cycle(words), max(1, round(len(words) * scale))))


@dataclass
class RequestRecord:
    """One request as the load generator saw it."""

    scheduled_s: float          # arrival time, seconds from the start
    lag_s: float                # how late it was actually sent
    latency_s: float | None     # None when no answer came (dropped, timeout, connection error)
    status: int | None
    backend: str                # X-Forescale-Backend of the answer, when the gateway says
    error: str                  # "" on any HTTP answer


def uniform_arrivals(rate: Callable[[float], float], duration: float, step: float = 0.005) -> Iterator[float]:
    """Deterministic arrivals: one each time the integral of `rate` passes a whole number."""
    if not duration > 0:
        raise ValueError(f"duration must be > 0 s, got {duration}")
    area, next_at, t = 0.0, 1.0, 0.0
    while t < duration:
        area += max(0.0, rate(t + step / 2)) * step
        t += step
        while area >= next_at and t < duration:
            yield t
            next_at += 1.0


class LoadGenerator:
    """Sends open-loop requests to `url` + `path` following `rate` (req/s as a function of seconds)."""

    def __init__(self, url: str, rate: Callable[[float], float], *, duration_seconds: float,
                 max_requests: int | None = None, max_concurrency: int = 128, timeout_seconds: float = 10.0,
                 process: str = "poisson", seed: int = 0, inputs: InputSampler | None = None,
                 path: str = "/v1/embeddings", model: str = "minilm", csv_path: str | None = None,
                 on_record: Callable[[RequestRecord], None] | None = None, max_tokens: int | None = None) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"load generator URL must start with http:// or https://, got {url!r}")
        if not duration_seconds > 0:
            raise ValueError(f"duration_seconds must be > 0, got {duration_seconds}")
        if max_requests is not None and max_requests < 1:
            raise ValueError(f"max_requests must be >= 1, got {max_requests}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if not timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if process not in ("poisson", "uniform"):
            raise ValueError(f"arrival process must be poisson or uniform, got {process!r}")
        self.url = url.rstrip("/") + path
        self.rate, self.duration, self.process, self.seed = rate, duration_seconds, process, seed
        self.max_requests, self.max_concurrency = max_requests, max_concurrency
        self.timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self.inputs = inputs or InputSampler(seed)
        self.model, self.csv_path, self.on_record = model, csv_path, on_record
        #: None: embeddings bodies (`input`); a number: completions bodies (`prompt`, `max_tokens`), for `/v1/completions`
        self.max_tokens = max_tokens
        self.records: list[RequestRecord] = []
        #: wall-clock time (epoch seconds) of scheduled time 0, to line records up with Prometheus and events
        self.started_at: float | None = None
        self.in_flight = 0
        self.peak_in_flight = 0
        self._stop = asyncio.Event()

    def arrivals(self) -> Iterable[float]:
        """The scheduled arrival times of this run."""
        if self.process == "uniform":
            return uniform_arrivals(self.rate, self.duration)
        return poisson_arrivals(self.rate, self.duration, seed=self.seed)

    def stop(self) -> None:
        """Stop sending new requests; those in flight finish."""
        self._stop.set()

    async def run(self) -> list[RequestRecord]:
        """Send every scheduled request, wait for the answers, and return the log."""
        tasks: set[asyncio.Task] = set()
        connector = aiohttp.TCPConnector(limit=self.max_concurrency)
        async with aiohttp.ClientSession(timeout=self.timeout, connector=connector) as session:
            start = time.monotonic()
            self.started_at = time.time()
            for sent, at in enumerate(self.arrivals()):
                if self._stop.is_set() or (self.max_requests is not None and sent >= self.max_requests):
                    break
                delay = start + at - time.monotonic()
                if delay > 0 and await wait_event(self._stop, delay):
                    break
                lag = time.monotonic() - start - at
                if self.in_flight >= self.max_concurrency:
                    self._record(RequestRecord(at, lag, None, None, "", DROPPED))
                    continue
                # Counted here, not when the task first runs: arrivals that are
                # already due are scheduled in a burst, before any task starts.
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                task = asyncio.create_task(self._one(session, at, lag))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks:
                await asyncio.gather(*tasks)
        if self.csv_path:
            write_csv(self.records, self.csv_path)
        return self.records

    async def _one(self, session: aiohttp.ClientSession, at: float, lag: float) -> None:
        text = self.inputs.next()
        body = ({"input": [text], "model": self.model} if self.max_tokens is None
                else {"prompt": [text], "model": self.model, "max_tokens": self.max_tokens})
        started = time.monotonic()
        try:
            async with session.post(self.url, json=body) as resp:
                await resp.read()
                record = RequestRecord(at, lag, time.monotonic() - started, resp.status,
                                       resp.headers.get("X-Forescale-Backend", ""), "")
        except asyncio.TimeoutError:
            record = RequestRecord(at, lag, None, None, "", "timeout")
        except aiohttp.ClientError as exc:
            record = RequestRecord(at, lag, None, None, "", f"connection: {exc.__class__.__name__}")
        finally:
            self.in_flight -= 1
        self._record(record)

    def _record(self, record: RequestRecord) -> None:
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)


def write_csv(records: list[RequestRecord], path: str) -> None:
    """Write the request log as CSV with a header (latency in seconds, empty when none)."""
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=[f.name for f in fields(RequestRecord)])
        writer.writeheader()
        for record in sorted(records, key=lambda r: r.scheduled_s):
            writer.writerow({k: ("" if v is None else v) for k, v in asdict(record).items()})


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summarize(records: list[RequestRecord], window_seconds: float = 10.0) -> list[dict]:
    """Per window of scheduled time: offered and achieved rate, p50/p99 latency (ms), errors and drops."""
    if not window_seconds > 0:
        raise ValueError(f"window_seconds must be > 0, got {window_seconds}")
    if not records:
        return []
    buckets: dict[int, list[RequestRecord]] = {}
    for record in records:
        buckets.setdefault(int(record.scheduled_s // window_seconds), []).append(record)
    rows = []
    for index in range(max(buckets) + 1):
        group = buckets.get(index, [])
        answered = [r.latency_s * 1000 for r in group if r.latency_s is not None]
        rows.append({
            "start_s": index * window_seconds,
            "offered_rate": len(group) / window_seconds,
            "achieved_rate": len(answered) / window_seconds,
            "p50_ms": _quantile(answered, 0.5) if answered else None,
            "p99_ms": _quantile(answered, 0.99) if answered else None,
            "errors": sum(1 for r in group if r.error or (r.status or 0) >= 400),
            "dropped": sum(1 for r in group if r.error == DROPPED),
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    """`python -m forescale_devcluster.loadgen --url URL`: send a pattern, print a JSON summary on stdout."""
    import argparse
    import json
    import sys

    from forescale_devcluster.arrivals import builtin_pattern, from_trace

    parser = argparse.ArgumentParser(prog="python -m forescale_devcluster.loadgen", description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="base URL of the gateway or a server")
    parser.add_argument("--trace", help="Azure CSV, Mooncake JSONL or rates CSV (default: the built-in pattern)")
    parser.add_argument("--format", default="auto", help="azure, mooncake, rates or auto")
    parser.add_argument("--compression", type=float, default=12.0, help="trace time runs this many times faster")
    parser.add_argument("--mean-rate", type=float, default=30.0, help="scale the pattern to this mean req/s")
    parser.add_argument("--duration", type=float, help="seconds to run (default: the whole pattern)")
    parser.add_argument("--max-concurrency", type=int, default=128)
    parser.add_argument("--csv", help="also write the request log here")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        pattern = (from_trace(args.trace, args.format, time_compression=args.compression, mean_rate=args.mean_rate)
                   if args.trace else builtin_pattern(args.mean_rate))
        gen = LoadGenerator(args.url, pattern, duration_seconds=args.duration or pattern.duration,
                            max_concurrency=args.max_concurrency, seed=args.seed, csv_path=args.csv)
    except (ValueError, OSError) as exc:
        print(f"loadgen: {exc}", file=sys.stderr)
        return 2
    print(f"loadgen: {pattern.source}, {gen.duration:.0f} s, mean {pattern.mean:.1f} req/s -> {gen.url}",
          file=sys.stderr)
    records = asyncio.run(gen.run())
    answered = [r.latency_s * 1000 for r in records if r.latency_s is not None]
    print(json.dumps({
        "requests": len(records), "duration_seconds": gen.duration,
        "achieved_rate": len(answered) / gen.duration,
        "p50_ms": _quantile(answered, 0.5) if answered else None,
        "p99_ms": _quantile(answered, 0.99) if answered else None,
        "errors": sum(1 for r in records if r.error or (r.status or 0) >= 400),
        "dropped": sum(1 for r in records if r.error == DROPPED),
        "windows": summarize(records),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
