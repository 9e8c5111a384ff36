"""Metric presets: which PromQL gives latency, rate, errors and more.

Each preset holds PromQL templates with `$`-placeholders (Grafana style,
because PromQL itself uses braces):

- `$selector`: the label matchers that pick one deployment (and pool),
  built here from escaped values;
- `$namespace`, `$deployment`, `$pool`: the escaped label values themselves;
- `$quantile` (e.g. 0.99) and `$window` (a PromQL duration such as 1m).

Latency queries give milliseconds; rate queries requests per second; error
queries a fraction in [0, 1] of requests that failed or were rejected.

The `forescale` and `vllm` presets also give their latency histogram's buckets
(`latency_buckets`), from which the operator reads the share of requests over
the SLO target; the others, and a preset whose latency query is overridden,
give none.

| preset | latency | quantiles? | selects pods by |
|---|---|---|---|
| forescale | histogram `forescale_request_duration_seconds{stage="total"}` | yes | `deployment`, `pool` labels |
| vllm | histograms `vllm:e2e_request_latency_seconds` (and TTFT) | yes | `namespace`, pod name `<deployment>-<pool>-<hash>-<suffix>` |
| triton | counters `nv_inference_request_duration_us` / successes: a mean | no | same |
| torchserve | counters `ts_inference_latency_microseconds` / requests: a mean | no | same |
| custom | the user's templates | as declared | as written |

Pods of the external presets are picked by their whole name, as a Deployment
names them (`<deployment>-<pool>-<replicaset hash>-<5 characters>`; PromQL
anchors regexes), never by a prefix: the pods of a resource named `chat-a`
(`chat-a-a-...`) are not the pods of `chat`'s pool a.

An error counter that may have no series yet (TorchServe's `Requests5XX`
appears with the first 5xx) reads as 0 through `or vector(0)`, not as
"unavailable".

vLLM's `vllm:e2e_request_latency_seconds` has no bucket under 0.3 s: a
quantile under 300 ms is interpolated inside [0, 0.3 s] without any data.
Where the SLO is that tight, set `latencyQuery` to a histogram with finer
buckets; the preset's `ttft` query (`vllm:time_to_first_token_seconds`,
buckets from 1 ms) is one.

Every label value is escaped before substitution (`escape_label_value`), and
values used inside a regex matcher are regex-escaped first, so a value such
as `a"} or vector(1) #` stays one harmless string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from string import Template

QUERY_KINDS = ("latency", "rate", "error_rate", "queue_depth", "agreement", "ttft", "service_ms", "service_size",
               "latency_buckets")
_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
_POOLS = ("a", "b")
#: what a Deployment appends to `<deployment>-<pool>` in its pods' names: the
#: ReplicaSet's pod-template-hash and a 5-character suffix (no dashes in either)
POD_SUFFIX = "[a-z0-9]+-[a-z0-9]+"


def escape_label_value(value: str) -> str:
    """Escape a string for use inside a double-quoted PromQL label value."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_regex_value(value: str) -> str:
    """Escape a literal for use inside a `=~"..."` matcher (regex first, then PromQL quoting)."""
    return escape_label_value(re.escape(str(value)))


@dataclass(frozen=True)
class MetricPreset:
    """PromQL templates for one serving backend; see the module docstring."""

    name: str
    description: str
    latency: str
    rate: str
    yields_quantiles: bool
    error_rate: str | None = None
    queue_depth: str | None = None
    agreement: str | None = None
    ttft: str | None = None
    #: the pods' clock: mean device ms per unit of work (a batch, a prefill) and the unit's mean size
    service_ms: str | None = None
    service_size: str | None = None
    #: the latency histogram's bucket rates by `le` (seconds): the share of requests over the SLO target
    #: (the operator's error budget) is read from them; a vector, one series per bucket
    latency_buckets: str | None = None
    #: how `$selector` is built: "labels" (deployment/pool labels) or "pod" (pod name prefix)
    selector: str = "labels"

    def query(
        self,
        kind: str,
        *,
        namespace: str,
        deployment: str,
        pool: str | None = None,
        quantile: float = 0.99,
        window: str = "1m",
    ) -> str | None:
        """The PromQL of `kind` for one deployment (None when this backend has no such metric)."""
        if kind not in QUERY_KINDS:
            raise ValueError(f"unknown query kind {kind!r}; expected one of {', '.join(QUERY_KINDS)}")
        template = getattr(self, kind)
        if not template:
            return None
        values = substitutions(self.selector, namespace=namespace, deployment=deployment, pool=pool, quantile=quantile, window=window)
        try:
            return Template(template).substitute(values)
        except KeyError as exc:
            raise ValueError(
                f"preset {self.name!r}: unknown placeholder ${exc.args[0]} in the {kind} query; "
                f"use {', '.join('$' + k for k in values)}"
            ) from None
        except ValueError as exc:
            raise ValueError(f"preset {self.name!r}: bad placeholder in the {kind} query ({exc})") from None

    def queries(self, **labels) -> dict[str, str]:
        """Every query this preset has, by kind."""
        out = {}
        for kind in QUERY_KINDS:
            text = self.query(kind, **labels)
            if text:
                out[kind] = text
        return out


