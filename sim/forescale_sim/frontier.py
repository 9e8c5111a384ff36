"""The peers' cost-violation curve and where Forescale sits against it.

A peer's cost and its violations both depend on its utilisation target, so
each peer at each `--peer-utilization` is one point (GPU-hours, violation
seconds), and Forescale's one point is compared with all of them:

- `V(g)`, `peer_violations_at_cost`: the fewest violation seconds of any peer
  point whose GPU-hours are <= g; where no point is that cheap, the cheapest
  point's.
- `G(v)`, `peer_cost_at_violations`: the fewest GPU-hours of any peer point
  with violation seconds <= v; where none has that few, the GPU-hours of the
  point with the fewest.

Pure functions: the benchmark (bench/frontier.py) feeds them replay results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class PeerPoint:
    """One peer at one utilisation target, on one trace."""

    policy: str
    utilization: float
    gpu_hours: float
    violation_seconds: float


def _require(points: Sequence[PeerPoint]) -> None:
    if not points:
        raise ValueError("the peer curve has no points")


def peer_violations_at_cost(points: Sequence[PeerPoint], gpu_hours: float) -> float:
    """V(g): the fewest violation seconds any peer reaches for at most `gpu_hours`."""
    _require(points)
    affordable = [p.violation_seconds for p in points if p.gpu_hours <= gpu_hours]
    if affordable:
        return min(affordable)
    # No point is that cheap: the cheapest point's (the fewer violations on a tie).
    return min(points, key=lambda p: (p.gpu_hours, p.violation_seconds)).violation_seconds


def peer_cost_at_violations(points: Sequence[PeerPoint], violation_seconds: float) -> float:
    """G(v): the fewest GPU-hours any peer needs for at most `violation_seconds`."""
    _require(points)
    good_enough = [p.gpu_hours for p in points if p.violation_seconds <= violation_seconds]
    if good_enough:
        return min(good_enough)
    # None has that few: the point with the fewest (the cheaper on a tie).
    return min(points, key=lambda p: (p.violation_seconds, p.gpu_hours)).gpu_hours
