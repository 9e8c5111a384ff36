"""What a diagnosis looks at: plain numbers, each now and in the 10 minutes before.

A field is one of four kinds:
- a pair `(now, before)`: the last minute, and the 10 minutes before the
  incident; either side may be None (not measured);
- a count or a number (`oom_killed_containers`, `oom_warnings`, `revision_age_seconds`);
- a flag (`revision_changed`);
- a number per pod now, by pod name (`pod_p99_ms`, `pod_compute_per_item_ms`).

Every field is optional: None means the evidence is missing, and
`missing_why` says why where it is known ("no series", "query timed out
after 5 s"). The rules (`rules.py`) never trust a value: NaN, ±inf and
negative numbers read as missing there too, so an `Evidence` built by hand,
by `from_json` from an old snapshot or by a broken exporter cannot make a
rule raise.

Units are in the names: `_ms`, `_rps`, `_bytes`, `_seconds`; `_ratio` is a
share in [0, 1]; `_mean` is per request (or per batch for `batch_size_mean`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

#: (now, before); either side None when not measured
Pair = tuple[float | None, float | None]

#: the fields holding a (now, before) pair
PAIR_FIELDS = (
    "rate_rps", "rate_per_pod_rps", "queue_depth", "batch_size_mean", "error_ratio",
    "queue_wait_ms", "preprocess_ms", "compute_ms", "postprocess_ms", "compute_per_item_ms",
    "result_cache_hit_ratio", "kv_used_ratio", "kv_fragmentation_ratio", "kv_hit_ratio",
    "gpu_memory_bytes", "gpu_utilisation_ratio",
    "input_tokens_mean", "output_tokens_mean",
)
#: the fields holding one number
VALUE_FIELDS = ("oom_killed_containers", "restarted_containers", "oom_warnings", "revision_age_seconds", "model_health")
#: the fields holding one flag
FLAG_FIELDS = ("revision_changed",)
#: the fields holding a number per pod
POD_FIELDS = ("pod_p99_ms", "pod_compute_per_item_ms")
#: fields about the evidence rather than of it
_BOOKKEEPING = ("now_seconds", "missing_why")


@dataclass(frozen=True)
class Evidence:
    """The numbers behind a diagnosis. Build it with `gather.gather_evidence` or by hand."""

    # -- load ----------------------------------------------------------------
    #: requests served per second (every status code)
    rate_rps: Pair | None = None
    #: requests per second per pod, the mean over the pods that served in the window
    rate_per_pod_rps: Pair | None = None
    #: items waiting for a batch, summed over the pool's pods (mean over the window)
    queue_depth: Pair | None = None
    #: items per model batch (mean)
    batch_size_mean: Pair | None = None
    #: share of requests answered 5xx or 429
    error_ratio: Pair | None = None
    # -- where a request's time goes: mean per request, by stage ---------------
    queue_wait_ms: Pair | None = None
    preprocess_ms: Pair | None = None
    #: the compute time of the batch a request rode in
    compute_ms: Pair | None = None
    postprocess_ms: Pair | None = None
    #: device time per item computed: what one item costs the device
    compute_per_item_ms: Pair | None = None
    #: the operator's latency model: the pool's latency over what the model predicts at its load (1: healthy)
    model_health: float | None = None
    # -- pods ----------------------------------------------------------------
    #: each pod's p99 total latency now, by pod name
    pod_p99_ms: Mapping[str, float] | None = None
    #: each pod's device time per item computed now, by pod name
    pod_compute_per_item_ms: Mapping[str, float] | None = None
    # -- caches --------------------------------------------------------------
    #: result-cache hits / (hits + misses)
    result_cache_hit_ratio: Pair | None = None
    #: KV blocks used / (used + free), on the fullest pod
    kv_used_ratio: Pair | None = None
    #: share of allocated KV memory holding no token (partly filled blocks)
    kv_fragmentation_ratio: Pair | None = None
    #: prefix (KV) cache hits / lookups
    kv_hit_ratio: Pair | None = None
    # -- memory and the device -----------------------------------------------
    #: device memory the server allocated, on the pod that holds most
    gpu_memory_bytes: Pair | None = None
    #: share of time the device was busy
    gpu_utilisation_ratio: Pair | None = None
    #: containers of the pool whose last termination in the window was OOMKilled
    oom_killed_containers: float | None = None
    #: containers of the pool that restarted in the window
    restarted_containers: float | None = None
    #: out-of-memory warnings the pool's servers logged in the last minute (device allocations refused)
    oom_warnings: float | None = None
    # -- rollout -------------------------------------------------------------
    #: the pool's Deployment has a revision newer than its first
    revision_changed: bool | None = None
    #: seconds since that newest revision was created
    revision_age_seconds: float | None = None
    # -- request mix ---------------------------------------------------------
    #: tokens per input (prompt), mean
    input_tokens_mean: Pair | None = None
    #: tokens per output (completion), mean
    output_tokens_mean: Pair | None = None
    # -- bookkeeping ---------------------------------------------------------
    #: the "now" window's length, seconds (so a message says "in the last 10 s", not a guess)
    now_seconds: float | None = None
    #: why a field (or `field.now` / `field.before`) is missing, where known
    missing_why: Mapping[str, str] = field(default_factory=dict)

    def missing(self) -> tuple[str, ...]:
        """The names of the evidence fields that hold nothing at all."""
        return tuple(f.name for f in fields(self) if f.name not in _BOOKKEEPING and getattr(self, f.name) is None)

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (for the snapshot ConfigMap); NaN and ±inf become null."""
        out: dict[str, Any] = {}
        for name in PAIR_FIELDS:
            value = getattr(self, name)
            out[name] = None if value is None else [_number(v) for v in _two(value)]
        for name in VALUE_FIELDS:
            out[name] = _number(getattr(self, name))
        for name in FLAG_FIELDS:
            value = getattr(self, name)
            out[name] = value if isinstance(value, bool) else None
        for name in POD_FIELDS:
            value = getattr(self, name)
            out[name] = None if not isinstance(value, Mapping) else {str(k): _number(v) for k, v in sorted(value.items())}
        out["now_seconds"] = _number(self.now_seconds)
        out["missing_why"] = {str(k): str(v) for k, v in sorted((self.missing_why or {}).items())}
        return out

    @classmethod
    def from_json(cls, raw: Any) -> Evidence:
        """Read `to_json`'s output back. Lenient: unknown keys are ignored, and a value of the
        wrong shape becomes missing (with the reason in `missing_why`), never an exception,
        so an old or hand-edited snapshot still reads."""
        if not isinstance(raw, Mapping):
            return cls(missing_why={"evidence": f"not an object: {str(raw)[:80]}"})
        why = {str(k): str(v) for k, v in (raw.get("missing_why") or {}).items()} \
            if isinstance(raw.get("missing_why"), Mapping) else {}
        kwargs: dict[str, Any] = {}

        def unreadable(name: str, value: Any) -> None:
            why[name] = f"unreadable: {str(value)[:80]}"

        for name in PAIR_FIELDS:
            value = raw.get(name)
            if value is None:
                continue
            if isinstance(value, (list, tuple)) and len(value) == 2:
                kwargs[name] = (_number(value[0]), _number(value[1]))
            else:
                unreadable(name, value)
        for name in VALUE_FIELDS:
            value = raw.get(name)
            if value is not None:
                if _number(value) is None:
                    unreadable(name, value)
                else:
                    kwargs[name] = _number(value)
        for name in FLAG_FIELDS:
            value = raw.get(name)
            if isinstance(value, bool):
                kwargs[name] = value
            elif value is not None:
                unreadable(name, value)
        for name in POD_FIELDS:
            value = raw.get(name)
            if isinstance(value, Mapping):
                kwargs[name] = {str(k): v for k, v in ((k, _number(v)) for k, v in value.items()) if v is not None}
            elif value is not None:
                unreadable(name, value)
        now_seconds = _number(raw.get("now_seconds"))
        return cls(**kwargs, now_seconds=now_seconds if now_seconds and now_seconds > 0 else None, missing_why=why)


def _two(value: Any) -> tuple[Any, Any]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return value[0], value[1]
    return None, None


def _number(value: Any) -> float | None:
    """A finite number as float, else None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
