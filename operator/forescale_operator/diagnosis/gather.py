"""Collect the `Evidence` for one pool from Prometheus (and, when given, the Kubernetes facts).

The queries read the model server's own series (model-server/forescale_server/
metrics.py), selected by the `namespace`, `deployment` and `pool` labels every
pod's series carry:

| evidence | series |
|---|---|
| rate_rps, error_ratio | `forescale_requests_total{code}` |
| queue_depth | `forescale_queue_depth` (sum over pods) |
| batch_size_mean | `forescale_batch_size` histogram, sum / count |
| queue_wait_ms ... postprocess_ms | `forescale_request_duration_seconds{stage}` histogram, sum / count |
| compute_per_item_ms | `forescale_device_busy_seconds_total` / `forescale_batch_size_sum`: device time per item computed (cache hits, which never reach the device, do not dilute it) |
| pod_p99_ms | the same histogram's `stage="total"` buckets, `by (pod)` |
| rate_per_pod_rps | `forescale_requests_total` rate per pod, mean over the pods that served in the window |
| pod_compute_per_item_ms | compute_per_item_ms `by (pod)` |
| model_health | not Prometheus: the operator's latency model (the caller's `KubeFacts`) |
| result_cache_hit_ratio | `forescale_cache_hits_total`, `forescale_cache_misses_total` |
| kv_used_ratio | `forescale_kv_blocks_used` / (used + `forescale_kv_blocks_free`), fullest pod |
| kv_fragmentation_ratio | `forescale_kv_fragmentation_ratio`, the most fragmented pod |
| gpu_memory_bytes | `forescale_gpu_memory_bytes`, the pod holding most |
| gpu_utilisation_ratio | `forescale_device_busy_seconds_total` rate per pod, mean over the pods |
| input_tokens_mean, output_tokens_mean | `forescale_input_tokens`, `forescale_output_tokens` histograms, sum / count |
| oom_warnings | `forescale_oom_warnings_total`, increase over the "now" window only |

The server has no prefix cache, so no series for `NOT_EXPORTED`; that field
is missing, with that reason. Restarts, OOM kills and the revision come from
the Kubernetes API, not Prometheus: the caller reads them and passes an
async `facts` callable returning `KubeFacts`.

"Now" is the last `now_seconds` (30) before the instant diagnosed; "before"
is the `before_seconds` (600) ending where "now" starts. The instant is
`ago_seconds` before the query runs (0: now), reached with PromQL `offset`.
Every query runs at once, each bounded by `timeout_s`: a query that fails,
times out or finds no series leaves its field missing, with the reason in
`Evidence.missing_why`. Nothing here raises for want of evidence.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from string import Template
from typing import Awaitable, Callable, Mapping, Protocol

from forescale_predictor.presets import escape_label_value

from .evidence import Evidence


class PromQuery(Protocol):
    """The two calls the diagnosis makes to Prometheus (an instant query each)."""

    async def scalar(self, query: str) -> float | None:
        """The query's single value; None when it returned no series."""

    async def vector(self, query: str) -> dict[str, float]:
        """The query's series keyed by the one label it groups by (here `pod`); {} when none."""


class ClosablePromQuery(PromQuery, Protocol):
    """A PromQuery holding a connection: whoever makes one closes it."""

    async def close(self) -> None: ...


@dataclass(frozen=True)
class KubeFacts:
    """What the Kubernetes API says about the pool over the same window; None where unknown."""

    oom_killed_containers: int | None = None
    restarted_containers: int | None = None
    revision_changed: bool | None = None
    revision_age_seconds: float | None = None
    #: the operator's latency model's health of the pool (status.pools.<pool>.model.health, docs/engine.md):
    #: its latency over what the model predicts at its load; 1 is healthy
    model_health: float | None = None
    #: why a fact is None, where the reader knows ("listing pods failed: 403 Forbidden")
    missing_why: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Windows:
    """The two windows compared, in whole seconds."""

    #: the engine's own metric window (readings/prometheus.py DEFAULT_WINDOW): the diagnosis reads the same 30 s
    #: that started the playbook, which starts 2-3 ticks after the symptom. A minute would be half healthy
    #: traffic at the playbook's start, and would dilute a 2.5x slowdown under the degraded-pods threshold.
    now_seconds: int = 30
    #: the issue's "10 minutes before"
    before_seconds: int = 600
    #: how long before the query the instant diagnosed lies (0: now)
    ago_seconds: int = 0


#: per-request mean of one stage, in ms
_STAGE_MEAN = ('1000 * sum(rate(forescale_request_duration_seconds_sum{$sel,stage="$stage"}[$range]$offset))'
               ' / sum(rate(forescale_request_duration_seconds_count{$sel,stage="$stage"}[$range]$offset))')

