"""Each external preset against its exporter's own exposition format, evaluated by
Prometheus' own engine (`promtool test rules`): the fixture is scraped from the
pods of `chat` (pools a and b) and from a pod of a resource named `chat-a`, which
must never be counted as chat's pool a."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from forescale_predictor.presets import PRESETS

FIXTURES = Path(__file__).parent / "fixtures"
#: pod -> how much traffic it saw (the fixture's counters times this)
PODS = {"chat-a-7c9d8f6b5-x2x9z": 1.0, "chat-b-5f7b9c8d4-k8m2p": 2.0, "chat-a-a-6d8f7c9b4-q4w7r": 100.0}
MINUTES = 10  # counters grow linearly from 0 to the fixture's value over 10 minutes

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian's prometheus) is not installed")


_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _samples(preset: str) -> list[tuple[str, dict[str, str], float, str]]:
    """(name, labels, value, type) as Prometheus' scrape reads them: names exactly as
    written (prometheus_client's parser would add `_total` to counters that lack it)."""
    types, out = {}, []
    for line in (FIXTURES / f"{preset}.prom").read_text().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
            continue
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        assert match, f"{preset}.prom: not an exposition line: {line!r}"
        name, labels, value = match.groups()
        family = next((f for f in types if name == f or name in (f + "_bucket", f + "_sum", f + "_count")), name)
        out.append((name, dict(_LABEL.findall(labels or "")), float(value), types.get(family, "untyped")))
    return out


def _series(preset: str) -> list[dict[str, str]]:
    series = []
    for pod, scale in PODS.items():
        for name, labels, value, kind in _samples(preset):
            labels = {**labels, "namespace": "ml", "pod": pod}  # the target labels a scrape adds
            text = "{" + ",".join(f'{k}="{v}"' for k, v in sorted({"__name__": name, **labels}.items())) + "}"
            if kind == "gauge":
                values = f"{value * scale:g}x{MINUTES}"
            else:
                values = f"0+{value * scale / MINUTES:g}x{MINUTES}"
            series.append({"series": text, "values": values})
    return series


def _total(preset: str, name: str, scale: float, **match: str) -> float:
    """The per-second rate of the fixture's counter `name` (filtered by labels) at `scale`."""
    value = sum(v for n, labels, v, _ in _samples(preset)
                if n == name and all((labels.get(k) != x[1:]) if x.startswith("!") else labels.get(k) == x for k, x in match.items()))
    return value * scale / MINUTES / 60.0


def _expected(preset: str, pool: str | None) -> dict[str, float]:
    scale = sum(s for pod, s in PODS.items() if pod.startswith("chat-a-7") and pool in ("a", None)) + \
        sum(s for pod, s in PODS.items() if pod.startswith("chat-b-") and pool in ("b", None))
    if preset == "vllm":
        ok = _total(preset, "vllm:request_success_total", scale, finished_reason="!abort")
        aborted = _total(preset, "vllm:request_success_total", scale, finished_reason="abort")
        prefills = _total(preset, "vllm:request_prefill_time_seconds_count", scale)
        return {"rate": ok, "error_rate": aborted / (ok + aborted), "queue_depth": 3.0 * scale,
                # the pods' clock: ms per prefill (70 ms) and prompt tokens per prefill (512)
                "service_ms": 1000 * _total(preset, "vllm:request_prefill_time_seconds_sum", scale) / prefills,
                "service_size": _total(preset, "vllm:prompt_tokens_total", scale) / prefills}
    if preset == "triton":
        ok = _total(preset, "nv_inference_request_success", scale)
        failed = _total(preset, "nv_inference_request_failure", scale)
        return {"rate": ok + failed, "error_rate": failed / (ok + failed), "queue_depth": 4.0 * scale,
                "latency": _total(preset, "nv_inference_request_duration_us", scale) / ok / 1000}
    ok = _total(preset, "ts_inference_requests_total", scale)
    return {"rate": ok, "error_rate": 0.0, "latency": _total(preset, "ts_inference_latency_microseconds", scale) / ok / 1000}


@pytest.mark.parametrize("pool", ["a", None])
@pytest.mark.parametrize("preset", ["vllm", "triton", "torchserve"])
def test_preset_reads_its_exporters_exposition(tmp_path, preset, pool):
    expected = _expected(preset, pool)
    queries = PRESETS[preset].queries(namespace="ml", deployment="chat", pool=pool, quantile=0.99, window="5m")
    tests = []
    for kind, value in expected.items():
        # Prometheus sums in its own order: compare within 1e-9 relative, not bit for bit.
        tests.append({"expr": f"abs(({queries[kind]}) - {value!r}) <= bool {max(abs(value), 1.0) * 1e-9!r}",
                      "eval_time": f"{MINUTES}m", "exp_samples": [{"labels": "{}", "value": 1}]})
    for kind in ("latency", "ttft"):
        if kind in queries and kind not in expected:
            # A quantile: one series with a value (the histogram is selected, whatever its shape).
            tests.append({"expr": f"count({queries[kind]})", "eval_time": f"{MINUTES}m", "exp_samples": [{"labels": "{}", "value": 1}]})
    (tmp_path / "rules.yml").write_text("groups: []\n")
    (tmp_path / "test.yml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": _series(preset), "promql_expr_test": tests}],
    }, width=1000))
    result = subprocess.run(["promtool", "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("pool", ["a", None])
def test_vllm_histogram_buckets_come_one_series_per_bound(tmp_path, pool):
    """The operator reads the share of requests over the SLO from these (one series per `le`, +Inf included)."""
    bounds = {labels["le"] for name, labels, _, _ in _samples("vllm") if name == "vllm:e2e_request_latency_seconds_bucket"}
    query = PRESETS["vllm"].query("latency_buckets", namespace="ml", deployment="chat", pool=pool, window="5m")
    assert "+Inf" in bounds
    tests = [{"expr": f"count({query})", "eval_time": f"{MINUTES}m", "exp_samples": [{"labels": "{}", "value": len(bounds)}]}]
    (tmp_path / "rules.yml").write_text("groups: []\n")
    (tmp_path / "test.yml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": _series("vllm"), "promql_expr_test": tests}],
    }, width=1000))
    result = subprocess.run(["promtool", "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_vllm_latency_buckets_start_at_300_ms_as_the_preset_warns():
    buckets = sorted(float(labels["le"]) for name, labels, _, _ in _samples("vllm")
                     if name == "vllm:e2e_request_latency_seconds_bucket" and labels["le"] != "+Inf")
    ttft = sorted(float(labels["le"]) for name, labels, _, _ in _samples("vllm")
                  if name == "vllm:time_to_first_token_seconds_bucket" and labels["le"] != "+Inf")
    assert buckets[0] == 0.3 and ttft[0] < 0.3
    assert "no bucket under 0.3 s" in PRESETS["vllm"].description
