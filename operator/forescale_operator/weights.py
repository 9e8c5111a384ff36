"""The traffic split between pool A and pool B, in percent."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Weights:
    a: int = 100
    b: int = 0

    def __post_init__(self) -> None:
        if not (0 <= self.a <= 100 and 0 <= self.b <= 100 and self.a + self.b == 100):
            raise ValueError(f"weights must be 0..100 and sum to 100, got a={self.a} b={self.b}")

    def __str__(self) -> str:
        return f"{self.a}/{self.b}"

    def as_dict(self) -> dict[str, int]:
        """`{"a": 80, "b": 20}`: the per-pool form status and the operator's series take."""
        return {"a": self.a, "b": self.b}


#: all traffic on pool A: where every route starts and every cut-back ends
ALL_ON_A = Weights(100, 0)
