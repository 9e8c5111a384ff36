"""A paged KV cache for decoder models.

Keys and values live in one pool of fixed-size blocks, allocated up front. A
sequence takes a block whenever it crosses a block boundary and gives all of
them back when it ends, so memory is proportional to the tokens actually held
(at most one partly filled block per sequence), instead of a maximum-context
slab per sequence. `BlockAllocator` is the bookkeeping (pure Python, also used
by the benchmark and the emulated decoder); `PagedKVCache` adds the tensors.

Fragmentation is the share of the used blocks' slots that hold no token:
healthy serving wastes under one block per running sequence. The
`kv_fragmentation` fault (`leak`) takes blocks that each hold one token and
are never given back, as a leaking scheduler would: usage and fragmentation
both rise, and the diagnosis reads both (`forescale_kv_*` series).
"""

from __future__ import annotations

import math


class KVCacheFull(Exception):
    """No free block is left for a sequence."""


class BlockAllocator:
    """Hands out block ids from a fixed pool."""

    def __init__(self, num_blocks: int, block_size: int):
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"num_blocks and block_size must be >= 1, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._free = list(range(num_blocks - 1, -1, -1))  # pop() hands out low ids first
        self._tables: dict[object, list[int]] = {}
        self._lengths: dict[object, int] = {}
        #: the sequence ids of leaked blocks: fresh objects, equal to no serving sequence id
        self._leaked: list[object] = []

    def blocks_for(self, tokens: int) -> int:
        return math.ceil(tokens / self.block_size)

    def reserve(self, seq: object, tokens: int) -> list[int]:
        """Grow `seq`'s block table to hold `tokens` tokens; returns the table."""
        table = self._tables.setdefault(seq, [])
        need = self.blocks_for(tokens) - len(table)
        if need > len(self._free):
            raise KVCacheFull(f"sequence needs {need} more KV blocks; {len(self._free)} of {self.num_blocks} are free")
        for _ in range(max(need, 0)):
            table.append(self._free.pop())
        self._lengths[seq] = max(tokens, self._lengths.get(seq, 0))
        return table

    def table(self, seq: object) -> list[int]:
        return self._tables.get(seq, [])

    def length(self, seq: object) -> int:
        return self._lengths.get(seq, 0)

    def free(self, seq: object) -> None:
        """Return all of `seq`'s blocks to the pool."""
        self._free.extend(reversed(self._tables.pop(seq, [])))
        self._lengths.pop(seq, None)

    @property
    def used(self) -> int:
        return self.num_blocks - len(self._free)

    @property
    def available(self) -> int:
        return len(self._free)

    @property
    def tokens(self) -> int:
        """Tokens held by every sequence (leaked blocks hold one each)."""
        return sum(self._lengths.values())

    @property
    def fragmentation(self) -> float:
        """Share of the used blocks' token slots holding no token; 0 with no block used."""
        used = self.used
        return 0.0 if used == 0 else 1.0 - self.tokens / (used * self.block_size)

    @property
    def leaked(self) -> int:
        """Blocks taken by `leak` and not yet given back."""
        return len(self._leaked)

    def leak(self, blocks: int) -> int:
        """Take up to `blocks` more free blocks, one token each, never freed by serving
        (`free_leaked` gives them back). Returns the blocks leaked in all."""
        if blocks < 0:
            raise ValueError(f"blocks must be >= 0, got {blocks}")
        for _ in range(min(blocks, len(self._free))):
            seq = object()
            self.reserve(seq, 1)
            self._leaked.append(seq)
        return len(self._leaked)

    def free_leaked(self) -> None:
        """Give every leaked block back."""
        for seq in self._leaked:
            self.free(seq)
        self._leaked.clear()


def leak_kv_blocks(kv: BlockAllocator, share: float) -> dict:
    """Leak `share` (0..1) of the pool's blocks more, as far as free blocks last; 0 frees every leaked block."""
    if share == 0:
        kv.free_leaked()
    else:
        kv.leak(round(share * kv.num_blocks))
    return {"kv_leaked_blocks": kv.leaked, "kv_blocks_used": kv.used, "kv_blocks": kv.num_blocks,
            "kv_fragmentation": round(kv.fragmentation, 4)}


class PagedKVCache:
    """Block-pooled key/value tensors: `[layers, blocks, kv_heads, block_size, head_dim]` each."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int, num_blocks: int, block_size: int = 16, dtype=None, device="cpu"):
        import torch

        self.allocator = BlockAllocator(num_blocks, block_size)
        shape = (layers, num_blocks, kv_heads, block_size, head_dim)
        self.keys = torch.zeros(shape, dtype=dtype or torch.float32, device=device)
        self.values = torch.zeros(shape, dtype=dtype or torch.float32, device=device)
        self.layers = layers

    @property
    def block_size(self) -> int:
        return self.allocator.block_size

    def write(self, seq: object, layer_kv: list[tuple], start: int) -> None:
        """Store positions `start..start+t` of every layer; each k/v is `[kv_heads, t, head_dim]`."""
        t = layer_kv[0][0].shape[1]
        table = self.allocator.reserve(seq, start + t)
        bs = self.block_size
        pos = start
        while pos < start + t:
            block, offset = table[pos // bs], pos % bs
            n = min(bs - offset, start + t - pos)
            src = slice(pos - start, pos - start + n)
            for layer, (k, v) in enumerate(layer_kv):
                self.keys[layer, block, :, offset:offset + n] = k[:, src]
                self.values[layer, block, :, offset:offset + n] = v[:, src]
            pos += n

    def read(self, seq: object, dtype=None) -> list[tuple]:
        """Every layer's `(k, v)` for `seq` as `[1, kv_heads, length, head_dim]`."""
        import torch

        length = self.allocator.length(seq)
        table = torch.as_tensor(self.allocator.table(seq), dtype=torch.long, device=self.keys.device)
        out = []
        for layer in range(self.layers):
            k = self.keys[layer, table].transpose(0, 1).reshape(self.keys.shape[2], -1, self.keys.shape[4])[:, :length]
            v = self.values[layer, table].transpose(0, 1).reshape(self.values.shape[2], -1, self.values.shape[4])[:, :length]
            out.append((k.unsqueeze(0).to(dtype or k.dtype), v.unsqueeze(0).to(dtype or v.dtype)))
        return out

    def free(self, seq: object) -> None:
        self.allocator.free(seq)
