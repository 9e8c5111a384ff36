"""Incidents injected into a replay, and the `--incidents` spec language.

    slowdown:pool=a,factor=2.5,start=1200,seconds=300;crash:pool=a,pods=1,start=2000

- `slowdown`: every pod of the pool serves `factor` times slower from
  `start` for `seconds` (the KV-cache fragmentation case of the seeds).
- `crash`: `pods` ready pods of the pool die at `start`; their in-flight
  requests fail and the Deployment reschedules them (start-up again).
- `none` (or an empty spec): no incident, a control run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .errors import IncidentSpecError

KINDS = {
    "slowdown": {"required": ("start",), "defaults": {"pool": "a", "factor": 2.5, "seconds": 300.0}},
    "crash": {"required": ("start",), "defaults": {"pool": "a", "pods": 1}},
}


@dataclass(frozen=True)
class Incident:
    """One injected incident; times in seconds from the trace start."""

    kind: str
    pool: str
    start: float
    factor: float = 1.0
    seconds: float = 0.0
    pods: int = 0

    def to_dict(self) -> dict:
        """The JSON form (only the keys that apply to the kind)."""
        d = asdict(self)
        keep = {"slowdown": ("kind", "pool", "factor", "start", "seconds"), "crash": ("kind", "pool", "pods", "start")}[self.kind]
        return {k: d[k] for k in keep}


def _number(kind: str, key: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise IncidentSpecError(f"incident {kind!r}: {key}={text!r} is not a number") from None
    if not np.isfinite(value):
        raise IncidentSpecError(f"incident {kind!r}: {key} must be finite, got {text!r}")
    return value


def parse_incidents(spec: str) -> list[Incident]:
    """Parse an `--incidents` spec; IncidentSpecError says what is wrong and where."""
    spec = (spec or "").strip()
    if spec in ("", "none"):
        return []
    out: list[Incident] = []
    for part in (p.strip() for p in spec.split(";")):
        if not part:
            continue
        kind, sep, rest = part.partition(":")
        kind = kind.strip()
        if kind not in KINDS:
            raise IncidentSpecError(f"incident {part!r}: unknown kind {kind!r}; expected one of {', '.join(KINDS)} (e.g. slowdown:pool=a,factor=2.5,start=1200,seconds=300)")
        fields: dict[str, str] = {}
        for item in (i.strip() for i in rest.split(",") if sep and i.strip()):
            key, eq, value = item.partition("=")
            if not eq or not key.strip() or not value.strip():
                raise IncidentSpecError(f"incident {part!r}: {item!r} is not key=value")
            fields[key.strip()] = value.strip()
        allowed = set(KINDS[kind]["required"]) | set(KINDS[kind]["defaults"])
        unknown = sorted(set(fields) - allowed)
        if unknown:
            raise IncidentSpecError(f"incident {part!r}: unknown key(s) {', '.join(unknown)}; {kind} takes {', '.join(sorted(allowed))}")
        missing = [k for k in KINDS[kind]["required"] if k not in fields]
        if missing:
            raise IncidentSpecError(f"incident {part!r}: missing {', '.join(missing)}")
        values = {**KINDS[kind]["defaults"], **fields}
        pool = str(values["pool"])
        if pool not in ("a", "b"):
            raise IncidentSpecError(f"incident {part!r}: pool must be a or b, got {pool!r}")
        start = _number(kind, "start", str(values["start"]))
        if start < 0:
            raise IncidentSpecError(f"incident {part!r}: start must be >= 0, got {start:g}")
        if kind == "slowdown":
            factor = _number(kind, "factor", str(values["factor"]))
            seconds = _number(kind, "seconds", str(values["seconds"]))
            if factor <= 0 or seconds <= 0:
                raise IncidentSpecError(f"incident {part!r}: factor and seconds must be > 0")
            out.append(Incident("slowdown", pool, start, factor=factor, seconds=seconds))
        else:
            pods = _number(kind, "pods", str(values["pods"]))
            if pods < 1 or pods != int(pods):
                raise IncidentSpecError(f"incident {part!r}: pods must be a whole number >= 1, got {values['pods']!r}")
            out.append(Incident("crash", pool, start, pods=int(pods)))
    return sorted(out, key=lambda i: i.start)


def default_incidents(duration_seconds: float, seed: int = 0) -> list[Incident]:
    """The default incident: one slowdown of pool A by 2.5x for 300 s, starting at a
    seeded random whole second in the middle third of the trace."""
    rng = np.random.default_rng(seed)
    lo, hi = duration_seconds / 3.0, 2.0 * duration_seconds / 3.0
    start = float(int(rng.uniform(lo, hi)))
    return [Incident("slowdown", "a", start, factor=2.5, seconds=300.0)]
