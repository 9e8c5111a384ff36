"""Evidence for a healthy, unchanged pool (the control) and for each of the seven causes.

Each cause's evidence is the control with what that cause does to the numbers,
including the side effects that make other rules fire too (a rollout's cold
caches, a restarted pod's slow start, longer inputs' extra compute), so the
ranking is tested on realistic confounders rather than clean single signals.
"""

from __future__ import annotations

from dataclasses import replace

from forescale_operator.diagnosis import Evidence

GIB = 2**30

CONTROL = Evidence(
    rate_rps=(104.0, 100.0),
    rate_per_pod_rps=(26.0, 25.0),
    queue_depth=(2.2, 2.0),
    batch_size_mean=(8.1, 8.0),
    error_ratio=(0.0, 0.0),
    queue_wait_ms=(5.2, 5.0),
    preprocess_ms=(1.0, 1.0),
    compute_ms=(40.5, 40.0),
    postprocess_ms=(1.0, 1.0),
    compute_per_item_ms=(5.0, 5.0),
    pod_p99_ms={"chat-a-1": 120.0, "chat-a-2": 125.0, "chat-a-3": 118.0, "chat-a-4": 122.0},
    pod_compute_per_item_ms={"chat-a-1": 5.0, "chat-a-2": 5.1, "chat-a-3": 4.9, "chat-a-4": 5.0},
    model_health=1.0,
    result_cache_hit_ratio=(0.79, 0.80),
    kv_used_ratio=(0.62, 0.60),
    kv_fragmentation_ratio=(0.08, 0.08),
    kv_hit_ratio=(0.80, 0.82),
    gpu_memory_bytes=(10.0 * GIB, 10.0 * GIB),
    gpu_utilisation_ratio=(0.61, 0.60),
    oom_killed_containers=0,
    restarted_containers=0,
    oom_warnings=0.0,
    revision_changed=False,
    revision_age_seconds=3 * 86400.0,
    input_tokens_mean=(121.0, 120.0),
    output_tokens_mean=(50.0, 50.0),
)

CAUSE_EVIDENCE: dict[str, Evidence] = {
    # twice the traffic: queues pile up, batches fill, each item costs no more
    "overload": replace(
        CONTROL, rate_rps=(210.0, 100.0), rate_per_pod_rps=(52.5, 25.0), queue_depth=(40.0, 2.0), batch_size_mean=(24.0, 8.0),
        queue_wait_ms=(80.0, 5.0), compute_ms=(90.0, 40.0), compute_per_item_ms=(3.75, 5.0),
        pod_p99_ms={"chat-a-1": 410.0, "chat-a-2": 420.0, "chat-a-3": 400.0, "chat-a-4": 415.0},
        kv_used_ratio=(0.90, 0.60), gpu_utilisation_ratio=(0.98, 0.60), result_cache_hit_ratio=(0.74, 0.80)),
    # every pod 2.5x slower (the slowdown fault): same traffic, each item costs more
    "degraded-pods": replace(
        CONTROL, queue_depth=(30.0, 2.0), batch_size_mean=(12.0, 8.0), queue_wait_ms=(60.0, 5.0),
        compute_ms=(150.0, 40.0), compute_per_item_ms=(12.5, 5.0),
        pod_p99_ms={"chat-a-1": 300.0, "chat-a-2": 310.0, "chat-a-3": 295.0, "chat-a-4": 305.0},
        pod_compute_per_item_ms={"chat-a-1": 12.5, "chat-a-2": 12.4, "chat-a-3": 12.6, "chat-a-4": 12.5},
        model_health=2.4, gpu_utilisation_ratio=(0.95, 0.60)),
    # one of four pods 5x slower: the pool's per-item compute rises by less than the degraded threshold; its own
    # device time per item is the outlier, and the pool's latency is over the model's
    "bad-pod": replace(
        CONTROL, compute_ms=(55.0, 40.0), compute_per_item_ms=(6.9, 5.0),
        pod_p99_ms={"chat-a-1": 120.0, "chat-a-2": 125.0, "chat-a-3": 600.0, "chat-a-4": 122.0},
        pod_compute_per_item_ms={"chat-a-1": 5.0, "chat-a-2": 5.1, "chat-a-3": 25.0, "chat-a-4": 5.0}, model_health=1.6),
    # the example: KV cache full and fragmented, result cache mostly missing
    "cache-failure": replace(
        CONTROL, result_cache_hit_ratio=(0.31, 0.82), kv_used_ratio=(0.97, 0.60),
        kv_fragmentation_ratio=(0.41, 0.08), queue_depth=(12.0, 2.0), batch_size_mean=(16.0, 8.0),
        compute_ms=(72.0, 40.0), compute_per_item_ms=(4.5, 5.0), model_health=1.8),
    # a leak: one container OOMKilled and restarted cold, slow and missing its cache (its device no slower)
    "memory-pressure": replace(
        CONTROL, oom_killed_containers=1, restarted_containers=1, gpu_memory_bytes=(13.0 * GIB, 10.0 * GIB),
        result_cache_hit_ratio=(0.60, 0.80),
        pod_p99_ms={"chat-a-1": 120.0, "chat-a-2": 125.0, "chat-a-3": 450.0, "chat-a-4": 122.0}),
    # a new revision 4 minutes ago: cold caches and a slower build
    "rollout": replace(
        CONTROL, revision_changed=True, revision_age_seconds=240.0, result_cache_hit_ratio=(0.45, 0.80),
        compute_ms=(64.0, 40.0), compute_per_item_ms=(8.0, 5.0), model_health=1.6),
    # inputs 2.5x longer: each item costs more and the cache sees new inputs
    "request-mix": replace(
        CONTROL, input_tokens_mean=(300.0, 120.0), compute_ms=(88.0, 40.0), compute_per_item_ms=(11.0, 5.0),
        result_cache_hit_ratio=(0.50, 0.80), queue_depth=(14.0, 2.0), model_health=2.2),
}
