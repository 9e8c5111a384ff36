"""The pod models against the shared service-time profiles."""

from __future__ import annotations

import math

import pytest

from forescale_profiles.service_time import A100_OPT13B, T4_BERT_BASE, encoder_latency_ms
from forescale_sim.encoder_fluid import encoder_tick
from forescale_sim.llm_pod import LlmPod


def test_lone_request_ttft_is_its_prefill() -> None:
    pod = LlmPod(A100_OPT13B)
    ttft = pod.serve(0, 10.0, 512, 100, "fp16", 1.0)
    # PEERS.md §6: a 512-token prefill on OPT-13B is ~66 ms
    assert ttft == pytest.approx(A100_OPT13B.prefill_ms("fp16", 512) / 1000.0)
    assert 0.060 < ttft < 0.070


@pytest.mark.parametrize("precision,slowdown,ratio", [("int8", 1.0, 0.6), ("fp16", 2.5, 2.5), ("int8", 2.5, 1.5)])
def test_precision_and_slowdown_scale_prefill(precision, slowdown, ratio) -> None:
    base = LlmPod(A100_OPT13B).serve(0, 0.0, 1000, 10, "fp16", 1.0)
    other = LlmPod(A100_OPT13B).serve(0, 0.0, 1000, 10, precision, slowdown)
    assert other == pytest.approx(base * ratio)


def test_prompts_are_truncated_to_the_context_window() -> None:
    long = LlmPod(A100_OPT13B).serve(0, 0.0, 50_000, 10, "fp16", 1.0)
    assert long == pytest.approx(A100_OPT13B.prefill_ms("fp16", A100_OPT13B.max_context_tokens) / 1000.0)


def test_second_prompt_waits_for_the_first_prefill() -> None:
    pod = LlmPod(A100_OPT13B)
    first = pod.serve(0, 0.0, 2048, 10, "fp16", 1.0)
    second = pod.serve(1, 0.0, 2048, 10, "fp16", 1.0)
    assert second == pytest.approx(2 * first)


def test_concurrency_limit_then_timeout_rejects() -> None:
    pod = LlmPod(A100_OPT13B, timeout_s=15.0)
    results = [pod.serve(i, 0.0, 16, 2000, "fp16", 1.0) for i in range(A100_OPT13B.max_batch + 1)]
    # the first max_batch are admitted at once; the next waits for a long decode and is rejected
    assert all(r is not None for r in results[:-1])
    assert results[-1] is None
    assert pod.outstanding(0.0) == A100_OPT13B.max_batch


def test_unfinished_lists_running_requests() -> None:
    pod = LlmPod(A100_OPT13B)
    pod.serve(7, 0.0, 100, 500, "fp16", 1.0)
    assert pod.unfinished(0.5) == [7]
    assert pod.unfinished(1e6) == []


def test_encoder_tick_matches_the_closed_form_below_saturation() -> None:
    res = encoder_tick(1000.0, 4, 0.0, T4_BERT_BASE, "fp16", 1.0, 200.0, 0.99)
    assert res.served == 1000.0 and res.rejected == 0.0 and res.backlog == 0.0
    assert res.latency_ms == pytest.approx(encoder_latency_ms(250.0, T4_BERT_BASE, "fp16", 0.99))
    assert res.over_slo < 1.0


def test_encoder_tick_overload_builds_a_backlog_then_rejects() -> None:
    cap = T4_BERT_BASE.max_rps("fp16")
    res = encoder_tick(3 * cap, 1, 0.0, T4_BERT_BASE, "fp16", 1.0, 200.0, 0.99)
    assert res.served == pytest.approx(cap) and res.backlog == pytest.approx(2 * cap)
    flooded = encoder_tick(30 * cap, 1, 0.0, T4_BERT_BASE, "fp16", 1.0, 200.0, 0.99, timeout_s=15.0)
    assert flooded.rejected == pytest.approx(30 * cap - cap - 15 * cap)
    assert flooded.over_slo >= flooded.rejected


def test_encoder_tick_without_ready_pods_rejects_everything() -> None:
    res = encoder_tick(50.0, 0, 10.0, T4_BERT_BASE, "fp16", 1.0, 200.0, 0.99)
    assert (res.rejected, res.over_slo, res.backlog) == (60.0, 60.0, 0.0)
    assert math.isinf(res.latency_ms)


@pytest.mark.parametrize("rate, precision, slowdown", [
    (20.0, "fp16", 1.0), (200.0, "fp16", 1.0), (200.0, "int8", 1.0), (200.0, "fp16", 2.5), (5000.0, "fp16", 1.0)])
def test_an_encoder_tick_reports_its_batches_on_the_profiles_line(rate, precision, slowdown) -> None:
    """The pods' clock reads items per batch and ms per batch: on the profile's line, times the slowdown."""
    res = encoder_tick(rate, 2, 0.0, T4_BERT_BASE, precision, slowdown, 200.0, 0.99)
    assert 1.0 <= res.batch_items <= T4_BERT_BASE.max_batch
    expected = (T4_BERT_BASE.base_ms + T4_BERT_BASE.per_item_ms * res.batch_items) * T4_BERT_BASE.factor(precision)
    assert res.batch_ms == pytest.approx(expected * slowdown)


@pytest.mark.parametrize("slowdown", [1.0, 2.5])
def test_an_llm_pod_reports_its_last_prefill(slowdown) -> None:
    pod = LlmPod(A100_OPT13B)
    pod.serve(0, 0.0, 50_000, 10, "fp16", slowdown)  # truncated to the context window
    assert pod.last_prompt_tokens == A100_OPT13B.max_context_tokens
    assert pod.last_prefill_ms == pytest.approx(A100_OPT13B.prefill_ms("fp16", A100_OPT13B.max_context_tokens, slowdown))
