"""The device memory an emulated pod reports: weights, the KV pool, and what the faults hold."""

from __future__ import annotations

import pytest

from forescale_server.emulated_memory import A100_OPT13B, DEVICES, GIB, SMALL_GPU_ENCODER, device_for


def test_the_opt13b_kv_pool_is_what_vllm_would_leave_after_the_weights():
    # 0.9 x 80 GiB - 26 GB of fp16 weights, in blocks of 16 tokens x 819,200 bytes
    assert A100_OPT13B.kv_blocks() == 3914
    used = A100_OPT13B.used_bytes("fp16")
    assert 0.85 * A100_OPT13B.capacity_bytes < used <= 0.9 * A100_OPT13B.capacity_bytes


@pytest.mark.parametrize("precision,weights", [("fp32", 440e6), ("fp16", 220e6), ("bf16", 220e6), ("int8", 110e6)])
def test_an_encoder_holds_its_weights_at_the_served_precision(precision, weights):
    assert SMALL_GPU_ENCODER.kv_blocks() == 0
    assert SMALL_GPU_ENCODER.used_bytes(precision) == pytest.approx(weights)


# (leaked bytes, pressure, expected used bytes of the fp16 encoder on 16 GiB)
HOLDINGS = [
    (0, 0.0, 220e6),
    (64 << 20, 0.0, 220e6 + (64 << 20)),
    (0, 0.5, 220e6 + 0.5 * (16 * GIB - 220e6)),
    (0, 1.0, 16 * GIB),
    (64 * GIB, 0.0, 16 * GIB),  # never more than the device
    (-5, -1.0, 220e6),          # nonsense holdings read as none
    (0, 7.0, 16 * GIB),
]


@pytest.mark.parametrize("leaked,pressure,used", HOLDINGS)
def test_fault_holdings_add_up_to_at_most_the_device(leaked, pressure, used):
    assert SMALL_GPU_ENCODER.used_bytes("fp16", leaked, pressure) == pytest.approx(used)


def test_every_profile_has_a_device_and_an_unknown_one_reads_as_a_small_gpu_encoder():
    from forescale_profiles.service_time import PROFILES

    assert set(PROFILES) <= set(DEVICES)
    assert device_for("not-a-profile") is SMALL_GPU_ENCODER
