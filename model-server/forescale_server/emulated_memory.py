"""The device memory an emulated pod reports (`--emulate-gpu`): `forescale_gpu_memory_bytes`.

A real server reports `torch.cuda.memory_allocated`: the weights, plus the
KV-cache pool that decoders allocate whole at start-up, so it is flat while
the server is healthy. The emulated server reports the same shape from the
figures below, plus what the faults hold on the device:
- `leak_mb`: leaked memory counts as device memory in emulation (on a real
  server it is host memory, and only `forescale_fault_leaked_bytes` shows it);
- `memory_pressure`: its share of the room left on the device is held, so
  the device reads nearly full while allocations are being refused.

Every figure is an assumption of the emulation, written with where it comes
from; none is measured on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

#: bytes per weight, relative to fp16: the served precision's weights
WEIGHT_BYTES_PER_PARAM = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0}

GIB = 1 << 30


@dataclass(frozen=True)
class DeviceMemory:
    """One emulated device: its capacity, the weights it holds, and (decoders) its KV pool."""

    #: the device's memory
    capacity_bytes: int
    #: parameters of the served model
    params: float
    #: bytes of keys and values per token (0 for an encoder: no KV cache)
    kv_bytes_per_token: int = 0
    #: tokens per KV block (vLLM's default block size)
    block_size: int = 16
    #: share of the device the server may use (vLLM's default gpu_memory_utilization)
    utilisation: float = 0.9

    def weights_bytes(self, precision: str) -> int:
        return int(self.params * WEIGHT_BYTES_PER_PARAM[precision])

    def kv_blocks(self) -> int:
        """Blocks in the KV pool: what is left of the usable memory after fp16 weights, as vLLM sizes it."""
        if not self.kv_bytes_per_token:
            return 0
        room = self.utilisation * self.capacity_bytes - self.weights_bytes("fp16")
        return max(1, int(room // (self.kv_bytes_per_token * self.block_size)))

    def used_bytes(self, precision: str, leaked_bytes: int = 0, pressure: float = 0.0) -> int:
        """What the server holds on the device: weights, the whole KV pool, leaked memory, and
        `pressure` (0..1) of the room left, held by the memory-pressure fault."""
        used = self.weights_bytes(precision) + self.kv_blocks() * self.kv_bytes_per_token * self.block_size + max(0, leaked_bytes)
        used = min(used, self.capacity_bytes)
        return int(used + min(max(pressure, 0.0), 1.0) * (self.capacity_bytes - used))


#: BERT-base (110 M parameters, the profiles' encoder fits) on a 16 GiB device: the demo profiles
#: describe "a heavy encoder on a small GPU" (T4 class)
SMALL_GPU_ENCODER = DeviceMemory(capacity_bytes=16 * GIB, params=110e6)
#: the same encoder on an A100-40GB (NVIDIA's BERT demo, the a100-bert-base fit)
A100_ENCODER = DeviceMemory(capacity_bytes=40 * GIB, params=110e6)
#: OPT-13B on an A100-80GB (DistServe's fit): 13 B parameters; 40 layers x 5120 hidden, keys and
#: values in fp16 = 2 x 40 x 5120 x 2 bytes per token
A100_OPT13B = DeviceMemory(capacity_bytes=80 * GIB, params=13e9, kv_bytes_per_token=2 * 40 * 5120 * 2)

#: profile name -> its device; a profile not listed is read as a small-GPU encoder
DEVICES: dict[str, DeviceMemory] = {
    "a100-bert-base": A100_ENCODER,
    "t4-bert-base": SMALL_GPU_ENCODER,
    "demo": SMALL_GPU_ENCODER,
    "demo-heavy": SMALL_GPU_ENCODER,
    "a100-opt-13b": A100_OPT13B,
}


def device_for(profile_name: str) -> DeviceMemory:
    return DEVICES.get(profile_name, SMALL_GPU_ENCODER)
