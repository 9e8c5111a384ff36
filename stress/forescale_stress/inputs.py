"""Request inputs.

By default every request carries a distinct input, so a result cache never
answers and the ramp measures compute, not the cache's hit ratio (which grows
as the cache fills and would make later, faster steps look cheaper). With
`--distinct-inputs N` the inputs are N fixed sentences drawn with Zipf
popularity, so a cache sees realistic hits and a cache flush or a warm-up
has something to change.

`--input-scale X` (and the `input_scale` fault, for a shift in the middle of
a run) makes every input X times longer in words: a request-mix shift, as
when users start sending whole documents. Longer inputs are new inputs to a
result cache, as new users' inputs are."""

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


def lengthen(text: str, scale: float) -> str:
    """`text` with round(words x scale) words (at least one), its words repeated in order."""
    words = text.split()
    count = max(1, round(len(words) * scale))
    return " ".join(itertools.islice(itertools.cycle(words), count))


class InputPicker:
    """Request bodies: all distinct when `distinct` is 0; otherwise drawn from
    `distinct` pre-encoded inputs, input k with weight 1/(k+1)^zipf. `scale`
    lengthens every input (`set_scale` changes it while the load runs)."""

    def __init__(self, kind: str, model: str, distinct: int, zipf: float, seed: int, scale: float = 1.0):
        self._kind, self._model = kind, model
        self._texts = sentences(distinct or 64, seed)
        self._distinct = distinct
        self._by_scale: dict[float, list[bytes]] = {}
        self._cum = list(itertools.accumulate(1.0 / (k + 1) ** zipf for k in range(distinct)))
        self._rng = random.Random(seed + 1)
        self._serial = itertools.count()
        self.set_scale(scale)

    @property
    def scale(self) -> float:
        return self._scale

    def set_scale(self, scale: float) -> None:
        """Inputs `scale` times longer from the next request on (1: as generated)."""
        if not scale > 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self._scale = scale
        if self._distinct and scale not in self._by_scale:
            self._by_scale[scale] = [request_body(self._kind, self._model, lengthen(t, scale)) for t in self._texts]
        self._bodies = self._by_scale.get(scale, [])

    def next(self) -> bytes:
        """The body of the next request."""
        if not self._bodies:
            n = next(self._serial)
            return request_body(self._kind, self._model, f"{lengthen(self._texts[n % len(self._texts)], self._scale)} #{n}")
        return self._rng.choices(self._bodies, cum_weights=self._cum, k=1)[0]
