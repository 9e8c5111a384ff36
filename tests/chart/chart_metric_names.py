"""The metric names the dashboard and alerts may use: the operator's
(forescale_operator.telemetry) and the
model server's (DESIGN.md §4)."""

import re

OPERATOR_METRICS = {
    "forescale_operator_phase",
    "forescale_operator_forecast_latency_ms",
    "forescale_operator_forecast_peak_latency_ms",
    "forescale_operator_forecast_peak_rate_rps",
    "forescale_operator_forecast_rate_rps",
    "forescale_operator_observed_latency_ms",
    "forescale_operator_slo_target_ms",
    "forescale_operator_observed_rate_rps",
    "forescale_operator_desired_replicas",
    "forescale_operator_ready_replicas",
    "forescale_operator_weight_percent",
    "forescale_operator_decision_duration_seconds_bucket",
    "forescale_operator_decision_duration_seconds_sum",
    "forescale_operator_decision_duration_seconds_count",
    "forescale_operator_forecast_error_ms",
    "forescale_operator_metrics_available",
    "forescale_operator_cutback_step",
    "forescale_operator_phase_since_seconds",
    # forescale_operator.telemetry's process-wide counters: the loop's and handlers' runs
    "forescale_operator_ticks_total",
    "forescale_operator_reconciles_total",
    "forescale_operator_status_writes_total",
    # the root-cause diagnosis's scores (telemetry.record_diagnosis)
    "forescale_operator_root_cause_suspected",
}
SERVER_METRICS = {
    "forescale_request_duration_seconds_bucket",
    "forescale_request_duration_seconds_sum",
    "forescale_request_duration_seconds_count",
    "forescale_requests_total",
    "forescale_quality_agreement",
    # the evidence the diagnosis reads (docs/diagnosis.md)
    "forescale_input_tokens_sum",
    "forescale_input_tokens_count",
    "forescale_gpu_memory_bytes",
    "forescale_kv_blocks_used",
    "forescale_kv_blocks_free",
    "forescale_kv_fragmentation_ratio",
    "forescale_oom_warnings_total",
    "forescale_cache_hits_total",
    "forescale_cache_misses_total",
}
KNOWN_METRICS = OPERATOR_METRICS | SERVER_METRICS

_NAME = re.compile(r"\bforescale_[a-z0-9_]+")


def metric_names(expr: str) -> set[str]:
    """The forescale_* metric names an expression reads."""
    return set(_NAME.findall(expr))
