"""Request inputs: a fixed set of distinct sentences drawn with Zipf-like
popularity, so a result cache sees realistic hits (and a cache flush or a
warm-up has something to change), while most requests still cost compute."""

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
    """Draws pre-encoded request bodies: input k has weight 1/(k+1)^zipf."""

    def __init__(self, kind: str, model: str, distinct: int, zipf: float, seed: int):
        self._bodies = [request_body(kind, model, text) for text in sentences(distinct, seed)]
        self._cum = list(itertools.accumulate(1.0 / (k + 1) ** zipf for k in range(distinct)))
        self._rng = random.Random(seed + 1)

    def next(self) -> bytes:
        """The body of the next request."""
        return self._rng.choices(self._bodies, cum_weights=self._cum, k=1)[0]
