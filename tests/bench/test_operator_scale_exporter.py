"""bench/operator_scale.py's synthetic exporter: in the closed loop (the run's default) latency follows each
pod's load, so the operator's scaling acts on what it reads; the open loop (`--open-loop`) ignores the replicas.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from bench.operator_scale import Exporter


def _median_latency(exporter: Exporter, resource: int, pool: int) -> float:
    """The median the exporter's histogram says, from its bucket counts (the first bound past half)."""
    counts, total = exporter.counts[resource, pool], exporter.total[resource, pool]
    return float(exporter.buckets[int((counts >= total / 2).argmax())])


def _scraped(exporter: Exporter, replicas: dict[str, list[int]] | None, path: Path | None) -> Exporter:
    if path is not None and replicas is not None:
        path.write_text(json.dumps(replicas))
    exporter.last -= 60.0  # a minute of traffic, at once
    exporter.advance()
    return exporter


@pytest.mark.parametrize("a_pods, slower_than_at_20", [(1, True), (2, True), (20, False)])
def test_closed_loop_latency_falls_as_the_pool_grows(tmp_path: Path, a_pods: int, slower_than_at_20: bool) -> None:
    path = tmp_path / "replicas.json"
    at = {}
    for pods in (a_pods, 20):
        exporter = Exporter(4, 2, replicas_file=path)
        _scraped(exporter, {"svc-0000": [pods, 1]}, path)
        at[pods] = _median_latency(exporter, 0, 0)
    assert (at[a_pods] > at[20]) is slower_than_at_20, at


def test_closed_loop_reads_each_pool_and_keeps_the_last_replicas_when_the_file_is_bad(tmp_path: Path) -> None:
    path = tmp_path / "replicas.json"
    exporter = Exporter(3, 1, replicas_file=path)
    path.write_text(json.dumps({"svc-0001": [7, 3], "not-ours": [9, 9]}))
    exporter.read_replicas()
    assert exporter.replicas.tolist() == [[2, 1], [7, 3], [2, 1]]  # the others stay at their minReplicas
    path.write_text("{half a file")
    exporter.replicas_read = 0.0
    exporter.read_replicas()
    assert exporter.replicas.tolist()[1] == [7, 3]


def test_closed_loop_queue_depth_is_littles_law_on_the_wait(tmp_path: Path) -> None:
    path = tmp_path / "replicas.json"
    exporter = _scraped(Exporter(2, 1, replicas_file=path), {"svc-0000": [1, 1], "svc-0001": [40, 10]}, path)
    page = exporter.text()
    queue = {m.group(1): float(m.group(2)) for m in re.finditer(
        r'forescale_queue_depth\{namespace="bench-0",deployment="(svc-000\d)",pool="a"[^}]*\} (\S+)', page)}
    assert queue["svc-0000"] > queue["svc-0001"] >= 0


def test_open_loop_ignores_the_replicas() -> None:
    one, many = Exporter(2, 1), Exporter(2, 1)
    many.replicas[:] = 40
    for exporter in (one, many):
        _scraped(exporter, None, None)
    assert math.isclose(_median_latency(one, 0, 0), _median_latency(many, 0, 0))


class _Prom:
    def __init__(self, values: list[str]) -> None:
        self.values, self.asked = values, []

    def query(self, promql: str) -> list[dict]:
        self.asked.append(promql)
        return [{"metric": {"deployment": f"svc-{i}"}, "value": [0, v]} for i, v in enumerate(self.values)]


@pytest.mark.parametrize("values, within", [
    (["0.05", "0.2", "0.21"], 2),  # at the target is within
    (["NaN", "0.1"], 1),           # no requests in the window: not counted as within
    ([], 0),
])
def test_within_slo_counts_pool_a_p99_at_the_target(values: list[str], within: int) -> None:
    from bench.operator_scale import within_slo

    prom = _Prom(values)
    found = within_slo(prom)
    assert found == {"resources": len(values), "within": within, "target_ms": 200.0}
    assert 'pool="a"' in prom.asked[0] and "histogram_quantile(0.99" in prom.asked[0]
