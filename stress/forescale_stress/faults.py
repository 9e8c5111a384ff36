"""Parsing of `--fault` and `--degrade` specs.

A spec is a comma-separated list of `key=value` items and bare flags, for
example `at=30s,latency_ms=200,seconds=20` or `at=90s,cache_flush`. Each spec
names exactly one kind. Parsing happens once, before any load is sent, so a
typo never surfaces half-way through a run.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from forescale_profiles.precision import PRECISIONS
from forescale_stress.errors import StressError

#: fault kind -> the spec key that selects it
FAULT_KINDS = ("latency_ms", "slowdown", "cache_flush", "leak_mb", "kv_fragmentation", "memory_pressure",
               "input_scale", "kill")
#: kinds whose effect lasts `seconds`; the others act at one instant
TIMED_KINDS = ("latency_ms", "slowdown", "memory_pressure", "input_scale")
#: kinds this tool carries out itself, without the server's admin API: a process kill, and a
#: request-mix shift (`input_scale`: inputs this many times longer for `seconds`)
CLIENT_KINDS = ("kill", "input_scale")
#: the longest inputs `input_scale` (and `--input-scale`) may ask for: the server refuses inputs
#: over 8,192 characters, and the stress inputs are up to ~16 words of ~7 characters
MAX_INPUT_SCALE = 64.0
SIGNALS = ("kill", "term")
#: `warmup` without a number warms this many of the most frequent recent inputs
DEFAULT_WARMUP_TOP = 100

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m)?\s*$")


def parse_duration(text: str, what: str) -> float:
    """Seconds from `30`, `30s`, `1.5s`, `500ms` or `2m`; raises StressError."""
    match = _DURATION.match(text)
    if not match:
        raise StressError(f"{what}: {text!r} is not a duration (examples: 30s, 500ms, 2m)")
    value = float(match.group(1))
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[match.group(2)]
    return value * scale


def _items(spec: str, what: str) -> dict[str, str | None]:
    """Split `a=1,b,c=x` into {a: "1", b: None, c: "x"}, refusing duplicates."""
    if not spec or not spec.strip():
        raise StressError(f"{what}: empty spec")
    items: dict[str, str | None] = {}
    for raw in spec.split(","):
        part = raw.strip()
        if not part:
            raise StressError(f"{what} {spec!r}: empty item between commas")
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if key in items:
            raise StressError(f"{what} {spec!r}: {key!r} given twice")
        items[key] = value.strip() if sep else None
    return items


def _number(value: str | None, key: str, what: str, *, positive: bool = True) -> float:
    if value is None or value == "":
        raise StressError(f"{what}: {key} needs a value ({key}=N)")
    try:
        number = float(value)
    except ValueError:
        raise StressError(f"{what}: {key}={value!r} is not a number") from None
    if not math.isfinite(number) or (positive and number <= 0):
        raise StressError(f"{what}: {key} must be a {'positive' if positive else 'finite'} number, got {value}")
    return number


def _at(items: dict[str, str | None], what: str) -> float:
    if "at" not in items:
        raise StressError(f"{what}: missing at=<time> (for example at=30s)")
    value = items.pop("at")
    if value is None:
        raise StressError(f"{what}: at needs a value (for example at=30s)")
    return parse_duration(value, f"{what}: at")


@dataclass(frozen=True)
class FaultSpec:
    """One scheduled fault. `at` counts from the start of the load."""

    text: str
    kind: str
    at: float
    seconds: float = 0.0
    value: float | None = None
    pid: int | None = None
    signal: str = "kill"

    @property
    def end(self) -> float:
        """When the fault stops acting (its start for instantaneous faults)."""
        return self.at + self.seconds

    def admin_body(self) -> dict | None:
        """The body for `POST /admin/faults`; None for a process kill."""
        if self.kind == "latency_ms":
            return {"latency_ms": self.value, "seconds": self.seconds}
        if self.kind == "slowdown":
            return {"slowdown": self.value, "seconds": self.seconds}
        if self.kind == "cache_flush":
            return {"cache_flush": True}
        if self.kind == "leak_mb":
            return {"leak_mb": int(self.value)}
        if self.kind == "kv_fragmentation":
            return {"kv_fragmentation": self.value}
        if self.kind == "memory_pressure":
            return {"memory_pressure": self.value, "seconds": self.seconds}
        return None

    def label(self) -> str:
        """A short, stable description for tables and JSON."""
        at = f"at={self.at:g}s"
        if self.kind == "latency_ms":
            return f"latency_ms={self.value:g} {at} for {self.seconds:g}s"
        if self.kind in ("slowdown", "memory_pressure", "input_scale"):
            return f"{self.kind}={self.value:g} {at} for {self.seconds:g}s"
        if self.kind in ("kv_fragmentation",):
            return f"{self.kind}={self.value:g} {at}"
        if self.kind == "leak_mb":
            return f"leak_mb={self.value:g} {at}"
        if self.kind == "kill":
            return f"kill pid={self.pid} {at}" if self.pid else f"kill {at}"
        return f"{self.kind} {at}"


def parse_fault(spec: str, kill_pid: int | None = None) -> FaultSpec:
    """Parse one `--fault` spec; `kill_pid` (from `--kill-pid`) is the default
    target of a `kill` fault. Raises StressError naming the problem."""
    what = f"--fault {spec!r}"
    items = _items(spec, "--fault")
    at = _at(items, what)
    kinds = [key for key in items if key in FAULT_KINDS]
    if len(kinds) != 1:
        found = ", ".join(kinds) if kinds else "none"
        strangers = [key for key in items if key not in FAULT_KINDS and key not in ("seconds", "pid", "signal")]
        unknown = f"; {', '.join(map(repr, strangers))} is not a fault kind" if strangers and not kinds else ""
        raise StressError(f"{what}: name exactly one fault kind of {', '.join(FAULT_KINDS)} (found {found}){unknown}")
    kind = kinds[0]
    allowed = {kind, "seconds"} if kind in TIMED_KINDS else {kind}
    if kind == "kill":
        allowed |= {"pid", "signal"}
    unknown = sorted(set(items) - allowed)
    if unknown:
        raise StressError(f"{what}: {', '.join(unknown)} not allowed with {kind}")
    seconds = 0.0
    value: float | None = None
    pid: int | None = None
    signal = "kill"
    if kind in TIMED_KINDS:
        if "seconds" not in items:
            raise StressError(f"{what}: {kind} needs seconds=<duration>")
        seconds = parse_duration(items["seconds"] or "", f"{what}: seconds")
        if seconds <= 0:
            raise StressError(f"{what}: seconds must be > 0")
        value = _number(items[kind], kind, what)
        if kind == "slowdown" and value < 1:
            raise StressError(f"{what}: slowdown is a factor >= 1 (2.5 means 2.5x slower), got {value:g}")
        if kind == "memory_pressure" and value > 1:
            raise StressError(f"{what}: memory_pressure is the share of the device's room held, in (0, 1], got {value:g}")
        if kind == "input_scale":
            value = check_input_scale(value, f"{what}: input_scale")
    elif kind == "cache_flush":
        if items[kind] not in (None, "true", "1"):
            raise StressError(f"{what}: cache_flush is a flag (write just cache_flush)")
    elif kind == "kv_fragmentation":
        value = _number(items[kind], kind, what, positive=False)
        if not 0 <= value <= 1:
            raise StressError(f"{what}: kv_fragmentation is the share of the KV pool to leak, 0 to 1 (0 gives it back), got {value:g}")
    elif kind == "leak_mb":
        value = _number(items[kind], kind, what)
        if value != int(value):
            raise StressError(f"{what}: leak_mb must be a whole number of MB")
    else:  # kill
        if items["kill"] is not None:
            raise StressError(f"{what}: kill is a flag; name the process with pid=N or --kill-pid")
        if "pid" in items:
            pid = _pid(items["pid"], what)
        else:
            pid = kill_pid
        if pid is None:
            raise StressError(f"{what}: kill needs a process: add pid=N or pass --kill-pid PID")
        signal = (items.get("signal") or "kill").lower()
        if signal not in SIGNALS:
            raise StressError(f"{what}: signal must be one of {', '.join(SIGNALS)}")
    return FaultSpec(text=spec, kind=kind, at=at, seconds=seconds, value=value, pid=pid, signal=signal)


def check_input_scale(value: float, name: str) -> float:
    """How many times longer inputs are: finite, > 0 and at most MAX_INPUT_SCALE; `name` is what the error names."""
    if not math.isfinite(value) or not 0 < value <= MAX_INPUT_SCALE:
        raise StressError(f"{name} must be a number in (0, {MAX_INPUT_SCALE:g}], got {value:g}")
    return value


def _pid(value: str | None, what: str) -> int:
    if value is None or not value.strip().isdigit() or int(value) < 2:
        raise StressError(f"{what}: pid must be a process id > 1, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class DegradeSpec:
    """One degradation action to measure: a precision switch or a warm-up."""

    text: str
    action: str  # "precision" | "warmup"
    at: float
    precision: str | None = None
    top: int | None = None

    def admin_path(self) -> str:
        return "/admin/precision" if self.action == "precision" else "/admin/warmup"

    def admin_body(self) -> dict:
        if self.action == "precision":
            return {"precision": self.precision}
        return {"top": self.top}

    def label(self) -> str:
        if self.action == "precision":
            return f"precision={self.precision}"
        return f"warmup top={self.top}"


def parse_degrade(spec: str) -> DegradeSpec:
    """Parse one `--degrade` spec: `at=60s,precision=int8` or `at=60s,warmup[=N]`."""
    what = f"--degrade {spec!r}"
    items = _items(spec, "--degrade")
    at = _at(items, what)
    actions = [key for key in items if key in ("precision", "warmup")]
    if len(actions) != 1 or len(items) != 1:
        raise StressError(f"{what}: name exactly one action, precision=<{'|'.join(PRECISIONS)}> or warmup[=N]")
    if actions[0] == "precision":
        precision = (items["precision"] or "").lower()
        if precision not in PRECISIONS:
            raise StressError(f"{what}: precision must be one of {', '.join(PRECISIONS)}")
        return DegradeSpec(text=spec, action="precision", at=at, precision=precision)
    raw = items["warmup"]
    top = DEFAULT_WARMUP_TOP
    if raw is not None:
        if not raw.isdigit() or int(raw) < 1:
            raise StressError(f"{what}: warmup=N needs a whole number >= 1, got {raw!r}")
        top = int(raw)
    return DegradeSpec(text=spec, action="warmup", at=at, top=top)