def substitutions(selector: str, *, namespace: str, deployment: str, pool: str | None, quantile: float, window: str) -> dict[str, str]:
    """The escaped placeholder values of a query."""
    if not namespace or not deployment:
        raise ValueError("namespace and deployment are required to build a query")
    if pool is not None and pool not in _POOLS:
        raise ValueError(f"pool must be one of {_POOLS} or None, got {pool!r}")
    try:
        q = float(quantile)
    except (TypeError, ValueError):
        raise ValueError(f"quantile must be a number in (0, 1), got {quantile!r}") from None
    if not 0 < q < 1:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
    if not _DURATION.match(str(window)):
        raise ValueError(f"window must be a PromQL duration such as 30s, 1m or 5m, got {window!r}")
    ns, dep = escape_label_value(namespace), escape_label_value(deployment)
    if selector == "labels":
        matchers = [f'namespace="{ns}"', f'deployment="{dep}"']
        if pool:
            matchers.append(f'pool="{pool}"')
    else:
        pools = pool or "(a|b)"
        matchers = [f'namespace="{ns}"', f'pod=~"{escape_regex_value(deployment)}-{pools}-{POD_SUFFIX}"']
    return {
        "selector": ",".join(matchers),
        "namespace": ns,
        "deployment": dep,
        "pool": escape_label_value(pool or ""),
        "quantile": repr(q),
        "window": str(window),
    }


FORESCALE = MetricPreset(
    name="forescale",
    description="Forescale's own model server (histogram forescale_request_duration_seconds)",
    latency='1000 * histogram_quantile($quantile, sum by (le) (rate(forescale_request_duration_seconds_bucket{$selector,stage="total"}[$window])))',
    rate="sum(rate(forescale_requests_total{$selector}[$window]))",
    error_rate='(sum(rate(forescale_requests_total{$selector,code=~"5..|429"}[$window])) or vector(0)) / sum(rate(forescale_requests_total{$selector}[$window]))',
    queue_depth="sum(forescale_queue_depth{$selector})",
    agreement="min by (pool, precision) (forescale_quality_agreement{$selector})",
    # the device's time per batch and items per batch: the pods' clock
    service_ms=("1000 * sum(rate(forescale_device_busy_seconds_total{$selector}[$window]))"
                " / sum(rate(forescale_batch_size_count{$selector}[$window]))"),
    service_size=("sum(rate(forescale_batch_size_sum{$selector}[$window]))"
                  " / sum(rate(forescale_batch_size_count{$selector}[$window]))"),
    latency_buckets='sum by (le) (rate(forescale_request_duration_seconds_bucket{$selector,stage="total"}[$window]))',
    yields_quantiles=True,
)

