"""The paged KV cache: block bookkeeping and the tensor store."""

from __future__ import annotations

import pytest
import torch

from forescale_server.kv_cache import BlockAllocator, KVCacheFull, PagedKVCache, leak_kv_blocks


@pytest.mark.parametrize("block_size,tokens,blocks", [(16, 1, 1), (16, 16, 1), (16, 17, 2), (4, 33, 9)])
def test_blocks_grow_with_the_sequence(block_size, tokens, blocks):
    alloc = BlockAllocator(num_blocks=64, block_size=block_size)
    for t in range(1, tokens + 1):  # one token at a time, as decoding does
        alloc.reserve("s", t)
    assert len(alloc.table("s")) == blocks
    assert alloc.used == blocks and alloc.available == 64 - blocks


def test_free_returns_every_block_and_they_are_reused():
    alloc = BlockAllocator(num_blocks=8, block_size=4)
    first = list(alloc.reserve("a", 10))
    alloc.reserve("b", 4)
    alloc.free("a")
    assert alloc.used == 1
    assert sorted(alloc.reserve("c", 12)) == sorted(first)  # no fragmentation: any free block serves


def test_a_full_pool_raises_and_keeps_its_state():
    alloc = BlockAllocator(num_blocks=2, block_size=4)
    alloc.reserve("a", 8)
    with pytest.raises(KVCacheFull, match="0 of 2 are free"):
        alloc.reserve("b", 1)
    assert alloc.used == 2


# (sequences' token counts, block size, blocks used, fragmentation)
FRAGMENTATION = [
    ([], 16, 0, 0.0),              # nothing held: no waste
    ([16], 16, 1, 0.0),            # one full block
    ([17], 16, 2, 15 / 32),        # a second block holding one token
    ([1, 1, 1, 1], 16, 4, 15 / 16),  # four one-token sequences, the leak's pattern
    ([10, 6], 4, 5, 4 / 20),       # 3 + 2 blocks hold 16 of 20 slots
]


@pytest.mark.parametrize("lengths,block_size,used,fragmentation", FRAGMENTATION)
def test_fragmentation_is_the_share_of_used_slots_holding_no_token(lengths, block_size, used, fragmentation):
    alloc = BlockAllocator(num_blocks=64, block_size=block_size)
    for i, n in enumerate(lengths):
        alloc.reserve(i, n)
    assert alloc.used == used and alloc.tokens == sum(lengths)
    assert alloc.fragmentation == pytest.approx(fragmentation)


@pytest.mark.parametrize("free_before,share,leaked", [(100, 0.25, 25), (100, 0.5, 50), (10, 0.5, 10), (100, 0.0, 0)],
                         ids=["quarter", "half", "as-far-as-free-blocks-last", "zero-frees"])
def test_leaked_blocks_hold_one_token_each_until_given_back(free_before, share, leaked):
    alloc = BlockAllocator(num_blocks=100, block_size=16)
    alloc.reserve("busy", 16 * (100 - free_before))
    result = leak_kv_blocks(alloc, share)
    assert result["kv_leaked_blocks"] == alloc.leaked == leaked
    assert alloc.used == 100 - free_before + leaked
    serving = 16 * (100 - free_before)
    assert alloc.tokens == serving + leaked
    alloc.free("busy")
    assert alloc.used == leaked, "serving frees its own blocks only"
    leak_kv_blocks(alloc, 0)
    assert alloc.used == 0 and alloc.leaked == 0


def test_a_negative_leak_is_refused():
    with pytest.raises(ValueError, match="blocks must be >= 0"):
        BlockAllocator(8, 4).leak(-1)


def test_bad_pool_shape_is_rejected():
    with pytest.raises(ValueError):
        BlockAllocator(0, 16)


def test_tensor_store_round_trips_across_block_boundaries():
    kv = PagedKVCache(layers=2, kv_heads=2, head_dim=3, num_blocks=16, block_size=4)
    torch.manual_seed(0)
    full = [(torch.randn(2, 11, 3), torch.randn(2, 11, 3)) for _ in range(2)]
    kv.write("s", [(k[:, :6], v[:, :6]) for k, v in full], start=0)  # a prefill of 6
    for pos in range(6, 11):  # then one token at a time
        kv.write("s", [(k[:, pos:pos + 1], v[:, pos:pos + 1]) for k, v in full], start=pos)
    out = kv.read("s")
    for (k, v), (rk, rv) in zip(full, out):
        assert torch.equal(rk[0], k) and torch.equal(rv[0], v)
    assert kv.allocator.used == 3
    kv.free("s")
    assert kv.allocator.used == 0
