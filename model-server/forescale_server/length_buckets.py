"""Splitting a batch by length, so short inputs are not padded to the longest.

An encoder's cost grows with the padded batch (items x longest length), and
each extra forward call has a fixed cost. Over the lengths sorted, the
cheapest split into contiguous groups minimises
`sum(overhead_tokens + len(group) * longest(group))` (an O(n^2) dynamic
programme; n <= max batch).
"""

from __future__ import annotations


def length_groups(lengths: list[int], overhead_tokens: int = 64) -> list[list[int]]:
    """Indices of `lengths` grouped for separate forward passes, shortest group first."""
    if not lengths:
        return []
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: cheapest cost of the first j sorted items
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        longest = lengths[order[j - 1]]
        for i in range(j):
            cost = best[i] + overhead_tokens + (j - i) * longest
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]
