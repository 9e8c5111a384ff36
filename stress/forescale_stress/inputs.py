"""Request inputs.

By default every request carries a distinct input, so a result cache never
answers and the ramp measures compute, not the cache's hit ratio (which grows
as the cache fills and would make later, faster steps look cheaper). With
`--distinct-inputs N` the inputs are N fixed sentences drawn with Zipf
popularity, so a cache sees realistic hits and a cache flush or a warm-up
has something to change."""

from __future__ import annotations

import itertools
import random

from forescale_stress.target import request_body

_WORDS = (
    "latency forecast replica gateway tensor batch precision cache warm spike pool traffic "
    "incident queue token prompt vector cluster scaling kernel memory throughput window"
).split()


def sentences(count: int, seed: int) -> list[str]:
    """`count` distinct sentences, the same for the same seed."""
    rng = random.Random(seed)
    return [f"{i} " + " ".join(rng.choice(_WORDS) for _ in range(8 + i % 9)) for i in range(count)]


class InputPicker:
    """Request bodies: all distinct when `distinct` is 0; otherwise drawn from
    `distinct` pre-encoded inputs, input k with weight 1/(k+1)^zipf."""

    def __init__(self, kind: str, model: str, distinct: int, zipf: float, seed: int):
        self._kind, self._model = kind, model
        self._texts = sentences(distinct or 64, seed)
        self._bodies = [request_body(kind, model, text) for text in self._texts] if distinct else []
        self._cum = list(itertools.accumulate(1.0 / (k + 1) ** zipf for k in range(distinct)))
        self._rng = random.Random(seed + 1)
        self._serial = itertools.count()

    def next(self) -> bytes:
        """The body of the next request."""
        if not self._bodies:
            n = next(self._serial)
            return request_body(self._kind, self._model, f"{self._texts[n % len(self._texts)]} #{n}")
        return self._rng.choices(self._bodies, cum_weights=self._cum, k=1)[0]