#: field -> PromQL template ($sel: label matchers; $range, $offset: the window)
PAIR_QUERIES: dict[str, str] = {
    "rate_rps": "sum(rate(forescale_requests_total{$sel}[$range]$offset))",
    # the load each pod carries: a rise the forecast's added pods absorbed is no overload
    "rate_per_pod_rps": "avg(sum by (pod) (rate(forescale_requests_total{$sel}[$range]$offset)))",
    "error_ratio": ('(sum(rate(forescale_requests_total{$sel,code=~"5..|429"}[$range]$offset)) or vector(0))'
                    " / sum(rate(forescale_requests_total{$sel}[$range]$offset))"),
    "queue_depth": "sum(avg_over_time(forescale_queue_depth{$sel}[$range]$offset))",
    "batch_size_mean": ("sum(rate(forescale_batch_size_sum{$sel}[$range]$offset))"
                        " / sum(rate(forescale_batch_size_count{$sel}[$range]$offset))"),
    "queue_wait_ms": Template(_STAGE_MEAN).safe_substitute(stage="queue"),
    "preprocess_ms": Template(_STAGE_MEAN).safe_substitute(stage="preprocess"),
    "compute_ms": Template(_STAGE_MEAN).safe_substitute(stage="compute"),
    "postprocess_ms": Template(_STAGE_MEAN).safe_substitute(stage="postprocess"),
    # Device time per item that reached the device. Not compute_ms / batch_size_mean: the compute stage is
    # recorded per request, cache hits with 0, so a falling hit ratio would read as a slower device.
    "compute_per_item_ms": ("1000 * sum(rate(forescale_device_busy_seconds_total{$sel}[$range]$offset))"
                            " / sum(rate(forescale_batch_size_sum{$sel}[$range]$offset))"),
    # A hit counter has no series before its first hit: absent hits are 0 hits.
    "result_cache_hit_ratio": ("(sum(rate(forescale_cache_hits_total{$sel}[$range]$offset)) or vector(0))"
                               " / ((sum(rate(forescale_cache_hits_total{$sel}[$range]$offset)) or vector(0))"
                               " + sum(rate(forescale_cache_misses_total{$sel}[$range]$offset)))"),
    "kv_used_ratio": ("max(avg_over_time(forescale_kv_blocks_used{$sel}[$range]$offset)"
                      " / (avg_over_time(forescale_kv_blocks_used{$sel}[$range]$offset)"
                      " + avg_over_time(forescale_kv_blocks_free{$sel}[$range]$offset)))"),
    "kv_fragmentation_ratio": "max(avg_over_time(forescale_kv_fragmentation_ratio{$sel}[$range]$offset))",
    "gpu_memory_bytes": "max(avg_over_time(forescale_gpu_memory_bytes{$sel}[$range]$offset))",
    # by pod first: a precision switch starts a pod's second series, and one device is busy once
    "gpu_utilisation_ratio": "avg(sum by (pod) (rate(forescale_device_busy_seconds_total{$sel}[$range]$offset)))",
    "input_tokens_mean": ("sum(rate(forescale_input_tokens_sum{$sel}[$range]$offset))"
                          " / sum(rate(forescale_input_tokens_count{$sel}[$range]$offset))"),
    "output_tokens_mean": ("sum(rate(forescale_output_tokens_sum{$sel}[$range]$offset))"
                           " / sum(rate(forescale_output_tokens_count{$sel}[$range]$offset))"),
}
#: field -> PromQL template, read over the "now" window only
VALUE_QUERIES: dict[str, str] = {
    # the server starts the counter at 0, so increase() sees the first warning
    "oom_warnings": "sum(increase(forescale_oom_warnings_total{$sel}[$range]$offset))",
}
POD_P99_QUERY = ('1000 * histogram_quantile(0.99, sum by (pod, le) '
                 '(rate(forescale_request_duration_seconds_bucket{$sel,stage="total"}[$range]$offset)))')
#: device time per item computed, per pod: what tells a slow pod from a pod that only queued longer
POD_COMPUTE_QUERY = ("1000 * sum by (pod) (rate(forescale_device_busy_seconds_total{$sel}[$range]$offset))"
                     " / sum by (pod) (rate(forescale_batch_size_sum{$sel}[$range]$offset))")
#: per-pod field -> its query over the "now" window
POD_QUERIES = {"pod_p99_ms": POD_P99_QUERY, "pod_compute_per_item_ms": POD_COMPUTE_QUERY}

#: evidence the model server has no series for, and so is always missing from Prometheus
NOT_EXPORTED: dict[str, str] = {
    "kv_hit_ratio": "the model server has no prefix cache, so no prefix (KV) cache hit series",
}
_FACT_FIELDS = ("oom_killed_containers", "restarted_containers", "revision_changed", "revision_age_seconds",
                "model_health")


