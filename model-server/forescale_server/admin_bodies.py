"""Parsing of the admin API's bodies; a bad body is a 400 naming the field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forescale_profiles.precision import PRECISIONS

from .errors import bad_request
from .input_text import check_encodable

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MAX_SECONDS = 86_400


def _number(body: dict, key: str, lo: float, hi: float) -> float:
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise bad_request(f"'{key}' must be a number from {lo:g} to {hi:g}, got {value!r}", key)
    return float(value)


def _integer(body: dict, key: str, lo: int, hi: int) -> int:
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise bad_request(f"'{key}' must be an integer from {lo} to {hi}, got {value!r}", key)
    return value


def _only(body: dict, allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise bad_request(f"unknown field(s) {', '.join(map(repr, unknown))}; expected {', '.join(sorted(allowed))}", unknown[0])


def parse_precision(body: dict[str, Any]) -> str:
    """`{"precision": "int8"}`."""
    _only(body, {"precision"})
    value = body.get("precision")
    if not isinstance(value, str) or value.lower() not in PRECISIONS:
        raise bad_request(f"unknown precision {value!r}; expected one of {', '.join(PRECISIONS)}")
    return value.lower()


@dataclass(frozen=True)
class WarmupRequest:
    inputs: list[str] | None = None
    top: int | None = None


def parse_warmup(body: dict[str, Any], max_items: int, max_chars: int) -> WarmupRequest:
    """`{"inputs": [...]}` or `{"top": N}`, exactly one of them."""
    _only(body, {"inputs", "top"})
    if ("inputs" in body) == ("top" in body):
        raise bad_request("give exactly one of 'inputs' (a list of strings) or 'top' (an integer)")
    if "top" in body:
        return WarmupRequest(top=_integer(body, "top", 1, max_items))
    inputs = body["inputs"]
    if not isinstance(inputs, list) or not inputs or not all(isinstance(x, str) and x.strip() for x in inputs):
        raise bad_request("'inputs' must be a non-empty list of non-empty strings")
    if len(inputs) > max_items:
        raise bad_request(f"'inputs' has {len(inputs)} items; the limit is {max_items}")
    too_long = [i for i, x in enumerate(inputs) if len(x) > max_chars]
    if too_long:
        raise bad_request(f"'inputs[{too_long[0]}]' is over the {max_chars}-character limit")
    for i, text in enumerate(inputs):
        check_encodable(f"inputs[{i}]", text)
    return WarmupRequest(inputs=inputs)


@dataclass(frozen=True)
class LogLevelRequest:
    level: str
    seconds: float


def parse_log_level(body: dict[str, Any]) -> LogLevelRequest:
    """`{"level": "DEBUG", "seconds": 300}`; `seconds` defaults to 300."""
    _only(body, {"level", "seconds"})
    level = body.get("level")
    if not isinstance(level, str) or level.upper() not in LOG_LEVELS:
        raise bad_request(f"unknown log level {level!r}; expected one of {', '.join(LOG_LEVELS)}")
    seconds = _number(body, "seconds", 1, MAX_SECONDS) if "seconds" in body else 300.0
    return LogLevelRequest(level=level.upper(), seconds=seconds)


def parse_profile(body: dict[str, Any]) -> tuple[int, float]:
    """`{"requests": N}` (1..1000), optional `timeout_seconds` (default 30)."""
    _only(body, {"requests", "timeout_seconds"})
    if "requests" not in body:
        raise bad_request("'requests' is required")
    requests = _integer(body, "requests", 1, 1000)
    timeout = _number(body, "timeout_seconds", 0.1, 600) if "timeout_seconds" in body else 30.0
    return requests, timeout


#: the fault kinds of `POST /admin/faults`, each the one key that selects it
FAULT_KINDS = ("latency_ms", "slowdown", "cache_flush", "leak_mb", "kv_fragmentation", "memory_pressure", "clear")
#: kinds that last `seconds`
TIMED_FAULTS = ("latency_ms", "slowdown", "memory_pressure")


@dataclass(frozen=True)
class FaultRequest:
    latency_ms: float | None = None
    slowdown: float | None = None
    seconds: float | None = None
    cache_flush: bool = False
    leak_mb: int | None = None
    #: share of the KV pool's blocks to leak (0 gives the leaked blocks back)
    kv_fragmentation: float | None = None
    #: share of the device's room held, refusing the batches that do not fit (0 lifts it)
    memory_pressure: float | None = None
    clear: bool = False


def parse_fault(body: dict[str, Any], max_leak_mb: int) -> FaultRequest:
    """One of `{"latency_ms": X, "seconds": S}`, `{"slowdown": F, "seconds": S}`,
    `{"memory_pressure": share, "seconds": S}`, `{"cache_flush": true}` (with `"seconds": S`, the cache
    also holds nothing for S seconds: a cache that stopped working), `{"leak_mb": N}`
    (0 frees what was leaked), `{"kv_fragmentation": share}` (0 gives the blocks back) or
    `{"clear": true}`."""
    kinds = [k for k in FAULT_KINDS if k in body]
    expected = ", ".join(repr(k) for k in FAULT_KINDS)
    if not kinds:
        unknown = sorted(set(body) - {"seconds"})
        if unknown:
            raise bad_request(f"unknown fault {', '.join(map(repr, unknown))}; expected one of {expected}", unknown[0])
        raise bad_request(f"give exactly one of {expected}")
    if len(kinds) > 1:
        raise bad_request(f"give exactly one of {expected}; got {', '.join(map(repr, kinds))}")
    kind = kinds[0]
    if kind in TIMED_FAULTS:
        _only(body, {kind, "seconds"})
        if "seconds" not in body:
            raise bad_request(f"'{kind}' needs 'seconds' (how long the fault lasts)", "seconds")
        seconds = _number(body, "seconds", 0.1, MAX_SECONDS)
        if kind == "latency_ms":
            return FaultRequest(latency_ms=_number(body, "latency_ms", 0, 60_000), seconds=seconds)
        if kind == "slowdown":
            return FaultRequest(slowdown=_number(body, "slowdown", 1.0, 100.0), seconds=seconds)
        return FaultRequest(memory_pressure=_number(body, "memory_pressure", 0, 1), seconds=seconds)
    if kind == "cache_flush" and "seconds" in body:
        _only(body, {kind, "seconds"})
        if body[kind] is not True:
            raise bad_request(f"'{kind}' must be true", kind)
        return FaultRequest(cache_flush=True, seconds=_number(body, "seconds", 0.1, MAX_SECONDS))
    _only(body, {kind})
    if kind == "leak_mb":
        return FaultRequest(leak_mb=_integer(body, "leak_mb", 0, max_leak_mb))
    if kind == "kv_fragmentation":
        return FaultRequest(kv_fragmentation=_number(body, "kv_fragmentation", 0, 1))
    if body[kind] is not True:
        raise bad_request(f"'{kind}' must be true", kind)
    return FaultRequest(cache_flush=kind == "cache_flush", clear=kind == "clear")
