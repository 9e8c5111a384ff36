"""The share of requests over the SLO target, from a latency histogram's buckets."""

from __future__ import annotations

import math
import shutil
import subprocess

import pytest
import yaml

from forescale_operator.readings import grouped_queries as gq
from forescale_operator.readings.slo_share import over_target, weighted
from forescale_predictor.presets import PRESETS

INF = math.inf
#: 10 req/s served: 6 within 0.1 s, 9 within 0.3 s, all 10 within 1 s
HIST = [(0.1, 6.0), (0.3, 9.0), (1.0, 10.0), (INF, 10.0)]

CASES = {
    "the target inside a bucket: linear in it": (HIST, 0.2, None, 1 - 7.5 / 10),
    "the target on a bound": (HIST, 0.3, None, 0.1),
    "the target under the first bound: a share of the first bucket": (HIST, 0.05, None, 1 - 3.0 / 10),
    "the target past the last finite bound: what is above it is over": ([(0.1, 6.0), (INF, 10.0)], 5.0, None, 0.4),
    "the failed are over, whatever their time": (HIST, 0.3, 0.5, 0.5 + 0.5 * 0.1),
    "in any order": (list(reversed(HIST)), 0.2, None, 0.25),
    "a counter reset makes a bucket dip: never below the last": ([(0.1, 6.0), (0.3, 5.0), (INF, 10.0)], 0.3, None, 0.4),
    "nothing served, some failed": ([(0.1, 0.0), (INF, 0.0)], 0.2, 0.3, 0.3),
    "nothing served, nothing failed": ([(0.1, 0.0), (INF, 0.0)], 0.2, 0.0, None),
    "no histogram, nothing failed": ([], 0.2, None, None),
    "no histogram, all failed": ([], 0.2, 1.0, 1.0),
    "NaN buckets are dropped": ([(0.1, math.nan), (0.3, 9.0), (INF, 10.0)], 0.3, None, 0.1),
    "a NaN error rate is no error rate": (HIST, 0.3, math.nan, 0.1),
}


@pytest.mark.parametrize("buckets, target, errors, expected", CASES.values(), ids=CASES.keys())
def test_the_share_over_the_target(buckets, target, errors, expected):
    got = over_target(buckets, target, errors)
    assert got == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize("shares, expected", [
    ([(0.2, 20.0), (0.0, 5.0)], 0.16),
    ([(0.2, 20.0), (None, 5.0)], 0.2),      # a pool without a share does not count
    ([(0.2, 0.0), (0.5, None)], None),      # no pool with traffic and a share
    ([], None),
])
def test_pools_are_weighted_by_their_rates(shares, expected):
    got = weighted(shares)
    assert got == (None if expected is None else pytest.approx(expected))


# -- the bucket queries evaluated by Prometheus' own engine (`promtool test rules`) ----------------------

def test_the_bucket_queries_give_one_rate_per_bound_on_series_shaped_like_the_servers(tmp_path):
    """Pool a of ml/chat served 10 req/s for 10 minutes: 6 within 0.1 s, 9 within 0.3 s. The per-resource
    preset query and the grouped one both give one series per bound, with the rates the share is read from."""
    if shutil.which("promtool") is None:
        pytest.skip("promtool (Debian's prometheus) is not installed")
    labels = 'namespace="ml",deployment="chat",pool="a",precision="fp16",pod="chat-a-1",stage="total"'
    series = [{"series": f'forescale_request_duration_seconds_bucket{{{labels},le="{le}"}}', "values": f"0+{per_min}x10"}
              for le, per_min in (("0.1", 360), ("0.3", 540), ("+Inf", 600))]
    preset = PRESETS["forescale"].query("latency_buckets", namespace="ml", deployment="chat", pool="a", window="5m")
    grouped = gq.buckets_query("5m")
    rates = {"0.1": 6.0, "0.3": 9.0, "+Inf": 10.0}
    tests = [
        {"expr": preset, "eval_time": "10m",
         "exp_samples": [{"labels": f'{{le="{le}"}}', "value": v} for le, v in rates.items()]},
        {"expr": grouped, "eval_time": "10m",
         "exp_samples": [{"labels": f'{{namespace="ml",deployment="chat",pool="a",le="{le}"}}', "value": v}
                         for le, v in rates.items()]},
    ]
    (tmp_path / "rules.yml").write_text("groups: []\n")
    (tmp_path / "test.yml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": tests}]}, width=1000))
    result = subprocess.run(["promtool", "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert over_target([(float(le), v) for le, v in rates.items()], 0.2, 0.0) == pytest.approx(0.25)
