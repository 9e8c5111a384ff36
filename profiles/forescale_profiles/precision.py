"""The precisions a pool can run at, and how fast each one is relative to fp16.

One copy for everyone: the operator's spec parsing and decision engine, the
model server (its `--precision` and admin switch, the emulated-GPU mode), the
simulator and `forescale stress`.

Pure Python: no numpy, no torch.
"""

from __future__ import annotations

from typing import Mapping

PRECISIONS = ("fp32", "fp16", "bf16", "int8")

# INT8 / FP16 on A100, BERT-base seq 128 (NVIDIA's TensorRT BERT benchmark, demo/BERT/README.md):
# 0.58/0.67 at b=1, 0.95/1.38 at b=8, 2.27/4.10 at b=32, 8.18/16.1 at b=128.
# At the batch sizes a loaded pod runs (8-32) int8 takes 0.55-0.69 of fp16: 0.6.
INT8_OVER_FP16 = 0.6
# No fp32 row is published there; tensor-core fp16 is commonly ~2x fp32 (TF32
# off). This is an assumption, labelled as such in each profile.
FP32_OVER_FP16 = 2.0

#: service time relative to fp16 (int8 < 1 is faster); every profile's precision factors
SERVICE_TIME_FACTOR: Mapping[str, float] = {"fp32": FP32_OVER_FP16, "fp16": 1.0, "bf16": 1.0, "int8": INT8_OVER_FP16}

#: what the factors above assume, carried into each profile's `assumptions`
FACTOR_ASSUMPTIONS = (
    "fp32 = 2.0 x fp16 service time (assumption: the TensorRT BERT benchmark publishes no fp32 row)",
    "bf16 = fp16 (assumption)",
    "int8 = 0.6 x fp16, from the TensorRT BERT-base A100 rows at batch 8-32",
)

#: relative throughput per precision (fp16 = 1), the inverse of the service-time
#: factor: fp32 0.5, fp16 1, bf16 1, int8 1/0.6. The decision engine's default.
PRECISION_SPEED: Mapping[str, float] = {p: 1.0 / f for p, f in SERVICE_TIME_FACTOR.items()}