VLLM = MetricPreset(
    name="vllm",
    description="vLLM OpenAI server (histograms vllm:e2e_request_latency_seconds, no bucket under 0.3 s, and vllm:time_to_first_token_seconds)",
    latency='1000 * histogram_quantile($quantile, sum by (le) (rate({__name__="vllm:e2e_request_latency_seconds_bucket",$selector}[$window])))',
    ttft='1000 * histogram_quantile($quantile, sum by (le) (rate({__name__="vllm:time_to_first_token_seconds_bucket",$selector}[$window])))',
    # vllm:request_success_total has one series per finished_reason, "abort" among them:
    # successes are the others, and aborts are the errors.
    rate='sum(rate({__name__="vllm:request_success_total",$selector,finished_reason!="abort"}[$window]))',
    error_rate=('(sum(rate({__name__="vllm:request_success_total",$selector,finished_reason="abort"}[$window])) or vector(0))'
                ' / sum(rate({__name__="vllm:request_success_total",$selector}[$window]))'),
    queue_depth='sum({__name__="vllm:num_requests_waiting",$selector})',
    # a prefill's time and its prompt tokens: the pods' clock
    service_ms=('1000 * sum(rate({__name__="vllm:request_prefill_time_seconds_sum",$selector}[$window]))'
                ' / sum(rate({__name__="vllm:request_prefill_time_seconds_count",$selector}[$window]))'),
    service_size=('sum(rate({__name__="vllm:prompt_tokens_total",$selector}[$window]))'
                  ' / sum(rate({__name__="vllm:request_prefill_time_seconds_count",$selector}[$window]))'),
    latency_buckets='sum by (le) (rate({__name__="vllm:e2e_request_latency_seconds_bucket",$selector}[$window]))',
    yields_quantiles=True,
    selector="pod",
)

TRITON = MetricPreset(
    name="triton",
    description="NVIDIA Triton (counters only: latency is a mean, not a quantile)",
    latency="sum(rate(nv_inference_request_duration_us{$selector}[$window])) / sum(rate(nv_inference_request_success{$selector}[$window])) / 1000",
    rate="sum(rate(nv_inference_request_success{$selector}[$window])) + (sum(rate(nv_inference_request_failure{$selector}[$window])) or vector(0))",
    error_rate=("(sum(rate(nv_inference_request_failure{$selector}[$window])) or vector(0)) / (sum(rate(nv_inference_request_success{$selector}[$window]))"
                " + (sum(rate(nv_inference_request_failure{$selector}[$window])) or vector(0)))"),
    queue_depth="sum(nv_inference_pending_request_count{$selector})",
    yields_quantiles=False,
    selector="pod",
)

TORCHSERVE = MetricPreset(
    name="torchserve",
    description="TorchServe in prometheus metrics mode (counters only: latency is a mean, not a quantile)",
    latency="sum(rate(ts_inference_latency_microseconds{$selector}[$window])) / sum(rate(ts_inference_requests_total{$selector}[$window])) / 1000",
    rate="sum(rate(ts_inference_requests_total{$selector}[$window]))",
    # Requests5XX has no series until the first 5xx: absent means 0, not "unavailable".
    error_rate="(sum(rate(Requests5XX{$selector}[$window])) or vector(0)) / sum(rate(ts_inference_requests_total{$selector}[$window]))",
    queue_depth=None,
    yields_quantiles=False,
    selector="pod",
)

PRESETS: dict[str, MetricPreset] = {p.name: p for p in (FORESCALE, VLLM, TRITON, TORCHSERVE)}
PRESET_NAMES = (*PRESETS, "custom")


def custom_preset(latency_query: str, rate_query: str, *, yields_quantiles: bool = True, **optional: str | None) -> MetricPreset:
    """A preset from user templates (spec.metrics.latencyQuery / rateQuery)."""
    if not latency_query or not rate_query:
        raise ValueError("the custom preset needs both latencyQuery and rateQuery")
    return MetricPreset(
        name="custom",
        description="user-supplied PromQL templates",
        latency=latency_query,
        rate=rate_query,
        yields_quantiles=yields_quantiles,
        error_rate=optional.get("error_rate"),
        queue_depth=optional.get("queue_depth"),
        agreement=optional.get("agreement"),
    )


def get_preset(name: str, *, latency_query: str = "", rate_query: str = "") -> MetricPreset:
    """The preset called `name`; `custom` is built from the two queries."""
    if name == "custom":
        return custom_preset(latency_query, rate_query)
    try:
        preset = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown metrics preset {name!r}; choose one of {', '.join(PRESET_NAMES)}") from None
    # a preset may still have its queries overridden one by one; the histogram's buckets belong to the
    # latency it replaced, not to the user's query, so an overridden latency has none
    changes: dict[str, str | None] = {k: v for k, v in (("latency", latency_query), ("rate", rate_query)) if v}
    if latency_query:
        changes["latency_buckets"] = None
    return replace(preset, **changes) if changes else preset
