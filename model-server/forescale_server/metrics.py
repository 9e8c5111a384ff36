"""The server's Prometheus series.

Every series carries `deployment`, `pool` and `precision`. Precision is the
one in force when the sample was taken, so a switch starts new series.
Counters and histograms are prometheus_client objects; state that is cheaper
to read than to track (queue depth, KV blocks and fragmentation, agreement,
GPU memory) is read at scrape time by a collector.

The root-cause diagnosis (docs/diagnosis.md) reads these series; the ones
added for it are the request lengths (`forescale_input_tokens`,
`forescale_output_tokens`), the device's busy time
(`forescale_device_busy_seconds_total`), KV fragmentation
(`forescale_kv_fragmentation_ratio`) and the out-of-memory warnings
(`forescale_oom_warnings_total`).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from forescale_profiles.precision import PRECISIONS

from .config import Labels

STAGES = ("queue", "preprocess", "compute", "postprocess", "total")
BASE_LABELS = ("deployment", "pool", "precision")


def latency_buckets() -> tuple[float, ...]:
    """Geometric buckets, ratio ~1.2, from 0.5 ms to 10 s (plus +Inf): fine
    enough that `histogram_quantile(0.99, ...)` is within ~10% anywhere from
    5 ms to 10 s."""
    buckets, b = [], 0.0005
    while b < 10.0:
        buckets.append(round(b, 6))
        b *= 1.2
    buckets.append(10.0)
    return tuple(buckets)


# `_created` series double the exposition size and nothing here reads them.
disable_created_metrics()

BATCH_BUCKETS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256)
#: tokens per input or output: powers of two up to a long context; the diagnosis reads only sum / count
TOKEN_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


class ServerMetrics:
    """Owns a registry; the server calls the `observe_*` methods."""

    def __init__(self, labels: Labels, state: Callable[[], dict]):
        """`state()` returns the scrape-time values: precision, queue_depth,
        emulated, agreement {precision: value}, kv_used, kv_free, kv_fragmentation,
        gpu_memory_bytes, cache_entries, leaked_bytes, variant, precision_fallback {requested, fallback}
        (absent keys are skipped)."""
        self.labels = labels
        self._state = state
        self.registry = CollectorRegistry(auto_describe=True)
        self.duration = Histogram(
            "forescale_request_duration_seconds",
            "Request latency by stage (queue, preprocess, compute, postprocess, total)",
            BASE_LABELS + ("stage",),
            buckets=latency_buckets(),
            registry=self.registry,
        )
        self.requests = Counter("forescale_requests", "Inference requests by HTTP status code", BASE_LABELS + ("code",), registry=self.registry)
        self.batch_size = Histogram("forescale_batch_size", "Items per model batch", BASE_LABELS, buckets=BATCH_BUCKETS, registry=self.registry)
        self.cache_hits = Counter("forescale_cache_hits", "Result-cache hits", BASE_LABELS, registry=self.registry)
        self.cache_misses = Counter("forescale_cache_misses", "Result-cache misses", BASE_LABELS, registry=self.registry)
        self.switches = Counter("forescale_precision_switches", "Precision switches", BASE_LABELS, registry=self.registry)
        self.input_tokens = Histogram("forescale_input_tokens", "Tokens per input (embeddings) or prompt (completions)",
                                      BASE_LABELS, buckets=TOKEN_BUCKETS, registry=self.registry)
        self.output_tokens = Histogram("forescale_output_tokens", "Tokens per completion (completions only)",
                                       BASE_LABELS, buckets=TOKEN_BUCKETS, registry=self.registry)
        self.busy = Counter("forescale_device_busy_seconds", "Seconds the device spent computing batches (one batch at a time)",
                            BASE_LABELS, registry=self.registry)
        self.oom_warnings = Counter("forescale_oom_warnings", "Out-of-memory warnings: device allocations refused",
                                    BASE_LABELS, registry=self.registry)
        # A counter's first increment is invisible to increase() unless its series existed at 0
        # before it: the diagnosis asks "any warning in the last minute?", so every precision's starts at 0.
        # The cache's two likewise: the dashboard's hit ratio divides by hits, and a cold cache (no hit
        # yet) must read 0%, not "No data".
        for precision in PRECISIONS:
            for counter in (self.oom_warnings, self.cache_hits, self.cache_misses):
                counter.labels(*self._base(precision))
        self.registry.register(_StateCollector(self))

    def _base(self, precision: str) -> tuple[str, str, str]:
        return (self.labels.deployment, self.labels.pool, precision)

    def observe_stage(self, precision: str, stage: str, seconds: float) -> None:
        self.duration.labels(*self._base(precision), stage).observe(seconds)

    def observe_request(self, precision: str, code: int) -> None:
        self.requests.labels(*self._base(precision), str(code)).inc()

    def observe_batch(self, precision: str, size: int) -> None:
        self.batch_size.labels(*self._base(precision)).observe(size)

    def observe_cache(self, precision: str, hits: int, misses: int) -> None:
        if hits:
            self.cache_hits.labels(*self._base(precision)).inc(hits)
        if misses:
            self.cache_misses.labels(*self._base(precision)).inc(misses)

    def observe_switch(self, precision: str) -> None:
        self.switches.labels(*self._base(precision)).inc()

    def observe_tokens(self, precision: str, inputs: Sequence[int], outputs: Sequence[int] = ()) -> None:
        """The length of each input (prompt) and each completion of one request."""
        hist = self.input_tokens.labels(*self._base(precision))
        for n in inputs:
            hist.observe(n)
        if outputs:
            hist = self.output_tokens.labels(*self._base(precision))
            for n in outputs:
                hist.observe(n)

    def observe_busy(self, precision: str, seconds: float) -> None:
        if seconds > 0:
            self.busy.labels(*self._base(precision)).inc(seconds)

    def observe_oom(self, precision: str) -> None:
        self.oom_warnings.labels(*self._base(precision)).inc()

    def exposition(self) -> bytes:
        """The text exposition format for `GET /metrics`."""
        return generate_latest(self.registry)


class _StateCollector(Collector):
    def __init__(self, metrics: ServerMetrics):
        self._metrics = metrics

    def describe(self) -> Iterable:
        return []

    def collect(self) -> Iterable[GaugeMetricFamily]:
        state = self._metrics._state()
        base = list(self._metrics._base(state["precision"]))

        def gauge(name: str, doc: str, value: float | None) -> GaugeMetricFamily | None:
            if value is None:
                return None
            family = GaugeMetricFamily(name, doc, labels=BASE_LABELS)
            family.add_metric(base, float(value))
            return family

        families = [
            gauge("forescale_queue_depth", "Items waiting for a batch", state.get("queue_depth")),
            gauge("forescale_emulated", "1 when compute is emulated (--emulate-gpu), 0 on real hardware", state.get("emulated")),
            gauge("forescale_kv_blocks_used", "Paged KV-cache blocks in use", state.get("kv_used")),
            gauge("forescale_kv_blocks_free", "Paged KV-cache blocks free", state.get("kv_free")),
            gauge("forescale_kv_fragmentation_ratio", "Share of the used KV blocks' token slots holding no token", state.get("kv_fragmentation")),
            gauge("forescale_gpu_memory_bytes", "Device memory allocated by the model server (CUDA; emulated with --emulate-gpu)", state.get("gpu_memory_bytes")),
            gauge("forescale_cache_entries", "Result-cache entries", state.get("cache_entries")),
            gauge("forescale_fault_leaked_bytes", "Memory held by the leak fault", state.get("leaked_bytes")),
        ]
        yield from (f for f in families if f is not None)
        variant = state.get("variant")
        if variant:
            info = GaugeMetricFamily("forescale_model_variant_info", "The built variant served (--model-path): always 1, the labels say which",
                                     labels=BASE_LABELS + ("variant", "recipe", "teacher"))
            info.add_metric(base + [variant["variant"], variant["recipe"], variant["teacher"]], 1.0)
            yield info
        fallback = state.get("precision_fallback")
        if fallback:
            info = GaugeMetricFamily("forescale_precision_fallback_info",
                                     "1 when --precision could not run on this hardware and the server started at "
                                     "--precision-fallback instead: `requested` was asked for, `fallback` started",
                                     labels=BASE_LABELS + ("requested", "fallback"))
            info.add_metric(base + [fallback["requested"], fallback["fallback"]], 1.0)
            yield info
        agreement = state.get("agreement") or {}
        if agreement:
            family = GaugeMetricFamily(
                "forescale_quality_agreement",
                "Agreement with fp32 on the built-in calibration set (mean cosine for embeddings, next-token match for decoders)",
                labels=BASE_LABELS,
            )
            for precision, value in agreement.items():
                family.add_metric(base[:2] + [precision], float(value))
            yield family