def selector(namespace: str, deployment: str, pool: str | None) -> str:
    """The label matchers for one resource's pool (both pools with None), escaped."""
    matchers = [f'namespace="{escape_label_value(namespace)}"', f'deployment="{escape_label_value(deployment)}"']
    if pool is not None:
        matchers.append(f'pool="{escape_label_value(pool)}"')
    return ",".join(matchers)


def queries(namespace: str, deployment: str, pool: str | None = "a",
            windows: Windows = Windows()) -> dict[str, str]:
    """Every query by key: `<field>.now`, `<field>.before`, `<value field>.now` and `<pod field>.now`."""
    sel = selector(namespace, deployment, pool)
    ago = max(0, int(windows.ago_seconds))
    spans = {"now": (int(windows.now_seconds), ago),
             "before": (int(windows.before_seconds), ago + int(windows.now_seconds))}

    def fill(template: str, side: str) -> str:
        length, offset = spans[side]
        return Template(template).substitute(sel=sel, range=f"{length}s", offset=f" offset {offset}s" if offset else "")

    out = {f"{name}.{side}": fill(template, side) for name, template in PAIR_QUERIES.items() for side in spans}
    out |= {f"{name}.now": fill(template, "now") for name, template in VALUE_QUERIES.items()}
    out |= {f"{name}.now": fill(template, "now") for name, template in POD_QUERIES.items()}
    return out


async def gather_evidence(prom: PromQuery, namespace: str, deployment: str, *, pool: str | None = "a",
                          facts: Callable[[], Awaitable[KubeFacts]] | None = None,
                          windows: Windows = Windows(), timeout_s: float = 5.0) -> Evidence:
    """The Evidence for one pool; takes at most about `timeout_s`, whatever Prometheus does."""
    texts = queries(namespace, deployment, pool, windows)
    keys = list(texts)
    vectors = {f"{name}.now" for name in POD_QUERIES}
    calls = [_bounded((lambda q=texts[k]: prom.vector(q)) if k in vectors else (lambda q=texts[k]: prom.scalar(q)),
                      timeout_s) for k in keys]
    if facts is not None:
        calls.append(_bounded(facts, timeout_s))
    answers = await asyncio.gather(*calls)
    why: dict[str, str] = dict(NOT_EXPORTED)
    got: dict[str, float | None] = {}
    for key, (value, problem) in zip(keys, answers):
        if key in vectors:
            continue
        reading = _reading(value)
        if reading is None:
            why[key] = problem or ("no series" if value is None else f"not a usable number: {value!r}")
        got[key] = reading

    kwargs: dict[str, object] = {}
    for name in PAIR_QUERIES:
        now, before = got.get(f"{name}.now"), got.get(f"{name}.before")
        kwargs[name] = _pair(name, now, before, why)
    for name in VALUE_QUERIES:
        kwargs[name] = got.get(f"{name}.now")
        if kwargs[name] is None:
            why[name] = why.pop(f"{name}.now", "no series")
    for name in POD_QUERIES:
        pods, problem = answers[keys.index(f"{name}.now")]
        pods = {str(k): v for k, v in ((k, _reading(v)) for k, v in (pods or {}).items())} if isinstance(pods, dict) else {}
        pods = {k: v for k, v in pods.items() if v is not None}
        kwargs[name] = pods or None
        if not pods:
            why[name] = problem or "no series"

    if facts is None:
        for name in _FACT_FIELDS:
            why[name] = "not read (no Kubernetes facts given)"
    else:
        value, problem = answers[-1]
        if isinstance(value, KubeFacts):
            for name in _FACT_FIELDS:
                kwargs[name] = getattr(value, name)
                if kwargs[name] is None:
                    said = value.missing_why.get(name) if isinstance(value.missing_why, Mapping) else None
                    why[name] = str(said) if said else "the Kubernetes API did not say"
        else:
            for name in _FACT_FIELDS:
                why[name] = problem or f"facts were not KubeFacts: {type(value).__name__}"
    return Evidence(**kwargs, now_seconds=float(windows.now_seconds), missing_why=why)  # type: ignore[arg-type]


async def _bounded(call: Callable[[], Awaitable], timeout_s: float) -> tuple[object, str | None]:
    """(answer, None), or (None, why) when the call failed or took longer than `timeout_s`."""
    try:
        return await asyncio.wait_for(call(), timeout_s), None
    except asyncio.TimeoutError:
        return None, f"timed out after {timeout_s:g} s"
    except Exception as exc:  # noqa: BLE001 - any failure is missing evidence, never a failed diagnosis
        return None, f"failed: {type(exc).__name__}: {exc}"[:200]


def _reading(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


def _pair(name: str, now: float | None, before: float | None, why: dict[str, str]) -> tuple[float | None, float | None] | None:
    """The pair, None when both sides are missing (the reason recorded under the field's name)."""
    if now is None and before is None:
        why[name] = why.pop(f"{name}.now", None) or why.get(f"{name}.before", "no series")
        why.pop(f"{name}.before", None)
        return None
    return now, before
