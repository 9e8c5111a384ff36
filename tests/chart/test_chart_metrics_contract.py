"""The dashboard and the alerts work on the series the real exporters produce.

The operator's OperatorMetrics and the model server's ServerMetrics are filled
with a scene, their exposition is turned into promtool input series, and
promtool evaluates every dashboard query (each must return data) and every
alert (each must fire for the resource it is about, with exactly the labels
the alert routing sees). A renamed metric or label on either side fails here.
"""

from __future__ import annotations

import pytest
import yaml
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from chart_tools import helm_template, promtool_path, run
from chart_dashboard_queries import exprs as _exprs
from chart_dashboard_queries import substitute as _substitute

telemetry = pytest.importorskip("forescale_operator.telemetry", reason="the operator's metrics module is not installed")
server_metrics = pytest.importorskip("forescale_server.metrics", reason="the model server's metrics module is not installed")
server_config = pytest.importorskip("forescale_server.config")

CUMULATIVE = ("_bucket", "_count", "_sum", "_total")


def _operator_scene() -> bytes:
    return _telemetry_scene() + _counters_scene()


def _counters_scene() -> bytes:
    """The loop's and handlers' counters (forescale_operator.telemetry's process-wide ones).

    They live in prometheus_client's process-wide registry; copies with the same names and
    labels are filled here, so other tests' counts are left alone.
    """
    registry = CollectorRegistry()
    for counter, results in ((telemetry.TICKS, {"ok": 3, "error": 1}), (telemetry.RECONCILES, {"ok": 1}),
                             (telemetry.STATUS_WRITES, {"pressing": 2, "refresh": 1})):
        family = counter.describe()[0]
        copy = Counter(family.name, family.documentation, counter._labelnames, registry=registry)
        for result, count in results.items():
            copy.labels(result).inc(count)
    return generate_latest(registry)


def _telemetry_scene() -> bytes:
    m = telemetry.OperatorMetrics()
    steps = 12
    # chat: in Emergency since the start, with a full forecast and pools.
    m.record_phase("ml", "chat", "Emergency", since=0.0)
    m.record_forecast("ml", "chat", {0.1: [150.0] * steps, 0.5: [180.0] * steps, 0.9: [260.0] * steps},
                      {0.1: [90.0] * steps, 0.5: [100.0] * steps, 0.9: [130.0] * steps}, peak_latency_ms=260.0, peak_rate=130.0)
    m.record_observed("ml", "chat", latency_ms=410.0, rate_rps=120.0, slo_ms=200.0, available=True)
    m.record_pools("ml", "chat", desired={"a": 6, "b": 3}, ready={"a": 4, "b": 3}, weights={"a": 70, "b": 30})
    m.record_forecast_error("ml", "chat", 12.0)
    m.record_cutback_step("ml", "chat", 0)
    m.record_diagnosis("ml", "chat", "a", {"request-mix": 0.97, "overload": 0.0, "cache-failure": 0.0})
    m.observe_decision_seconds(0.004)
    # mute: its metrics cannot be read.
    m.record_phase("ml", "mute", "Degraded", since=0.0)
    m.record_observed("ml", "mute", latency_ms=None, rate_rps=None, slo_ms=200.0, available=False)
    # err: a forecast far off its SLO.
    m.record_phase("ml", "err", "Stable", since=0.0)
    m.record_observed("ml", "err", latency_ms=120.0, rate_rps=50.0, slo_ms=200.0, available=True)
    m.record_forecast_error("ml", "err", 150.0)
    # cut: a cut-back stuck at step 3.
    m.record_phase("ml", "cut", "CuttingBack", since=0.0)
    m.record_cutback_step("ml", "cut", 3)
    return generate_latest(m.registry)


def _server_scene() -> bytes:
    samples = []
    for pool, precision, seconds in (("a", "fp16", 0.18), ("b", "int8", 0.09)):
        labels = server_config.Labels(deployment="chat", pool=pool)
        # a decoder pod's scrape-time state: KV blocks and fragmentation, device memory
        state = {"precision": precision, "kv_used": 600, "kv_free": 400, "kv_fragmentation": 0.1, "gpu_memory_bytes": 7e10}
        metrics = server_metrics.ServerMetrics(labels, state=lambda s=state: s)
        metrics.observe_stage(precision, "total", seconds)
        metrics.observe_request(precision, 200)
        metrics.observe_tokens(precision, [40, 60], [20])
        metrics.observe_cache(precision, 3, 1)
        samples.append(metrics.exposition())
    return b"".join(samples)


def _input_series() -> list[dict]:
    series = []
    for exposition in (_operator_scene(), _server_scene()):
        for family in text_string_to_metric_families(exposition.decode()):
            for sample in family.samples:
                labels = ", ".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                # Counters and histograms grow each minute, so rate() has something to see.
                values = f"0+{sample.value:g}x60" if sample.name.endswith(CUMULATIVE) else f"{sample.value:g}x60"
                series.append({"series": f"{sample.name}{{{labels}}}", "values": values})
    return series


def _alert_groups() -> list[dict]:
    result = helm_template(set_values={"metrics.prometheusRule.enabled": "true"}, show_only="templates/prometheusrule.yaml")
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["spec"]["groups"]


def test_dashboard_queries_return_data_and_alerts_fire_on_real_exporter_series(tmp_path):
    exprs = _exprs()
    groups = _alert_groups() + [{
        "name": "dashboard",
        "rules": [{"record": f"dashboard:expr_{i}", "expr": _substitute(expr)} for i, (_, expr) in enumerate(exprs)],
    }]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False, width=10_000))
    expr_tests = [
        {"expr": f"count(dashboard:expr_{i}) > bool 0", "eval_time": "40m", "exp_samples": [{"labels": "{}", "value": 1}]}
        for i in range(len(exprs))
    ]
    expected_alerts = [
        ("ForescaleCutbackStuck", "cut", "warning"),
        ("ForescaleEmergencyTooLong", "chat", "critical"),
        ("ForescaleForecastErrorHigh", "err", "warning"),
        ("ForescaleMetricsUnavailable", "mute", "warning"),
    ]
    expr_tests.append({
        "expr": 'ALERTS{alertstate="firing"}',
        "eval_time": "40m",
        "exp_samples": [
            {"labels": f'ALERTS{{alertname="{alert}", alertstate="firing", name="{name}", namespace="ml", severity="{severity}"}}', "value": 1}
            for alert, name, severity in expected_alerts
        ],
    })
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": _input_series(), "promql_expr_test": expr_tests}],
    }
    (tmp_path / "contract_test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False, width=10_000))
    result = run([promtool_path(), "test", "rules", "contract_test.yaml"], cwd=tmp_path, timeout=120)
    titles = "\n".join(f"dashboard:expr_{i} = panel {title!r}" for i, (title, _) in enumerate(exprs))
    assert result.returncode == 0, f"{result.stdout}{result.stderr}\n{titles}"
