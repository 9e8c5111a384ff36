"""The diagnosis campaign's KV-cache failure (`--kv-cache`): the injector leaks a decoder pod's KV blocks through
the fault API until the number it drew is left free, also when a running batch held blocks at the injection."""

from __future__ import annotations

import types

import pytest

from bench._diagnosis_campaign import KV_LOAD, Incident, Injector, Load
from forescale_server.kv_cache import BlockAllocator, leak_kv_blocks


class FakePod:
    """`/admin/faults` of one decoder pod: the server's own leak over a real allocator; `held` blocks belong to a
    running batch at the first call and come free after it, as a batch ends between two admin calls."""

    def __init__(self, blocks: int, held_blocks: int) -> None:
        self.kv = BlockAllocator(blocks, 16)
        self.kv.reserve("running", 16 * held_blocks)
        self.calls: list[float] = []

    def admin(self, url: str, path: str, body: dict) -> dict:
        assert path == "/admin/faults" and set(body) == {"kv_fragmentation"}
        self.calls.append(body["kv_fragmentation"])
        reply = leak_kv_blocks(self.kv, body["kv_fragmentation"])
        self.kv.free("running")
        return {"faults": reply, "cache_entries": 0}


@pytest.mark.parametrize("blocks, held, left", [
    (3914, 0, 2),      # idle at the injection
    (3914, 8, 2),      # a batch of four 2-block sequences running
    (3914, 40, 3),
    (100, 99, 1),      # nearly everything held by the batch
    (10, 0, 12),       # asked to leave more than the pool has: nothing leaked
])
def test_leaks_until_the_drawn_blocks_are_left(blocks, held, left):
    pod = FakePod(blocks, held)
    lane = types.SimpleNamespace(stack=types.SimpleNamespace(admin=pod.admin), load=KV_LOAD)
    injector = Injector(Incident(0, "cache-failure", 0), lane)
    injector.kv_left = left
    leaked = injector._leak_kv("http://pod")
    assert pod.calls[0] == 0.0                         # first the pool's size; nothing given back, nothing leaked
    assert leaked == pod.kv.leaked == max(0, blocks - left)
    assert pod.kv.available == min(left, blocks)
    assert pod.kv.fragmentation > 0.9 or leaked == 0   # each leaked block holds one token of 16


def test_the_kv_load_serves_a_decoder_and_the_default_an_encoder():
    assert KV_LOAD.decoder and KV_LOAD.profile == "a100-opt-13b" and KV_LOAD.max_tokens
    assert not Load().decoder and Load().profile == "demo-heavy"
